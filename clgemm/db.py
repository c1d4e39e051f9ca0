"""The tuned-parameter database, and where the tuner's logs live (clgemm.tunelog reads
and writes them): which databases speak for a device (their entries validated as read:
clgemm.entries), when a new tune is seen, and how they are updated (under a file lock,
written atomically: clgemm.store)."""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path

import pyopencl as cl

from . import device as devmod
# what callers and the tests name as the database's: its schema, its warnings, its keys
from .entries import SCHEMA, DataWarning, shape_key  # noqa: F401
from .entries import is_number
from .entries import load as _load
from .store import LOCKS, check_lock, copy_aside, home, locked, slug, write_atomic
from .store import home_str as _home

def device_key(dev: cl.Device) -> str:
    """Device name and driver: a new driver may change what is fastest."""
    key = _device_keys.get(dev.int_ptr)
    if key is None:   # two info queries; gemm() asks on every call
        key = _device_keys[dev.int_ptr] = f"{dev.name.strip()} | {dev.driver_version.strip()}"
    return key


_device_keys: dict[int, str] = {}


def log_path(dev: cl.Device, kernel: str, m: int, n: int, k: int) -> Path:
    """One JSON Lines log per (device, driver, kernel, shape)."""
    return _log_dir(dev) / f"kernel{kernel}-{shape_key(m, n, k)}.jsonl"


def _log_dir(dev: cl.Device) -> Path:
    return home() / "logs" / slug(device_key(dev))


def db_path(dev: cl.Device) -> Path:
    return Path(_db_file(dev))


def _db_file(dev: cl.Device) -> str:
    return os.path.join(_home(), "db", f"{slug(device_key(dev))}.json")


def check_writable(dev: cl.Device, database: bool = True) -> None:
    """Raise ValueError naming the folder if the tuner's log folder (and, with `database`,
    the database's) cannot be made or written: found after a sweep, it would lose the sweep."""
    # a database linked in is written where the link leads (store.write_atomic)
    path = Path(os.path.realpath(db_path(dev)))
    real = path.parent
    # (each file's lock lies in a folder beside it: store.lock_path)
    folders = [_log_dir(dev)] + ([db_path(dev).parent, real] if database else [])
    for folder in dict.fromkeys(folders):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".clgemm-probe-"):
                pass
            (folder / LOCKS).mkdir(exist_ok=True)     # where its files' locks lie
        except OSError as e:     # its name, where not the folder's: the part in the way
            why = e.strerror or str(e)
            if e.filename and e.filename != str(folder):
                why += f": {e.filename}"
            raise ValueError(f"cannot write the tuner's files in {folder} ({why}); set "
                             f"CLGEMM_HOME to a writable folder (it is now {home()})") from None
    if not database:
        return
    try:
        check_lock(path)
    except OSError as e:
        raise ValueError(f"cannot take the tuning database's lock {e.filename or path} "
                         f"({e.strerror or e}); set CLGEMM_HOME to a folder of your own (it "
                         f"is now {home()})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"the tuning database {path} is read-only: make it writable to add "
                         f"this tune's winner, or set CLGEMM_HOME to another folder")


# ------------------------------------------------------------------ database

@functools.cache
def _shipped() -> list[Path]:
    """The databases inside the package (read once: they do not change while it runs)."""
    try:
        root = resources.files("clgemm") / "tuned"   # in name order: the same on every host
        return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


_cache: dict = {}
_written = 0     # record_best calls in this process
_unread = 0      # reads of a database that failed (too many open files, say): not cached


def stamp(dev: cl.Device) -> tuple:
    """What the tuned entries for `dev` depend on: the device, the databases, the user
    database's file (time, inode, size), this process's own writes to it, which may
    come faster than the file system's clock moves, and its reads that failed (a choice
    made without the file is not kept once it reads again). Equal stamps give equal
    entries (entries_for), so a choice made from them can be kept under it."""
    user = _db_file(dev)
    try:
        st = os.stat(user)
        version = (st.st_mtime_ns, st.st_ino, st.st_size)   # write_atomic: a new file each time
    except OSError:
        version = None
    return device_key(dev), tuple(_shipped()), user, version, _written, _unread


def version(dev: cl.Device) -> tuple:
    """A cheap stand-in for `stamp`, for gemm()'s plan cache, which asks on every call: this
    process's own writes and failed reads count at once, and another process's tune is
    seen within RESTAT_S, since the user database's file is stat'ed at most that often."""
    now = time.monotonic()
    seen = _seen.get(dev.int_ptr)
    if seen is None or now - seen[0] >= RESTAT_S:
        st = stamp(dev)
        # the stamp as a small int: a key holding its paths would hash them on every call
        seen = _seen[dev.int_ptr] = (now, _tokens.setdefault(st, next(_numbers)))
    return seen[1], _written, _unread


