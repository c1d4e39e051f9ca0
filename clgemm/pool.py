"""The tuner's worker processes: each has its own OpenCL context and an Evaluator, takes
tasks over a pipe of its own and reports over another. The parent hands a single "device
token" to one worker at a time, so that timings never overlap; compiles run in parallel.

A worker never outlives the tune: on Linux the kernel kills it when its parent dies
(prctl PR_SET_PDEATHSIG), and everywhere it leaves when its task pipe closes or its parent's
PID changes while it waits (a kill -9 of the tune left a worker holding a 290 MB OpenCL
context for minutes, 2026-12-03). SIGINT and SIGTERM are the parent's to handle
(StopSignals): it stops the workers itself, and a worker whose parent is gone exits
without a traceback.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import queue as queue_mod
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection

import pyopencl as cl

from . import db, kernels, matvec, operands
from . import device as devmod
from .build import BuildError
from .evaluate import short

POLL_S = 0.5          # how often a waiting worker checks that its parent is alive
STOP_GRACE_S = 3.0    # how long stopping workers may take before they are killed
_BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_PR_SET_PDEATHSIG = 1
MAX_WORKERS = 1024    # compiling processes a tune may start (each holds its own operands)
# what one worker costs besides its operands: its OpenCL context and the modules it
# imports (about 290 MB resident on pocl, 2026-12-03)
WORKER_BASE_BYTES = 320 << 20


class WorkerSetupError(RuntimeError):
    """A worker could not make its device queue or its evaluator's data (a MemoryError making
    the inputs, say): no configuration's fault, so the tune stops instead of recording one."""


class _ParentGone(Exception):
    pass


# ------------------------------------------------------------------ worker side

def die_with_parent(parent: int) -> None:
    """Ask the kernel to kill this process when its parent dies (Linux), and leave now if it
    already has (it may have died before the request was made)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass          # no prctl: the PID poll below still ends the worker
    if os.getppid() != parent:
        os._exit(0)


def _receive(tasks: Connection, parent: int):
    """The next task; _ParentGone if the pipe closed or the parent's PID changed."""
    while True:
        try:
            if tasks.poll(POLL_S):
                return tasks.recv()
        except (EOFError, OSError):
            raise _ParentGone from None
        if os.getppid() != parent:
            raise _ParentGone


def _reporter(results: Connection):
    def send(message) -> None:
        try:
            results.send(message)
        except (BrokenPipeError, EOFError, OSError):
            raise _ParentGone from None
    return send


_STOPS = {signal.SIGINT, signal.SIGTERM}
_MASKABLE = hasattr(signal, "pthread_sigmask")     # not on Windows


def worker(wid: int, parent: int, device_spec: str | None, kernel: str, shape: tuple,
           repeat: int, evaluator: str, tasks: Connection, results: Connection) -> None:
    die_with_parent(parent)
    # Ctrl-C reaches the whole process group, and so may SIGTERM; stopping the workers is
    # the parent's job, and each one's traceback would only bury the parent's message
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)   # blocked since the spawn (_start)
    try:
        _serve(wid, parent, device_spec, kernel, shape, repeat, evaluator, tasks, results)
    except _ParentGone:
        os._exit(0)       # nothing to report to, and nothing worth tearing down


