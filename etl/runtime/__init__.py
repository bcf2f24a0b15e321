"""What every stage runs on: ``spark`` (the session), ``ship`` (directories to executors),
``publish`` (atomic publishing of directories, on any Hadoop file system), ``locks``,
``failpoints``, ``sizing`` (read tasks and output files), ``progress`` (driver progress lines) and
``paths`` (the user's paths, checked before any work). Imports no other ``etl`` package."""