RESTAT_S = 1.0
_seen: dict[int, tuple[float, int]] = {}
_tokens: dict[tuple, int] = {}   # each stamp seen, numbered
_numbers = itertools.count()     # (len(_tokens) gave two threads' stamps one number)


def watch(dev: cl.Device) -> None:
    """Count `dev`'s databases in `generation` from now on (gemm() watches each device it
    plans for)."""
    if dev.int_ptr not in _watched:
        _watched[dev.int_ptr] = dev
        _restat_at[0] = 0.0


def generation() -> int:
    """A number that changes whenever the tuned entries of any watched device may have:
    at once for this process's own writes, within RESTAT_S for another process's tune (each
    watched device's user database is stat'ed at most that often). gemm()'s plan cache asks
    it on every call, so its common case is one clock read: `version` per device cost
    about a microsecond of a call's host time on the H200."""
    if time.monotonic() >= _restat_at[0]:
        _restat()
    return _generation[0]


def _restat() -> None:
    """generation()'s look at the files, one thread at a time (two at once could give two
    states one number). The next look is set first: a write of this process that lands
    meanwhile sets it to now again (record_best), where set last it pushed that write's
    effect back a second. The watched devices are copied first: another thread's first
    gemm() on a device adds one."""
    with _restat_lock:
        _restat_at[0] = time.monotonic() + RESTAT_S
        now = tuple(version(dev) for dev in list(_watched.values()))
        if now != _generation[1]:
            _generation[:] = [_generation[0] + 1, now]


_watched: dict[int, cl.Device] = {}
_restat_lock = threading.Lock()
_generation: list = [0, ()]        # the number, and the versions it stands for
_restat_at = [0.0]                 # when generation() next looks at the files


def entries_for(dev: cl.Device) -> dict:
    """Tuned entries for this device: the user's database over the shipped ones. Shipped
    files for the same device name under another driver, and the user's newest database of
    it under another driver, are used only when none matches the driver exactly. Where no
    shipped file names this device, those of another device of the same architecture
    (device.architecture) lie under the rest, shape by shape: the user's own tunes go over
    them, and their entries carry "tuned_on", the device they were tuned on (a first own
    tune that replaced them all put kernel 5 back to its defaults at every other shape)."""
    now = stamp(dev)
    if now in _cache:
        return _cache[now]
    global _unread
    key, shipped, user, *_ = now
    files = _files(now)
    docs = []
    failed = _unread
    for path in files:
        try:
            device = json.loads(path.read_text()).get("device", "")
        except OSError:
            # a failed read says nothing of the file: what is merged without it is not
            # kept, and the next plan (gemm()'s plan cache sees `version` move) reads again
            _unread += 1
            docs.append((path, None))      # _load warns about it
            continue
        except (ValueError, AttributeError, RecursionError):
            docs.append((path, None))      # _load warns about it
            continue
        if not isinstance(device, str) or not device:
            warnings.warn(f"{path}: tuning database ignored: it has no \"device\" field naming "
                          f"the device and driver it was tuned on (this one is {key!r})",
                          DataWarning, stacklevel=2)
            continue
        if str(path) == user and not _names(device, key):
            warnings.warn(f"{path}: tuning database ignored: its \"device\" field names "
                          f"{device!r}, not this device ({key!r})", DataWarning, stacklevel=2)
            continue
        docs.append((path, device))
    exact = [p for p, d in docs if d == key or d is None]
    if not any(d == key for _, d in docs):
        exact += [p for p, d in docs if _names(d, key)]
    merged: dict = {}
    for path, doc in _alike(dev, shipped, docs, key).items():
        for k, shapes in _load(path).items():
            merged.setdefault(k, {}).update(
                {s: {**e, "tuned_on": doc["device"]} for s, e in shapes.items()})
    for path in exact:
        for k, shapes in _load(path).items():
            merged.setdefault(k, {}).update(shapes)
    if _unread == failed:
        _cache.clear()
        _cache[now] = merged
    return merged


def _files(now: tuple) -> list[Path]:
    """The databases that may speak for the device of `now` (a stamp): the shipped ones,
    then the user's, or where this driver has none, the user's of another (_other_driver)."""
    key, shipped, user, version, *_ = now
    return [p for p in shipped if p.exists()] + ([Path(user)] if version is not None
                                                 else _other_driver(Path(user), key))


