"""Facts of a device that its query misreports, found by running kernels on it: each is
probed once per device and driver and kept in the clgemm home (FACTS_FILE), so that a
process asks the file, not the device. device.local_mem_limit is their user."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from . import store

FACTS_FILE = "device_facts.json"


def recorded(dev, name: str, probe: Callable[[cl.Device], int]) -> int:
    """A probed fact of (device, driver) from the clgemm home's device_facts.json; probed
    and recorded there when it is missing (a file that cannot be read or written only
    costs a probe per process)."""
    path = store.home() / FACTS_FILE
    key = f"{dev.name.strip()} | {dev.driver_version.strip()}"
    try:
        doc = json.loads(path.read_text())
        value = doc[key][name]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = int(probe(dev))
    try:
        try:
            doc = json.loads(path.read_text())
            doc = doc if isinstance(doc, dict) else {}
        except (OSError, ValueError):
            doc = {}
        entry = doc.get(key) if isinstance(doc.get(key), dict) else {}
        doc[key] = entry | {name: value, f"{name}_probed": datetime.date.today().isoformat()}
        store.write_atomic(path, doc)
    except OSError:
        pass
    return value


_PROBE = """
__kernel void probe(__global uint *out, const uint words) {   // words = WORDS, at run
    __local uint buf[WORDS];                                   // time: loops not unrolled
    const uint n = get_local_size(0), i = get_local_id(0);
    for (uint j = i; j < words; j += n) buf[j] = j * 2654435761u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint s = 0;
    for (uint j = i; j < words; j += n) s += buf[words - 1 - j];
    out[i] = s;
}
"""


def local_mem_runs(context: cl.Context, nbytes: int, threads: int = 256) -> bool:
    """Whether a kernel with a static __local array of `nbytes` compiles, launches and
    reads back what it wrote: each work-item sums (mod 2^32) a strided part of the array
    that other work-items wrote, in reverse order."""
    words = nbytes // 4
    queue = cl.CommandQueue(context)
    try:
        prg = cl.Program(context, _PROBE).build(options=[f"-DWORDS={words}"])
        out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4 * threads)
        prg.probe(queue, (threads,), (threads,), out, np.uint32(words))
        got = np.empty(threads, np.uint32)
        cl.enqueue_copy(queue, got, out)
        queue.finish()
    except cl.Error:
        return False
    j = np.arange(words, dtype=np.int64)
    values = (words - 1 - j) * 2654435761 % 2**32
    sums = np.bincount(j % threads, weights=values, minlength=threads)   # exact below 2^53
    return bool(np.array_equal(got, (sums.astype(np.int64) % 2**32).astype(np.uint32)))


def local_mem(dev, low: int | None = None, top: int = 256 * 1024, step: int = 1024) -> int:
    """The largest static __local array (bytes, a multiple of `step`, at most `top`) that a
    kernel on `dev` runs with, by bisection from `low` (CL_DEVICE_LOCAL_MEM_SIZE by
    default; about 8 builds). `low` itself where even that does not run."""
    low = int(dev.local_mem_size) if low is None else low
    context = cl.Context([dev])
    lo, hi = low // step, top // step
    if hi <= lo:
        return low
    if local_mem_runs(context, hi * step):
        return hi * step
    if not local_mem_runs(context, lo * step):
        return low
    while hi - lo > 1:                    # lo runs, hi does not
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if local_mem_runs(context, mid * step) else (lo, mid)
    return lo * step
