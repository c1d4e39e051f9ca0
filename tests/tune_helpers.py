"""Helpers shared by the tuner's tests: the status of each evaluation of a result, and a
tune run in a process of its own, its log waited for and its workers found in /proc."""

import os
import subprocess
import sys
import time
from pathlib import Path

from clgemm import db, device


def statuses(res):
    return {r["params"]["TS"]: r["status"] for r in res.records}


def _wait_for_lines(log: Path, lines: int, within: float = 120) -> None:
    """Until the tune's log has `lines` lines (or `within` seconds have passed)."""
    deadline = time.time() + within
    while time.time() < deadline and (not log.exists() or len(log.read_bytes().splitlines()) < lines):
        time.sleep(0.1)


def _start_tune(home, lines: int, **popen):
    """A tune of kernel 5 in a process of its own (SlowSynthetic: no OpenCL work), once its
    log has `lines` lines: (process, its children's PIDs then)."""
    code = ("from clgemm.tune import tune; tune('5', 64, 64, 64, strategy='random', budget=80, "
            "workers=2, evaluator='tests.evaluators:SlowSynthetic', update_db=False)")
    env = dict(os.environ, CLGEMM_HOME=str(home))
    p = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)), **popen)
    log = db.log_path(device.select(), "5", 64, 64, 64)
    _wait_for_lines(log, lines)
    children = _children(p.pid)
    assert len(children) >= 2, children          # the two workers (and the resource tracker)
    return p, children, log


def _live(field: int, value: int) -> list[str]:
    """Processes that have not exited (state is not Z) whose /proc stat field `field`
    (counted after the command name: 1 the parent, 2 the process group) is `value`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[field]) == value and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


def _children(pid: int) -> list[str]:
    """Running processes whose parent is `pid` (Linux /proc)."""
    return _live(1, pid)


def _still_running(pids: list[str], within: float) -> list[str]:
    deadline = time.time() + within
    while True:
        left = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                left.append(pid)
        if not left or time.time() > deadline:
            return left
        time.sleep(0.1)


def _running_in_group(pgid: int) -> list[str]:
    """Processes of a process group that have not exited (Linux /proc)."""
    return _live(2, pgid)
