"""Helpers for the cluster tests (tests/test_cluster.py): processes started in sessions of their
own and stopped by pid, listening sockets of those processes read from /proc, free ports, and the
docs/clusters.md's table of the binds that may leave loopback.

When a test fails, tests/conftest.py adds the last lines of the daemons' logs to its report: every
log under the roots a test or fixture opened with ``watched`` (Spark's daemon and executor logs,
Ray's session logs), read while they still exist.

Every daemon a test starts runs in a new session (``setsid``); everything it forks (executors,
Ray workers, agents) stays in that session unless it calls ``setsid`` itself, which none of them
does. ``Sessions.stop`` sends SIGTERM to every pid of those sessions, waits, then SIGKILLs what is
left, so a test never touches processes it did not start (no ``ray stop``, no ``pkill`` by name).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
# free_port's ports: above Ray's worker ports (10002-19999, docs/clusters.md), below the ephemeral range.
HANDOUT = (20000, 32767)
HANDED_OUT: set[int] = set()  # ports free_port gave out in this process
SIOCGIFADDR = 0x8915  # <linux/sockios.h>: an interface's IPv4 address


def short_dir() -> Path:
    """A new directory with a short path: Ray's Unix sockets live under --temp-dir and an AF_UNIX
    path may not exceed 107 bytes (pytest's tmp_path is too deep). The caller removes it."""
    return Path(tempfile.mkdtemp(prefix="zhc-", dir="/tmp"))


def free_port() -> int:
    """A TCP port free on every interface now, for a daemon to bind later, never the same twice in
    this process. Taken below the kernel's ephemeral range (``ephemeral_ports``) when there is room:
    a port from that range may be given to any bind(0) or outgoing connection on the machine (Ray
    makes dozens of each while a node starts) before the daemon binds it."""
    low, high = HANDOUT[0], min(HANDOUT[1], ephemeral_ports()[0] - 1)
    for _ in range(200 if high - low >= 1000 else 0):
        port = random.randint(low, high)
        if port not in HANDED_OUT and _bindable(port):
            HANDED_OUT.add(port)
            return port
    while True:  # no room below the ephemeral range: the kernel's choice
        with socket.socket() as s:
            s.bind(("", 0))
            if (port := s.getsockname()[1]) not in HANDED_OUT:
                HANDED_OUT.add(port)
                return port


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for bind(0) and outgoing connections (Linux default 32768-60999)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def lan_interface() -> str | None:
    """A network interface of this host with an IPv4 address beyond loopback, if any. Tests hand it
    to jobs as GLOO_SOCKET_IFNAME: where gloo listens on a host whose name resolves to its LAN
    address (this one's resolves to 127.0.0.1), which a loopback-only Ray must override."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                reply = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            if not socket.inet_ntoa(reply[20:24]).startswith("127."):
                return name
    return None


def session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[3])  # after "(comm)": state ppid pgrp session


def session_pids(sid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and session_of(int(entry.name)) == sid:
            pids.append(int(entry.name))
    return pids


def alive(pids: list[int]) -> list[int]:
    """The pids that still run (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


class Sessions:
    """The sessions (and so the processes) this test module started."""

    def __init__(self):
        self.sids: list[int] = []
        self.children: list[subprocess.Popen] = []
        atexit.register(self.stop, 0)  # also when pytest dies between tests

    def popen(self, argv: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT) -> subprocess.Popen:
        """Start ``argv`` as the leader of a new session, output to ``log``."""
        with open(log, "ab") as out:
            p = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.children.append(p)
        self.sids.append(p.pid)
        return p

    def adopt(self, sid: int) -> None:
        """A session started by a script (deploy/ray-node.sh writes its id to TEMP_DIR/node.sid)."""
        self.sids.append(sid)

    def pids(self) -> list[int]:
        """Every process of the sessions, and the leaders we started ourselves."""
        members = {pid for sid in self.sids for pid in session_pids(sid)}
        return sorted(members | {p.pid for p in self.children if p.poll() is None})

    def stop(self, grace: float = 10.0) -> list[int]:
        """SIGTERM every process of every session, SIGKILL what is left after ``grace`` seconds;
        returns the pids that had to be killed. The sessions are listed again at every step: a
        process may start while they stop (a raylet or a Spark worker replacing a worker it just
        lost), and one that was never signalled would outlive the teardown."""
        termed: set[int] = set()
        deadline = time.monotonic() + grace
        while (pids := alive(self.pids())) and time.monotonic() < deadline:
            for pid in set(pids) - termed:
                _signal(pid, signal.SIGTERM)
                termed.add(pid)
            time.sleep(0.2)
        killed: set[int] = set()
        for _ in range(50):  # SIGKILL cannot be caught: one round, or a few for late children
            if not (pids := alive(self.pids())):
                break
            for pid in pids:
                _signal(pid, signal.SIGKILL)
            killed.update(pids)
            time.sleep(0.1)
        for p in self.children:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        return sorted(killed)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# --- listening sockets, from /proc ---------------------------------------------------------------


@dataclass(frozen=True)
class Listener:
    component: str  # what the process is (see component())
    pid: int
    proto: str  # tcp | udp
    address: str
    port: int

    @property
    def kind(self) -> str:
        """loopback | wildcard | address (a specific non-loopback address)"""
        ip = ipaddress.ip_address(self.address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if ip.is_loopback:
            return "loopback"
        return "wildcard" if ip.is_unspecified else "address"


def _decode(hex_addr: str) -> tuple[str, int]:
    addr, port = hex_addr.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:  # four little-endian 32-bit words
        ip = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
    return ip, int(port, 16)


def _bound_sockets() -> dict[int, tuple[str, str, int]]:
    """inode -> (proto, address, port) of every listening TCP and bound, unconnected UDP socket."""
    out = {}
    for proto, listen_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        lines = Path(f"/proc/net/{proto}").read_text().splitlines()[1:]
        for line in lines:
            f = line.split()
            if f[3] == listen_state and (proto.startswith("tcp") or f[2].endswith(":0000")):
                ip, port = _decode(f[1])
                out[int(f[9])] = (proto[:3], ip, port)
    return out


RULES = [
    ("gcs_server", "gcs_server"),
    ("/raylet/raylet", "raylet"),
    ("dashboard/dashboard.py", "dashboard"),
    ("autoscaler/_private/monitor.py", "monitor"),
    ("log_monitor.py", "log_monitor"),
    ("ray.util.client.server", "client server"),
    ("ray::DashboardAgent", "dashboard agent"),
    ("ray::RuntimeEnvAgent", "runtime env agent"),
    ("dashboard/agent.py", "dashboard agent"),
    ("ray::", "ray worker"),
    ("default_worker.py", "ray worker"),
    ("deploy.master.Master", "spark master"),
    ("deploy.worker.Worker", "spark worker"),
    ("CoarseGrainedExecutorBackend", "spark executor"),
    ("deploy.SparkSubmit", "spark driver"),
    ("pyspark.daemon", "pyspark worker"),
    ("jobs/build_corpus.py", "spark driver (python)"),
    ("jobs.train_lm", "ray job driver"),
]


def component(pid: int) -> str:
    """A name for what process ``pid`` is, from its command line; ``""`` when the command line is
    gone (a process that is exiting releases its memory, and with it the command line, before it
    closes its sockets), "gone" when the process is."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    cmd = " ".join(a.decode(errors="replace") for a in argv if a)
    if not cmd:
        return ""
    for needle, name in RULES:
        if needle in cmd:
            return name
    return Path(argv[0].decode(errors="replace")).name or "?"


def _comm(pid: int) -> str:
    """What ``pid`` is when its command line is gone: the kernel's name (``/proc/PID/comm``, kept
    until the process is reaped) through the same rules, else "ray worker" for a child of a raylet
    (the raylet forks the workers; its agents live as long as it does, so a sampler has named them
    earlier), else the kernel's name as it is; "?" when unreadable."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return "?"
    name = next((name for needle, name in RULES if needle in comm), None)
    if name is None and component(ppid) == "raylet":
        name = "ray worker"
    return name or comm or "?"


def listeners(pids: list[int], known: dict[int, str] | None = None) -> set[Listener]:
    """The listening sockets held by ``pids``; ``known`` names pids whose command line was read
    earlier (and is filled in here), for a process caught while it exits."""
    known = {} if known is None else known
    bound = _bound_sockets()
    out = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        name = None
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            m = re.fullmatch(r"socket:\[(\d+)\]", target)
            if m and int(m[1]) in bound:
                if name is None:
                    name = component(pid)
                    if name in ("", "gone"):
                        name = known.get(pid) or _comm(pid)
                proto, ip, port = bound[int(m[1])]
                out.add(Listener(name, pid, proto, ip, port))
    return out


class Sampler:
    """Listening sockets of a set of sessions, sampled every ``every`` seconds while a command
    runs (short-lived processes such as executors and training workers are caught too)."""

    def __init__(self, sessions: Sessions):
        self.sessions, self.seen = sessions, set()
        self.sid_of: dict[int, int | None] = {}  # every pid seen -> its session
        self.names: dict[int, str] = {}  # every pid seen -> what it is (component())

    def sample(self) -> None:
        pids = self.sessions.pids()
        for pid in pids:
            self.sid_of.setdefault(pid, session_of(pid))
            if pid not in self.names and (name := component(pid)) not in ("", "gone"):
                self.names[pid] = name
        self.seen |= listeners(pids, self.names)

    def run(self, argv: list[str], every: float = 1.0, **kwargs) -> subprocess.CompletedProcess:
        """``subprocess.run(argv, **kwargs)`` while sampling (captures output, text mode)."""
        timeout = kwargs.pop("timeout", None)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
        if kwargs.get("start_new_session"):
            self.sessions.adopt(p.pid)  # stopped at teardown if it outlives a failed test
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            self.sample()
            try:  # a retried communicate() loses nothing and returns all the output
                out, err = p.communicate(timeout=every)
                break
            except subprocess.TimeoutExpired:
                if deadline and time.monotonic() > deadline:
                    p.kill()
                    out, err = p.communicate()
                    raise subprocess.TimeoutExpired(argv, timeout, out, err)
        self.sample()
        return subprocess.CompletedProcess(argv, p.returncode, out, err)


# --- docs/clusters.md's account of non-loopback binds ---------------------------------------------

KINDS = {"all interfaces": "wildcard", "the node's address": "address"}


def readme_binds(readme: Path = ROOT / "docs" / "clusters.md") -> set[tuple[str, str]]:
    """(component, kind) pairs from the docs/clusters.md table whose header starts ``| Ray process``:
    the binds beyond loopback it names for a Ray cluster that other nodes join."""
    rows, in_table = set(), False
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("| Ray process"):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set(cells[0]) <= set("-: "):
                continue
            for where in re.split(r"\s*(?:,| and )\s*", cells[2]):
                if where in KINDS:
                    rows.add((cells[0].strip("`"), KINDS[where]))
    return rows


# --- the daemons' logs, for a failing test ------------------------------------------------------

IMPORTED_AT = float(Path("/proc/uptime").read_text().split()[0])  # seconds since boot, as dmesg counts
WATCHED: list[Path] = []  # roots of the clusters running now (``watched``): their logs are read on a failure
CAUGHT: list[str] = []  # log tails read as a failure left a root that was then removed
LOG_SUFFIXES = (".log", ".out", ".err")  # Ray's session logs, our daemon logs; Spark executors: stdout, stderr
# Daemons first: a failure is explained by them more often than by one of many worker logs.
DAEMON_LOGS = ("gcs_server", "raylet", "dashboard", "monitor", "runtime_env_agent", "master", "worker.log", "build")


@contextlib.contextmanager
def watched(root: Path, remove: bool = False) -> Iterator[Path]:
    """Mark ``root`` as holding daemon logs while the block runs. If an exception leaves the block
    (a failing test, a cluster that did not start), the logs' tails are read before ``root`` is
    removed (``remove``), for tests/conftest.py to report."""
    WATCHED.append(root)
    try:
        yield root
    except (Exception, pytest.fail.Exception):  # not a skip, not GeneratorExit
        CAUGHT.append(log_tails([root]))
        raise
    finally:
        WATCHED.remove(root)
        if remove:
            shutil.rmtree(root, ignore_errors=True)


def failure_logs() -> str:
    """Tails of the logs of every cluster running now and of any a failure has just left, after
    the machine's state (``machine_state``); empty when there is none. Clears what was caught."""
    text = "\n".join([*CAUGHT, *(log_tails([r]) for r in WATCHED)]).strip()
    CAUGHT.clear()
    return f"{machine_state()}\n\n{text}" if text else ""


def machine_state() -> str:
    """Load average, available memory and the kernel's OOM kills since this module was imported
    (``dmesg``, where readable): on a shared machine a failure is often its neighbours' doing (a
    job driver SIGKILLed with exit code 137 was the kernel's global OOM killer)."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    available = int(meminfo.get("MemAvailable", "0 kB").split()[0]) / 2**20
    lines = [
        f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}, "
        f"{available:.1f} GiB of memory available"
    ]
    try:
        kernel = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return lines[0] + "; dmesg not readable"
    for line in kernel:
        m = re.match(r"\[\s*(\d+\.\d+)\]\s*(Out of memory: Killed process .*)", line)
        if m and float(m[1]) >= IMPORTED_AT:
            lines.append(f"kernel: {m[2][:200]}")
    return "\n".join(lines if len(lines) > 1 else [lines[0] + "; no OOM kill since the tests started"])


def log_files(root: Path) -> list[Path]:
    """Non-empty log files under ``root`` (symbolic links not followed: Ray's session_latest),
    daemons' first, then newest first."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if (name.endswith(LOG_SUFFIXES) or name in ("stdout", "stderr")) and not path.is_symlink():
                with contextlib.suppress(OSError):
                    if (st := path.stat()).st_size:
                        found.append((not any(d in name for d in DAEMON_LOGS), -st.st_mtime, path))
    return [p for *_, p in sorted(found)]


def log_tails(roots: list[Path], lines: int = 25, files: int = 30) -> str:
    """The last ``lines`` lines of the first ``files`` log files under each root (``log_files``)."""
    out = []
    for root in roots:
        paths = log_files(root)
        for path in paths[:files]:
            try:
                tail = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError as e:
                tail = [f"(unreadable: {e})"]
            out += [f"==> {path} <==", *tail, ""]
        if len(paths) > files:
            out.append(f"({len(paths) - files} more log files under {root})")
    return "\n".join(out)