def _serve(wid, parent, device_spec, kernel, shape, repeat, evaluator, tasks, results) -> None:
    send = _reporter(results)
    try:
        mod, _, name = evaluator.partition(":")
        cls = getattr(importlib.import_module(mod), name)
        q = devmod.queue(devmod.select(device_spec))
        ev = cls(q, kernel, *shape, repeat)
    except Exception as e:                # noqa: BLE001 - reported; the parent stops the tune
        send(("fatal", wid, None, short(e)))
        while _receive(tasks, parent) is not None:   # alive until told to stop: a dead
            pass                                      # worker's task would be recorded as crashed
        return
    while True:
        task = _receive(tasks, parent)
        if task is None:
            return
        kind, idx, payload = task
        if kind in ("remeasure", "splits"):   # the finalists again; a finalist's split-K
            if _receive(tasks, parent) is None:   # wait for the token; None: the tune is over
                return
            try:
                task_of = ev.remeasure if kind == "remeasure" else ev.split_stage
                out = task_of(payload, alive=lambda: send(("alive", wid, idx, None)))
            except _ParentGone:
                raise
            except Exception as e:        # noqa: BLE001 - the tune keeps what it has
                out = {"error": short(e)}
            send(("done", wid, idx, out))
            continue
        params = payload
        send(("start", wid, idx, None))
        t0 = time.perf_counter()
        try:
            plan = ev.compile(params)
        except BuildError as e:
            send(("done", wid, idx, {"status": "compile_error", "error": str(e)[-2000:]}))
            continue
        except Exception as e:            # noqa: BLE001 - recorded, never fatal
            send(("done", wid, idx, {"status": "compile_error", "error": short(e)}))
            continue
        compile_s = time.perf_counter() - t0
        send(("ready", wid, idx, None))
        token = _receive(tasks, parent)   # the device token; None: the tune is over
        if token is None:
            return
        _, cutoff_ms = token
        t1 = time.perf_counter()
        try:
            rec = ev.measure(plan, cutoff_ms)
        except cl.Error as e:
            rec = {"status": "launch_error", "error": short(e)}
        except Exception as e:            # noqa: BLE001
            rec = {"status": "launch_error", "error": short(e)}
        rec["compile_s"] = round(compile_s, 3)
        rec["device_s"] = round(time.perf_counter() - t1, 3)
        send(("done", wid, idx, rec))


# ------------------------------------------------------------------ parent side

