"""The instruments of the cluster tests, on small processes of our own: the socket inventory tells
loopback from wildcard and address binds, ``Sessions.stop`` ends a whole session (children too)
and nothing else, and the table of allowed binds (docs/clusters.md) parses into (process, kind) pairs."""

import os
import subprocess
import sys
import time

from tests.cluster_fixture import Sessions, alive, listeners, readme_binds

SERVER = """
import os, socket, time
socks = []
for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    s = socket.socket(family)
    s.bind((addr, 0))
    s.listen()
    socks.append(s)
if os.fork() == 0:  # a child in the same session, as executors and Ray workers are
    for s in socks:
        s.close()
    time.sleep(120)
    os._exit(0)
print("ready", flush=True)
time.sleep(120)
"""


def test_inventory_and_stop(tmp_path):
    sessions = Sessions()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        server = sessions.popen([sys.executable, "-c", SERVER], dict(os.environ), tmp_path / "server.log")
        deadline = time.monotonic() + 30
        while "ready" not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = sessions.pids()
        assert server.pid in pids and len(pids) == 2  # the server and its child
        found = listeners(pids)
        assert sorted(s.kind for s in found) == ["loopback", "wildcard", "wildcard"]
        assert {s.pid for s in found} == {server.pid}
        sessions.stop(grace=5)
        assert not alive(pids)
        assert bystander.poll() is None  # another session is left alone
    finally:
        bystander.kill()
        bystander.wait()


def test_readme_table_parses_into_process_and_kind(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "text\n\n| Ray process | port | binds to | who |\n|---|---|---|---|\n"
        "| `gcs_server` | GCS | all interfaces | token |\n"
        "| `dashboard agent` | HTTP | the node's address | token |\n"
        "| `raylet` | x | all interfaces and the node's address | token |\n\nafter | not a row |\n"
    )
    assert readme_binds(readme) == {
        ("gcs_server", "wildcard"),
        ("dashboard agent", "address"),
        ("raylet", "wildcard"),
        ("raylet", "address"),
    }
