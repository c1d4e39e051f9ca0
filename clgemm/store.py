"""clgemm's own files on disk: where they live ($CLGEMM_HOME, else the user data folder),
and how one is written without ever leaving it half-written or losing another process's
write: an OS file lock per file, a complete file renamed over the old one, a file that
cannot be used kept aside (copied, or a log renamed) rather than written over.

Apart from clgemm.db because none of it knows what the files hold: the database and the
tuner's logs (db), the device facts (device), the recorded shapes (record) and the tune
lock (tunelog) all write through it. It imports nothing of clgemm's.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import filelock
import platformdirs

LOCK_WAIT_S = 60.0   # how long an update waits for another process's (each holds it for ms)


def home() -> Path:
    """Root of clgemm's own files: $CLGEMM_HOME, else the user data directory."""
    return Path(home_str())


def home_str() -> str:
    """home() as a string: gemm() asks on every call (db.stamp), and pathlib costs there. A
    leading ~ is the user's home, as the shell would have it: quoted, CLGEMM_HOME='~/x'
    made a folder named ~ in whatever directory a run started in."""
    given = os.environ.get("CLGEMM_HOME")
    return _expanded(given) if given else _user_data()


@functools.lru_cache(maxsize=16)
def _expanded(path: str) -> str:
    return os.path.expanduser(path)


@functools.cache
def _user_data() -> str:
    return platformdirs.user_data_dir("clgemm", appauthor=False)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text.strip()).strip("-").lower()


LOCKS = ".locks"     # the folder of lock files beside the files they guard


def lock_path(path: Path, kind: str = "") -> Path:
    """The lock file for `path`: through symlinks, beside the real file, in a `.locks`
    folder of its own. So every writer that reaches one file takes one lock, whichever
    clgemm home it came through: two homes that linked one database file each locked in
    their own `locks/` folder and lost each other's entries (69 of 81 stayed when four
    processes wrote through both at once, tests/test_db_safety.py)."""
    real = Path(os.path.realpath(path))
    return real.parent / LOCKS / f"{kind}{real.name}.lock"


def lock(path: Path, kind: str = "", timeout: float = LOCK_WAIT_S) -> filelock.BaseFileLock:
    """An OS file lock (released when its holder dies, even by kill -9) for `path`; held
    by `with`. A lock not had within `timeout` seconds raises filelock.Timeout."""
    where = lock_path(path, kind)
    where.parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(where), timeout=timeout)


@contextlib.contextmanager
def locked(path: Path, what: str) -> Iterator[None]:
    """Hold `path`'s lock (`lock`) for an update, turning a lock not had in time into an
    OSError that names the lock file and `what` waits for it."""
    held = lock(path, timeout=LOCK_WAIT_S)
    try:
        held.acquire()
    except filelock.Timeout:
        raise TimeoutError(errno.ETIMEDOUT, f"{what} waited {held.timeout:.0f} s for another "
                           f"process's lock on {path}", held.lock_file) from None
    try:
        yield
    finally:
        held.release()


def check_lock(path: Path) -> None:
    """Raise OSError naming the lock file if `path`'s lock (`lock`) could not be taken for
    want of permission (another user's lock file, a `.locks` that is not a folder): found
    when the update comes, it would lose what came before."""
    where = Path(lock(path, timeout=0).lock_file)
    os.close(os.open(where, os.O_RDWR | os.O_CREAT, 0o644))


def move_aside(path: Path, tag: str = "") -> Path:
    """Rename `path` to `<stem>.<tag><YYYYmmdd-HHMMSS>[-N]<suffix>` beside it, N counting
    from 2 past names already taken: never over another file, even within one second."""
    new = _aside(path, tag)
    path.rename(new)
    return new


def copy_aside(path: Path, tag: str = "") -> Path:
    """Keep the file `path` under move_aside's name as well, leaving it in place, so that
    it stays where it was until a new file is renamed over it: moved first, a failed write
    of the new one (a full disk) left no file at `path`. A hard link where the file
    system allows one, else a copy."""
    link = True
    while True:
        new = _aside(path, tag)
        try:
            if link:
                os.link(path, new)
                return new
            with open(path, "rb") as src, open(new, "xb") as dst:
                try:
                    shutil.copyfileobj(src, dst)
                    dst.flush()
                    os.fsync(dst.fileno())
                except BaseException:     # a full disk: no partial copy left behind
                    dst.close()
                    os.unlink(new)
                    raise
            return new
        except FileExistsError:        # taken meanwhile: the next name
            continue
        except OSError:
            if not link:
                raise
            link = False               # no hard links here: a copy


def _aside(path: Path, tag: str) -> Path:
    """The first free name `<stem>.<tag><YYYYmmdd-HHMMSS>[-N]<suffix>` beside `path`."""
    stem = f"{path.stem}.{tag}{time.strftime('%Y%m%d-%H%M%S')}"
    new, n = path.with_name(stem + path.suffix), 1
    while os.path.lexists(new):
        n += 1
        new = path.with_name(f"{stem}-{n}{path.suffix}")
    return new


def write_atomic(path: Path, data: object, replace: bool = True) -> None:
    """Write JSON by renaming a complete file over `path`: through a symlink to its target
    (the link stays), and with the old file's permission bits, else 0644 (mkstemp
    makes 0600). With `replace` False an existing `path` is left as it is and
    FileExistsError raised (a hard link, which never replaces, instead of the rename)."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True), replace)


def write_text_atomic(path: Path, text: str, replace: bool = True) -> None:
    """`text` written as write_atomic writes JSON: whole or not at all (a full disk left
    a bench's results cut off mid-object)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o644                      # what open() would give under the usual umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and e.filename is None:   # a write's own error (a full
            raise OSError(e.errno, e.strerror, str(path)) from e   # disk) names no file
        raise


def commit(root: Path | None = None) -> str:
    """The commit of the code writing a results file, for its provenance: $CLGEMM_COMMIT
    where set (a copy of the tree without its git metadata, as on a lent GPU machine),
    else `git rev-parse --short HEAD` of the checkout at `root` (default: the one this
    package runs from), marked "+changes" where its tracked files differ, else "unknown"
    (an installed copy)."""
    if os.environ.get("CLGEMM_COMMIT"):
        return os.environ["CLGEMM_COMMIT"]
    root = (root or Path(__file__).parents[1]).resolve()
    try:
        git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True,  # noqa: E731
                                        capture_output=True, text=True).stdout.strip()
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return "unknown"        # a copy inside another project's checkout
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")