class _Tasks:
    """The parent's end of a worker's task pipe. A send to a worker that died is dropped:
    the sweep sees the death and replaces the worker."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def put(self, task) -> None:
        try:
            self.conn.send(task)
        except (BrokenPipeError, OSError):
            pass

    def close(self) -> None:
        self.conn.close()


class Inbox:
    """The workers' messages, over a pipe of each worker's own. With one queue shared by
    all of them, a worker killed while its queue's feeder thread was still writing left the
    queue's lock held, so that no worker could report again; a dead worker now breaks only
    its pipe."""

    def __init__(self, ctx):
        self.ctx, self.pipes = ctx, {}

    def open(self, wid: int) -> Connection:
        """A new pipe for worker `wid` (replacing a dead one's): its end to write to."""
        self.close(wid)
        read, write = self.ctx.Pipe(duplex=False)
        self.pipes[wid] = read
        return write

    def close(self, wid: int) -> None:
        old = self.pipes.pop(wid, None)
        if old is not None:
            old.close()

    def get(self, timeout: float):
        for conn in mp_connection.wait(list(self.pipes.values()), timeout):
            try:
                return conn.recv()
            except (EOFError, OSError):      # its worker died: the sweep sees to that
                self.close(next(w for w, c in self.pipes.items() if c is conn))
        raise queue_mod.Empty

    def get_all(self, timeout: float) -> list:
        """Every message waiting now, after waiting up to `timeout` for the first."""
        out = [self.get(timeout)]
        while True:
            try:
                out.append(self.get(0))
            except queue_mod.Empty:
                return out


# --------------------------------------------------------------- the parent's signals

class Terminated(SystemExit):
    """SIGTERM during a tune: raised in the tune's thread, so that it stops its workers and
    keeps its log as Ctrl-C does. Exit status 143 (128 + SIGTERM), as the signal's own."""


def _stop_exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(128 + signum)


class StopSignals:
    """SIGINT and SIGTERM while a tune runs, where this is the main thread and the process
    had Python's own handling (KeyboardInterrupt; SIGTERM's default action, which would end
    it at once, its workers left to their own death watch): the first raises in the tune's
    thread, so that it stops its workers and keeps its log; any that comes after it, or
    while the workers are being stopped (`held`), is held instead. A second
    KeyboardInterrupt raised inside the tune's cleanup (two SIGINTs 10-50 ms apart, or GNU
    `timeout -s INT`, which signals the process and then its group) skipped Pool.stop, and
    the workers, which ignore both signals and whose parent was alive, kept the process
    from exiting (multiprocessing joins its children at exit) until a kill -9."""

    def __init__(self) -> None:
        self.stopping = False           # a signal was raised, or the workers are being stopped
        self.pending: int | None = None  # a signal that came meanwhile

    def _handle(self, signum: int, frame) -> None:
        if self.stopping:
            self.pending = self.pending or signum
            return
        self.stopping = True            # before the raise: no later signal lands in the cleanup
        raise _stop_exception(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopSignals]:
        """The handler in place while the block runs; the ones the process had put back."""
        saved = {}
        if threading.current_thread() is threading.main_thread():
            for signum, default in ((signal.SIGINT, signal.default_int_handler),
                                    (signal.SIGTERM, signal.SIG_DFL)):
                if signal.getsignal(signum) is default:
                    saved[signum] = signal.signal(signum, self._handle)
        try:
            yield self
        finally:
            for signum, old in saved.items():
                signal.signal(signum, old)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Signals held while the block runs; one that came is raised after it, unless the
        tune was stopping already (its exception is on the way out)."""
        was, self.stopping = self.stopping, True
        yield
        if self.pending is not None and not was:
            raise _stop_exception(self.pending)
        self.stopping = was


@dataclass
class Slot:
    proc: mp.Process
    tasks: _Tasks
    task: tuple | None = None        # (idx, params) being worked on
    since: float = 0.0               # when the current phase began
    phase: str = "idle"              # idle | queued | compile | wait (for the device) | run


class Pool:
    """`n` workers for one (kernel, shape): started, replaced when they die or hang, and
    stopped, all from the thread that made the pool."""

    def __init__(self, n: int, device_spec: str | None, kernel: str, shape: tuple, repeat: int,
                 evaluator: str,
                 held: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        """`held`: the tune's StopSignals.held, around each worker's start: Ctrl-C in the
        middle of one cut the pickled task it sends the new process short, and that process
        printed an EOFError traceback."""
        self.ctx = mp.get_context("spawn")
        self.held = held
        self.inbox = Inbox(self.ctx)
        self.args = (device_spec, kernel, tuple(shape), repeat, evaluator)
        self.slots: list[Slot] = []
        try:
            for wid in range(n):
                with self.held():         # a signal meanwhile is raised once the slot is kept
                    self.slots.append(self._start(wid))
        except BaseException:
            self.stop()
            raise

    def _start(self, wid: int) -> Slot:
        read, write = self.ctx.Pipe(duplex=False)
        pipe = self.inbox.open(wid)
        proc = self.ctx.Process(target=worker, args=(wid, os.getpid(), *self.args, read, pipe),
                                daemon=True)
        # one BLAS thread per worker (many run at once); the caller's environment is restored
        saved = {v: os.environ.get(v) for v in _BLAS_THREADS}
        os.environ.update({v: "1" for v in _BLAS_THREADS})
        # the worker starts with Ctrl-C and SIGTERM blocked (a thread's signal mask survives
        # fork and exec) and unblocks them once it ignores them (worker): one that came while
        # it still imported raised a KeyboardInterrupt there, a traceback from every worker
        mask = None
        if _MASKABLE:
            # multiprocessing's resource tracker, started with the first worker, unblocks
            # both after its own start: started before, it leaves this mask alone
            resource_tracker.ensure_running()
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            proc.start()
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            pipe.close()          # the worker has its own copies: its death closes its pipes
            read.close()
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        return Slot(proc, _Tasks(write))

    def replace(self, wid: int) -> None:
        old = self.slots[wid]
        if old.proc.is_alive():
            old.proc.kill()
        old.proc.join(5)
        old.tasks.close()
        with self.held():
            self.slots[wid] = self._start(wid)

    def revive(self) -> None:
        """Replace the workers that died (between the search and the final stages)."""
        for wid, slot in enumerate(self.slots):
            if not slot.proc.is_alive():
                self.replace(wid)

    def stop(self) -> None:
        """Tell every worker to stop, give them STOP_GRACE_S in all, then kill the rest:
        killed even where the wait is cut short (an exception in it), since the workers
        ignore SIGINT and SIGTERM and would outlive the tune."""
        try:
            for slot in self.slots:
                if slot.proc.is_alive():
                    slot.tasks.put(None)
            deadline = time.monotonic() + STOP_GRACE_S
            for slot in self.slots:
                slot.proc.join(max(0.0, deadline - time.monotonic()))
        finally:
            for slot in self.slots:
                if slot.proc.is_alive():
                    slot.proc.kill()
                    slot.proc.join(5)
                slot.tasks.close()
            for wid in list(self.inbox.pipes):
                self.inbox.close(wid)


def ask(slots, results, task: tuple, deadline_s: float, outcome: dict | None = None) -> dict | None:
    """Run one of the workers' whole-device tasks ("remeasure", "splits") in a live worker
    and wait for its answer, which names the task's own index (a late answer to an earlier
    task is dropped); {"error": ...} if it raised, None if no worker is alive, it died, or
    `deadline_s` passed without the answer or an "alive" message from the task. A worker
    that timed out is killed (it is hung: the next task needs another, Pool.revive), and
    `outcome`, where given, gets "timed_out" True."""
    slot = next((s for s in slots if s.proc.is_alive()), None)
    if slot is None:
        return None
    slot.tasks.put(task)
    slot.tasks.put(("go", None))
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        try:
            kind, _, idx, payload = results.get(timeout=0.5)
        except queue_mod.Empty:
            if not slot.proc.is_alive():
                return None
            continue
        if kind == "done" and idx == task[1]:
            return payload
        if kind == "alive" and idx == task[1]:
            deadline = time.time() + deadline_s
    if outcome is not None:
        outcome["timed_out"] = True
    if slot.proc.is_alive():
        slot.proc.kill()
        slot.proc.join(5)
    return None


# ------------------------------------------------------------------ how many workers

def cores() -> int:
    """The CPU cores this process may run on (its affinity mask, where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def host_available() -> int | None:
    """Bytes of host memory to be had: the system's available memory, or what the cgroup
    (a container's limit) leaves, whichever is less; None where neither is known."""
    found = [operands._host_available()]
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
        used = int(open("/sys/fs/cgroup/memory.current").read())
        if limit != "max":
            found.append(max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    found = [f for f in found if f is not None]
    return min(found) if found else None


def default_workers(dev: cl.Device, m: int, n: int, k: int) -> int:
    """One worker per core, as many as three quarters of the host's available memory and
    of the device's global memory hold, each with its own operands (and, on the host, its
    context and modules: WORKER_BASE_BYTES). Compiling is what the workers do in parallel,
    and it is bound by the CPU: on the H200 host, 8 workers of 16 cores gave 4.9
    evaluations/s with compiles of 0.8 s (median), 2026-12-03."""
    most = most_workers(dev, m, n, k)
    return max(1, min(cores(), MAX_WORKERS, cores() if most is None else most[0]))


def most_workers(dev: cl.Device, m: int, n: int, k: int) -> tuple[int, str] | None:
    """How many workers three quarters of the host's available memory and of a GPU's global
    memory hold at this shape, and which of the two bounds it; None where neither is known
    (the host does not say, and the device's memory is the host's)."""
    data = 4 * sum(r * c for r, c in operands.gemm_shapes(m, n, k))
    cpu_device = bool(dev.type & cl.device_type.CPU)
    bounds = []
    avail = host_available()
    if avail is not None:
        per_host = WORKER_BASE_BYTES + data * (6 if cpu_device else 4)
        bounds.append((int(0.75 * avail) // per_host,
                       f"the host's {avail / 2**30:.1f} GiB available (about "
                       f"{per_host / 2**30:.2f} GiB a worker: its OpenCL context, clgemm and "
                       f"the operands)"))
    if not cpu_device:
        bounds.append((int(0.75 * dev.global_mem_size) // max(data, 1),
                       f"the device's {dev.global_mem_size / 2**30:.1f} GiB "
                       f"({data / 2**30:.2f} GiB of operands a worker)"))
    return min(bounds) if bounds else None


def check_fits(dev: cl.Device, kernel: str, m: int, n: int, k: int, nworkers: int) -> None:
    """Refuse, before any worker starts, a shape whose operands cannot be made, which would
    otherwise fail every configuration alike: each worker makes its own A, B and C, on the
    host and on the device (whose memory, for a CPU device, is the host's). A
    matrix-vector kernel is tuned only at a shape of its form (matvec.check_form)."""
    if kernel in kernels.MATVEC:
        matvec.check_form(kernel, m, n)
    operands.check_depth(k)
    if not 1 <= nworkers <= MAX_WORKERS:     # before a list of that many shapes is made
        raise ValueError(f"{nworkers} workers: give 1 to {MAX_WORKERS}")
    try:
        operands.check_fits(dev, operands.gemm_shapes(m, n, k) * nworkers, host=True)
    except ValueError as e:
        raise ValueError(f"kernel {kernel} at {db.shape_key(m, n, k)} cannot be tuned with "
                         f"{nworkers} worker(s), each with its own operands: {e}") from None
    most = most_workers(dev, m, n, k)
    if nworkers > 1 and most is not None and nworkers > most[0]:
        fit = max(most[0], 1)
        raise ValueError(f"{nworkers} workers do not fit at {db.shape_key(m, n, k)}: at most "
                         f"{fit} fit in {most[1]}; give --workers {fit} or fewer")
