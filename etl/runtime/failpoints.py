"""Named crash points for testing recovery: ``failpoint("refresh:built")`` kills the process
with SIGKILL when the environment variable ZHCORPUS_FAILPOINT names that point (as a power cut or
an OOM kill would: no cleanup handler runs). Unset, it costs one dictionary lookup."""

from __future__ import annotations

import logging
import os
import signal

ENV = "ZHCORPUS_FAILPOINT"
log = logging.getLogger("zhcorpus")


def failpoint(name: str) -> None:
    if os.environ.get(ENV) == name:
        log.warning("failpoint %s: SIGKILL", name)
        logging.shutdown()
        os.kill(os.getpid(), signal.SIGKILL)
