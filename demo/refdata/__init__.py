"""The reference corpus's registry sample: verse, classical prose and technical documentation cut
from chinese-poetry, debian-reference-zh-cn and manpages-zh (``extract.py``; licences in
``data/LICENSES.md``), read by ``demo.reference``."""