def _other_driver(user: Path, key: str) -> list[Path]:
    """The user's newest database of this device under another driver, where this driver
    has none yet: used as a shipped one of another driver is (entries_for, thresholds),
    and over the shipped ones, as the user's own. After a driver update the user's own
    tunes were all set aside without a word."""
    found = []
    for path in user.parent.glob("*.json") if user.parent.is_dir() else ():
        if ".unreadable-" in path.name or path.name.endswith(".tmp"):
            continue
        try:
            doc = json.loads(path.read_text())
            device, when = doc.get("device"), path.stat().st_mtime
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if _names(device, key) and device != key:
            found.append((when, path))
    return [max(found)[1]] if found else []


def device_name(device: str) -> str:
    """The device name of a database's "device" field ("name | driver")."""
    return device.split(" | ")[0]


def _names(device: object, key: str) -> bool:
    """Whether a database's "device" field names the device of `key` (any driver)."""
    return isinstance(device, str) and device_name(device) == device_name(key)


def _alike(dev: cl.Device, shipped: Sequence[Path], docs: Sequence[tuple[Path, object]],
           key: str) -> dict[Path, dict]:
    """The shipped databases (path: its JSON) of other devices whose "architecture" is this
    device's (device.architecture); none where a shipped one of `docs` ((path, its "device"
    field)) names this device (`key`)."""
    arch = devmod.architecture(dev)
    out: dict[Path, dict] = {}
    if arch is None or any(p in shipped and _names(d, key) for p, d in docs):
        return out
    for path in shipped:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            continue                     # entries_for warns about it
        if (isinstance(doc, dict) and doc.get("architecture") == arch
                and isinstance(doc.get("device"), str)):
            out[path] = doc
    return out


def thresholds(dev: cl.Device,
               limits: Mapping[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """The launch heuristics' thresholds measured for this device (clgemm.heuristics), from
    the "thresholds" object of its databases (the user's over the shipped ones): numbers
    within `limits` (name: (lowest, highest); thresholds.LIMITS), or any number >= 0 for a
    name without limits; anything else is skipped with a warning naming the file."""
    now = stamp(dev)
    if now in _thresholds:
        return _thresholds[now]
    key, shipped, *_ = now
    out: dict[str, float] = {}
    files = _files(now)
    named, devices = [], []
    for path in files:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            continue                     # entries_for warns about it
        device = doc.get("device") if isinstance(doc, dict) else None
        devices.append((path, device))
        if _names(device, key):
            named.append((path, doc))    # entries_for warns about a missing device
    # as entries_for: files of this device under another driver only where none names this
    # driver (their thresholds were measured with entries that are then left out), and a
    # device of the same architecture's under this device's own
    if any(doc["device"] == key for _, doc in named):
        named = [(path, doc) for path, doc in named if doc["device"] == key]
    named = list(_alike(dev, shipped, devices, key).items()) + named
    for path, doc in named:
        given = doc.get("thresholds", {})
        if not isinstance(given, dict):
            warnings.warn(f"{path}: thresholds {given!r} ignored (want an object of name: "
                          f"number)", DataWarning, stacklevel=2)
            continue
        for name, value in given.items():
            if limits is not None and name not in limits:
                warnings.warn(f"{path}: threshold {name!r} ignored (unknown; known: "
                              f"{', '.join(limits)})", DataWarning, stacklevel=2)
                continue
            lo, hi = (limits or {}).get(name, (0, math.inf))
            if is_number(value) and lo <= value <= hi:
                out[name] = float(value)
            else:
                warnings.warn(f"{path}: threshold {name!r} = {value!r} ignored (want a number "
                              f"from {lo:g} to {hi:g})", DataWarning, stacklevel=2)
    _thresholds.clear()
    _thresholds[now] = out
    return out


_thresholds: dict = {}


def distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """How far apart two shapes are: the sum of |log| of their dimensions' ratios. Written
    out, not summed over a generator: a new shape's plan asks it for every entry, twice or
    three times (nearest_first, closest), and the generator took most of its time."""
    log = math.log
    return (abs(log(a[0]) - log(b[0])) + abs(log(a[1]) - log(b[1]))
            + abs(log(a[2]) - log(b[2])))


def near(dev: cl.Device, kernel: str | Sequence[str] | None, m: int, n: int, k: int,
         within: float = 0.0,
         usable: Callable[[str, dict], bool] | None = None) -> list[tuple[str, dict]]:
    """(kernel, entry) tuned at shapes within `within` of the nearest one's distance, the
    nearest first (ties: the kernel named first, then the faster). Without a kernel, every
    kernel's entries. With `usable`, entries it refuses are left out before the nearest is
    found."""
    return closest(nearest_first(candidates(dev, kernel, usable), (m, n, k)), (m, n, k), within)


def candidates(dev: cl.Device, kernel: str | Sequence[str] | None,
               usable: Callable[[str, dict], bool] | None = None) -> list[tuple[int, str, dict]]:
    """(order, kernel, entry) of `kernel`'s entries (several kernels: each one's, its order
    its place in the list; none: every kernel's, all of order 0), those `usable` refuses
    left out: what nearest_first ranks, for near and for choices kept across shapes."""
    entries = entries_for(dev)
    keys = [kernel] if isinstance(kernel, str) else list(kernel or entries)
    return [(i if kernel is not None else 0, key, e)
            for i, key in enumerate(keys) for e in entries.get(key, {}).values()
            if usable is None or usable(key, e)]


def nearest_first(found: Iterable[tuple[int, str, dict]],
                  shape: tuple[int, int, int]) -> list[tuple[str, dict]]:
    """(kernel, entry) pairs of (order, kernel, entry) triples, the entry tuned nearest
    `shape` first; ties: the lower order (near's kernel named first), then the faster."""
    ranked = sorted(((round(distance(e["shape"], shape), 6), order, -e["gflops"], key, e)
                     for order, key, e in found), key=lambda f: f[:3])
    return [(key, e) for *_, key, e in ranked]


def closest(ranked: list[tuple[str, dict]], shape: tuple[int, int, int],
            within: float) -> list[tuple[str, dict]]:
    """Of (kernel, entry) pairs ranked nearest first (as `near` gives them), those within
    `within` of the first one's distance to `shape`."""
    d = [round(distance(e["shape"], shape), 6) for _, e in ranked]
    return [ke for ke, x in zip(ranked, d) if x <= d[0] + within] if ranked else []


def lookup(dev: cl.Device, kernel: str | None, m: int, n: int, k: int) -> tuple[str, dict] | None:
    """(kernel, params) tuned for the nearest shape, or None if this device was never tuned
    (for that kernel). Without a kernel, the fastest tuned kernel at the nearest shape."""
    found = near(dev, kernel, m, n, k)
    return (found[0][0], found[0][1]["params"]) if found else None


def record_best(dev: cl.Device, kernel: str, m: int, n: int, k: int, params: Mapping[str, int],
                gflops: float, extra: Mapping | None = None) -> Path:
    """Put a tuned winner into the user's database for this device (atomically, and under
    a file lock: four processes writing 20 entries each kept 22 of 80 without it,
    2026-12-03). A file there whose contents this version cannot update is copied aside
    first, never lost; one that cannot be read at all is left alone (OSError)."""
    given = db_path(dev)
    path = Path(os.path.realpath(given))    # a symlink: its target is the database
    with locked(path, "the tuning database's update"):
        _update(path, dev, kernel, shape_key(m, n, k),
                {"params": dict(params), "gflops": gflops, **(extra or {})})
    global _written
    _written += 1
    _restat_at[0] = 0.0          # generation() looks again on its next call
    return given


def _update(path: Path, dev: cl.Device, kernel: str, shape: str, entry: dict) -> None:
    """The database's read-modify-write; the caller holds its lock."""
    doc = {"schema": SCHEMA, "device": device_key(dev), "entries": {}}
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = None
    except OSError as e:
        # the file may be sound (too many open files, a lock on a network file system):
        # it stays where it is, and the entry is not written
        raise OSError(e.errno, f"cannot read the tuning database to add to it ({e.strerror or e})",
                      str(path)) from e
    if text is not None:
        try:
            old = json.loads(text)
            why = None
            if not (isinstance(old, dict) and old.get("schema") == SCHEMA
                    and isinstance(old.get("entries"), dict)):
                why = f"not a schema {SCHEMA} database"
            elif not all(isinstance(v, dict) for v in old["entries"].values()):
                why = "a kernel's entries are not an object of shapes"
            elif not _names(old.get("device"), device_key(dev)):
                why = f"its \"device\" field names {old.get('device')!r}, not this device"
        except (ValueError, RecursionError) as e:   # JSONDecodeError is a ValueError
            why = str(e) or type(e).__name__
        if why is None:      # its other fields (thresholds, notes) are kept as they are
            doc = {**old, **doc, "entries": old["entries"]}
        else:     # a copy first: the file stays in place until the new one replaces it
            aside = copy_aside(path, "unreadable-")
            warnings.warn(f"{path}: tuning database not usable by this clgemm ({why}); copied to "
                          f"{aside}, and {path} started anew", DataWarning, stacklevel=3)
    doc["entries"].setdefault(kernel, {})[shape] = entry
    write_atomic(path, doc)
