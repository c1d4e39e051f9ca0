"""Checking user matrices and moving them into row-major device buffers whose leading
dimension suits the kernel (vector kernels need it to be a multiple of WIDTH); device
matrices that are views of larger ones (a block, as BLAS users pass them) as Views."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import build, events

F32 = np.dtype(np.float32)
F32_MAX = float(np.finfo(np.float32).max)
F32_ZERO = 2.0 ** -150    # a nonzero alpha or beta this small or smaller is 0 in float32
MAX_ELEMENTS = 2**31 - 1     # kernels index with 32-bit ints
# the depth k a product may have: the kernels' 32-bit counters along k (tile starts, a
# slice's rows, matvec.cl's SLICE and STREAM) step up to a tile or UNROLL spans past k
MAX_DEPTH = 2**30


@dataclass
class Matrix:
    """A row-major float32 matrix in a device buffer: rows x cols, leading dimension ld,
    starting `offset` floats into the buffer. Columns cols..ld-1 are padding and hold zeros
    where clgemm allocated them; in a caller's matrix they belong to its neighbours."""
    buf: cl.Buffer
    rows: int
    cols: int
    ld: int
    offset: int = 0

    def whole_vectors(self, align: int) -> bool:
        """Whether its rows are whole vectors of `align` floats (width and leading dimension
        multiples of it): what the kernels' vector loads read where it lies."""
        return self.cols % align == 0 and self.ld % align == 0


@dataclass(frozen=True)
class View:
    """A device matrix as a product reads or writes it: `mem` is its memory as a row-major
    Matrix, holding the matrix itself or, when `transposed`, its transpose (a Fortran-ordered
    matrix, or a block taken through .T). `port` says which of the product's operands it
    is (0: op(A), 1: op(B), 2: C), so that a cached layout can point its launches at the
    next call's matrices."""
    mem: Matrix
    transposed: bool
    port: int | None = None

    @property
    def shape(self) -> tuple[int, int]:
        m = self.mem
        return (m.cols, m.rows) if self.transposed else (m.rows, m.cols)

    @property
    def T(self) -> View:
        return replace(self, transposed=not self.transposed)


def check(x, name: str, queue: cl.CommandQueue, empty: bool = False,
          views: bool = False) -> None:
    """Raise TypeError/ValueError naming what is wrong with a user matrix; a zero-sized
    one is refused unless `empty` (gemm() gives BLAS's answers there), a pyopencl Array
    view (an offset, or rows or columns apart) unless `views` and its layout is one
    memory_layout takes."""
    if isinstance(x, cla.Array):
        if x.context != queue.context:
            raise TypeError(f"{name} is a pyopencl Array from another OpenCL context than the queue's")
    elif not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or a pyopencl.array.Array, "
                        f"not {type(x).__name__}")
    elif isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; clgemm would ignore its mask (fill it first, "
                        f"e.g. {name}.filled(0))")
    if x.dtype != F32:
        raise TypeError(f"{name} has dtype {x.dtype}; clgemm is float32 only "
                        f"(convert explicitly, e.g. {name}.astype(numpy.float32))")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {x.ndim}-D with shape {x.shape}")
    if 0 in x.shape and not empty:
        raise ValueError(f"{name} has a zero-sized dimension {x.shape}; every dimension must be >= 1")
    if isinstance(x, cla.Array) and (x.offset != 0 or not x.flags.forc):
        if not views:
            raise ValueError(f"{name} is a pyopencl Array view (offset or strides); pass a "
                             f"contiguous copy ({name}.copy())")
        memory_layout(x, name)


def memory_layout(x: cla.Array, name: str) -> tuple[bool, int]:
    """(transposed, ld) of a 2-D float32 Array: its memory holds x row-major (x.T when
    transposed), rows ld floats apart, as BLAS's leading dimension. A block of a row-major
    matrix, big[r0:r1, c0:c1], has strides (4*ld, 4); its transpose, or a block of a
    Fortran-ordered one, (4, 4*ld). Anything else is refused, naming why: the kernels read
    a row (or column) as consecutive floats."""
    r, c = x.shape
    s0, s1 = x.strides
    if x.offset % 4 or s0 % 4 or s1 % 4:
        raise ValueError(f"{name} is a pyopencl Array view whose offset ({x.offset}) or strides "
                         f"{x.strides} are not whole float32 elements")
    e0, e1 = s0 // 4, s1 // 4
    rows_whole, cols_whole = c <= 1 or e1 == 1, r <= 1 or e0 == 1
    row_major = rows_whole and (r <= 1 or e0 >= c)
    col_major = cols_whole and (c <= 1 or e1 >= r)
    if row_major and not (col_major and is_transposed(x)):   # a vector can be either
        return False, (e0 if r > 1 else c)
    if col_major:
        return True, (e1 if c > 1 else r)
    why = ("it has negative strides" if min(e0, e1) < 0
           else "its rows or columns overlap" if rows_whole or cols_whole
           else "neither its rows nor its columns are contiguous")
    raise ValueError(f"{name} is a pyopencl Array view with strides {x.strides} (bytes) for shape "
                     f"{x.shape}: {why}; clgemm takes blocks whose rows (strides (4*ld, 4)) or "
                     f"columns (strides (4, 4*ld)) are contiguous, ld at least their length")


def base_align(device: cl.Device) -> int:
    """Floats that a sub-buffer's origin must be a multiple of: the device's
    CL_DEVICE_MEM_BASE_ADDR_ALIGN (in bits; 1024 on pocl 3.0), kept a multiple of a
    float4."""
    return math.lcm(max(1, device.mem_base_addr_align // 32), 4)


def root(buf) -> tuple[cl.Buffer, int]:
    """(the buffer that `buf` is a sub-buffer of, or buf itself; buf's byte offset in it).
    OpenCL makes no sub-buffer of a sub-buffer, and two Arrays over sub-buffers of one
    buffer share memory that their own buffer objects do not show."""
    b = buf if isinstance(buf, cl.Buffer) else cl.Buffer.from_int_ptr(buf.int_ptr)
    try:
        parent = b.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT)
        if parent is not None:
            return cl.Buffer.from_int_ptr(parent.int_ptr), b.get_info(cl.mem_info.OFFSET)
    except cl.Error:
        pass
    return b, 0


def device_view(x: cla.Array, name: str, align: int) -> View:
    """x as a View. A dense array at the start of its buffer is taken as it is; any other
    Array gets a sub-buffer of its own (under 1 us on pocl), starting at the multiple of
    `align` floats (base_align) nearest below its first element, which `mem.offset` then
    lies past: OpenCL refuses sub-buffers at other origins, and the kernels take no offset.
    Its own buffer object also tells a cached layout's launches apart from those of another
    block of the same matrix. gemm() drops a call's sub-buffers when it returns: OpenCL
    deletes a memory object only once the commands enqueued with it are done
    (clReleaseMemObject), and each holds its parent buffer meanwhile."""
    t, ld = memory_layout(x, name)
    rows, cols = (x.shape[1], x.shape[0]) if t else x.shape
    off = x.offset // 4
    if not off and ld == cols:
        return View(Matrix(x.base_data, rows, cols, ld), t)
    base, start = root(x.base_data)          # a sub-buffer's block: one of its parent's
    off += start // 4
    res = off % align
    reach = res + (rows - 1) * ld + cols     # floats from the sub-buffer's origin
    if reach > MAX_ELEMENTS:
        raise ValueError(f"{name} is a block that spans {reach} floats of its buffer (rows "
                         f"{ld} floats apart); clgemm kernels index with 32-bit integers and "
                         f"take at most {MAX_ELEMENTS}")
    sub = base.get_sub_region(4 * (off - res), 4 * reach)
    return View(Matrix(sub, rows, cols, ld, res), t)


def refuse_in_place(a, b, c) -> None:
    """GEMM reads a and b while it writes c: c may not share an element with either
    (blocks of one matrix that lie apart may be passed together: overlaps)."""
    if c is not None and (overlaps(c, a) or overlaps(c, b)):
        raise ValueError("c overlaps a or b in memory; GEMM cannot run in place over an input")


def overlaps(x, y) -> bool:
    """Whether two matrices share an element (c written over a or b). Blocks of one device
    matrix, as BLAS users pass them (C22 -= A21 @ A12), do not when their elements lie
    apart: each is rows of `cols` floats `ld` apart in the buffer, and the rows of two
    such blocks are compared exactly, whatever their leading dimensions."""
    if not (isinstance(x, cla.Array) and isinstance(y, cla.Array)) or 0 in (x.size, y.size):
        return False
    starts = (0, 0)
    if x.base_data.int_ptr != y.base_data.int_ptr:   # sub-buffers of one buffer may meet
        (rx, sx), (ry, sy) = root(x.base_data), root(y.base_data)
        if rx.int_ptr != ry.int_ptr:
            return False
        starts = (sx, sy)
    spans = []
    for v, start in zip((x, y), starts):
        t, ld = memory_layout(v, "an operand")      # checked before: does not raise
        rows, cols = (v.shape[1], v.shape[0]) if t else v.shape
        if rows == 1 or ld == cols:                  # one run of floats
            rows, cols, ld = 1, (rows - 1) * ld + cols, 0
        spans.append(((start + v.offset) // 4, rows, cols, ld))
    (o1, r1, c1, l1), (o2, r2, c2, l2) = sorted(spans, key=lambda s: s[1])
    if r1 == 1 or l1 == l2:      # one lattice of rows: row j of the second less row i of the
        return _rows_meet(o2 - o1, c1, c2, l2, r1, r2)    # first, t = j - i, meet
    firsts = o1 + l1 * np.arange(r1, dtype=np.int64)      # else each row of the fewer
    return bool(_rows_meet(o2 - firsts, c1, c2, l2, 1, r2).any())


def _rows_meet(d, c1: int, c2: int, ld: int, r1: int, r2: int):
    """Whether rows i < r1 of c1 floats at 0 + i*ld and rows j < r2 of c2 floats at d + j*ld
    share a float: some t = j - i in [1 - r1, r2 - 1] has -c2 < d + t*ld < c1 (numpy `d`
    elementwise, with r1 = 1)."""
    if ld == 0:               # two runs (a one-row second has no rows to step over)
        return (-c2 < d) & (d < c1)
    lo = np.maximum((-c2 - d) // ld + 1, 1 - r1)     # t > (-c2 - d) / ld
    hi = np.minimum(-((d - c1) // ld) - 1, r2 - 1)   # t < (c1 - d) / ld
    return lo <= hi


def scalar(x: object, name: str) -> float:
    """alpha or beta as a float the kernels can take (they compute in float32)."""
    if type(x) is float and (-F32_MAX <= x <= F32_MAX and not -F32_ZERO <= x <= F32_ZERO
                             or x == 0.0):
        return x                                         # the common case, on every call
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(x).__name__} {x!r}")
    try:
        v = float(x)
    except OverflowError:          # an int beyond even float64's range
        v = math.inf if x > 0 else -math.inf
        shown = f"{'-' if x < 0 else ''}(an integer of {int(x).bit_length()} bits)"
    else:
        shown = repr(v)
    if abs(v) > F32_MAX and (math.isfinite(v) or isinstance(x, numbers.Integral)):
        raise ValueError(f"{name}={shown} is beyond float32's range (the kernels compute in "
                         f"float32)")
    if v and abs(v) <= F32_ZERO:    # (it was taken as 0 without a word)
        raise ValueError(f"{name}={shown} is below float32's range: it is 0 in float32 (the "
                         f"kernels compute in float32); give 0 if 0 is meant")
    return v


def flag(x: object, name: str) -> bool:
    """A yes/no option as a bool: True or False (numpy's too), or the integers 1 and 0 as
    scipy's BLAS wrappers take them. Anything else is refused: BLAS's "N" or "T" read as
    truthy would transpose a square operand without a word."""
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, numbers.Integral) and x in (0, 1)):
        return bool(x)
    raise TypeError(f"{name} must be True or False, not {type(x).__name__} {x!r}")


def check_queue(queue: object) -> None:
    """Refuse what clgemm cannot run on: its launches (a transpose, then the product, then a
    copy out) follow one another only because an in-order queue runs them in order."""
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
    if queue.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
        raise ValueError("clgemm needs an in-order command queue; this one was created with "
                         "OUT_OF_ORDER_EXEC_MODE_ENABLE")


def wait_for_arrays(queue: cl.CommandQueue, *xs) -> None:
    """Make `queue` wait for the work still pending on pyopencl Arrays among xs that it
    does not order itself (their .events from another queue, or user events), as pyopencl's
    own Array operations do, without blocking the host (clgemm.events)."""
    pending = events.foreign(queue, (x for x in xs if isinstance(x, cla.Array)))
    if pending:
        cl.enqueue_barrier(queue, wait_for=pending)


def mark_written(queue: cl.CommandQueue, *xs) -> None:
    """Record on Arrays that clgemm wrote that the write completes with the work enqueued on
    `queue` so far: pyopencl operations on other queues wait for an Array's events."""
    arrays = [x for x in xs if isinstance(x, cla.Array)]
    if arrays:
        done = cl.enqueue_marker(queue)
        for x in arrays:
            x.add_event(done)


def is_transposed(x) -> bool:
    """True when x's memory is the row-major layout of x.T (Fortran order)."""
    if isinstance(x, View):
        return x.transposed
    return bool(x.flags.f_contiguous and not x.flags.c_contiguous)


def rounded(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


Allocator = Callable[[int], object]


def _buffer(queue: cl.CommandQueue, nbytes: int, allocator: Allocator | None):
    return (allocator(nbytes) if allocator is not None
            else cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes))


def zeros(queue: cl.CommandQueue, rows: int, cols: int, ld: int,
          allocator: Allocator | None = None) -> Matrix:
    buf = _buffer(queue, rows * ld * 4, allocator)
    cl.enqueue_fill_buffer(queue, buf, np.float32(0), 0, rows * ld * 4)
    return Matrix(buf, rows, cols, ld)


def empty(queue: cl.CommandQueue, rows: int, cols: int, ld: int,
          allocator: Allocator | None = None) -> Matrix:
    return Matrix(_buffer(queue, rows * ld * 4, allocator), rows, cols, ld)


def poison(queue: cl.CommandQueue, m: Matrix) -> Matrix:
    """Fill with NaN, so that an element a kernel fails to write cannot pass a check."""
    cl.enqueue_fill_buffer(queue, m.buf, np.float32(np.nan), 0, m.rows * m.ld * 4)
    return m


def raw(queue: cl.CommandQueue, x, align: int, shape: tuple[int, int] | None = None,
        allocator: Allocator | None = None) -> Matrix:
    """x's own memory as a row-major device matrix: x itself, or x.T when x is Fortran-ordered.
    Copies only when it must: a host upload, or padding the leading dimension to `align`.
    A host matrix given a larger `shape` (whole tiles) is written straight into the top-left
    corner of a zero-filled buffer that large, which is returned."""
    t = is_transposed(x)
    rows, cols = (x.shape[1], x.shape[0]) if t else x.shape
    ld = rounded(cols, align)
    mem = np.ascontiguousarray(x.T if t else x) if isinstance(x, np.ndarray) else None
    if mem is not None and shape is not None and shape != (rows, cols):
        out = zeros(queue, shape[0], shape[1], shape[1], allocator)
    elif ld != cols:
        out = zeros(queue, rows, cols, ld, allocator)
    elif mem is not None:
        out = empty(queue, rows, cols, ld, allocator)
    else:
        return Matrix(x.base_data, rows, cols, ld)
    if mem is not None:
        upload(queue, mem, out)
    else:
        copy_rect(queue, x.base_data, cols, out.buf, out.ld, rows, cols)
    return out


def upload(queue: cl.CommandQueue, host: np.ndarray, dst: Matrix) -> None:
    """A C-contiguous host matrix into the top-left corner of dst: one rectangular write
    at dst's leading dimension (blocking, so the host array may go away after)."""
    rows, cols = host.shape
    cl.enqueue_copy(queue, dst.buf, host, buffer_origin=(0, 0, 0), host_origin=(0, 0, 0),
                    region=(cols * 4, rows, 1), buffer_pitches=(dst.ld * 4, 0),
                    host_pitches=(cols * 4, 0), is_blocking=True)


def copy_rect(queue, src: cl.Buffer, src_ld: int, dst: cl.Buffer, dst_ld: int,
              rows: int, cols: int, src_off: int = 0, dst_off: int = 0) -> cl.Event:
    """Copy a rows x cols block between buffers with different leading dimensions, starting
    src_off and dst_off floats into them."""
    return bind_copy(queue, src, src_ld, dst, dst_ld, rows, cols, src_off, dst_off)()


COPY_OFFSETS = (3, 6)     # copy_rows's arguments src_off and dst_off, in vectors (copy_width)
# copy_pair's, for its first and its second block
COPY_PAIR_OFFSETS = ((3, 6), (11, 14))

# a copy_rect block: (src, src_ld, dst, dst_ld, rows, cols, src_off, dst_off)
Block = tuple[cl.Buffer, int, cl.Buffer, int, int, int, int, int]


def copy_width(cols: int, *lds_and_offsets: int) -> int:
    """Floats copy_rows moves a work-item: 4 when the width and every leading dimension and
    offset are multiples of 4 (16-byte aligned float4 accesses), else 1."""
    return 4 if all(v % 4 == 0 for v in (cols, *lds_and_offsets)) else 1


def block_width(block: Block) -> int:
    """copy_width of a block; 0 where both sides are dense, which one flat copy moves."""
    src, src_ld, dst, dst_ld, rows, cols, src_off, dst_off = block
    if src_ld == dst_ld == cols and not src_off and not dst_off:
        return 0
    return copy_width(cols, src_ld, dst_ld, src_off, dst_off)


def _copy_launch(queue, name: str, blocks: Sequence[Block]) -> build.Bound:
    """copy_rows (one block) or copy_pair (two of one copy_width) bound with its launch: the
    scalar build moves 4 floats a work-item, in groups of 4 rows where the device takes
    groups of 256; copy_pair's launch holds the first block's groups, then the second's."""
    vw = block_width(blocks[0])
    per = 4 if vw == 1 else 1
    ly = per if queue.device.max_work_group_size >= 64 * per else 1
    prg = build.helper(queue.context, "copy_rows.cl", {"VW": vw, "PER": per})
    args = []
    for src, src_ld, dst, dst_ld, rows, cols, src_off, dst_off in blocks:
        args += [np.int32(rows), np.int32(cols // vw), src, np.int32(src_off // vw),
                 np.int32(src_ld // vw), dst, np.int32(dst_off // vw), np.int32(dst_ld // vw)]
    # groups along a row (64 work-items, `per` vectors each) by groups of `ly` rows
    grid = [(-(-(cols // vw) // (64 * per)), -(-rows // ly)) for *_, rows, cols, _, _ in blocks]
    if len(blocks) == 1:
        (gx, gy), = grid
        return build.bind(queue, prg, name, (gx * 64, gy * ly), (64, ly), args)
    # copy_pair: every group of both blocks along dimension 0
    return build.bind(queue, prg, name, (sum(gx * gy for gx, gy in grid) * 64, ly), (64, ly), args)


def bind_copy(queue, src: cl.Buffer, src_ld: int, dst: cl.Buffer, dst_ld: int,
              rows: int, cols: int, src_off: int = 0,
              dst_off: int = 0) -> Callable[..., cl.Event]:
    """copy_rect as a call that only enqueues: one flat copy when both sides are dense, else
    the copy_rows kernel, bound once (build.bind), because NVIDIA's clEnqueueCopyBufferRect
    moved 1.6 TB/s on the H200 where that kernel moves 2.7 and a flat copy 3.8. Its offsets
    are arguments (COPY_OFFSETS) that a cached layout sets per call."""
    block = (src, src_ld, dst, dst_ld, rows, cols, src_off, dst_off)
    if not block_width(block):
        return build.BoundCopy(queue, [rows * cols * 4, src, dst])
    return _copy_launch(queue, "copy_rows", [block])


def bind_copy_pair(queue, first: Block, second: Block) -> build.Bound | None:
    """Two copy_rect blocks as one launch of copy_pair (offsets: COPY_PAIR_OFFSETS), where
    both take copy_rows' same build (None where one is a flat copy or their widths differ):
    the host's enqueue of a launch costs more than a small copy (copy_rows.cl)."""
    vw = block_width(first)
    if not vw or block_width(second) != vw:
        return None
    return _copy_launch(queue, "copy_pair", [first, second])


def to_host(queue: cl.CommandQueue, m: Matrix) -> np.ndarray:
    host = np.empty((m.rows, m.ld), F32)
    cl.enqueue_copy(queue, host, m.buf)
    return host if m.ld == m.cols else np.ascontiguousarray(host[:, :m.cols])


def rows_to_host(queue: cl.CommandQueue, m: Matrix, rows) -> np.ndarray:
    """Only the given rows of a device matrix: a check need not read all of a large C."""
    out = np.empty((len(rows), m.cols), F32)
    for i, r in enumerate(rows):
        cl.enqueue_copy(queue, out[i], m.buf, src_offset=int(r) * m.ld * 4)
    return out


def dense(queue: cl.CommandQueue, m: Matrix) -> Matrix:
    """A copy of m in a new buffer of its own, at its start, rows exactly m.cols apart."""
    out = empty(queue, m.rows, m.cols, m.cols)
    copy_rect(queue, m.buf, m.ld, out.buf, out.ld, m.rows, m.cols, src_off=m.offset)
    return out


def to_array(queue: cl.CommandQueue, m: Matrix, transposed: bool) -> cla.Array:
    """A pyopencl Array of the matrix (or of its transpose, Fortran-ordered), no host trip."""
    if m.ld != m.cols or m.offset:
        m = dense(queue, m)
    if transposed:
        return cla.Array(queue, (m.cols, m.rows), F32, order="F", data=m.buf)
    return cla.Array(queue, (m.rows, m.cols), F32, data=m.buf)


def _host_available() -> int | None:
    """Bytes the kernel says can be had without swapping (Linux); None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_depth(k: int) -> None:
    """Refuse a product deeper than the kernels' 32-bit counters along k can run over (only
    a 1 x 1 output or a vector-width-1 kernel gets here: else B's k x 4 copy is refused)."""
    if k >= MAX_DEPTH:
        raise ValueError(f"k={k}: clgemm kernels count along k with 32-bit integers, which "
                         f"step up to a tile or a work-group's span past k; k must be below "
                         f"2^30 = {MAX_DEPTH}")


def gemm_shapes(m: int, n: int, k: int) -> list[tuple[int, int]]:
    """A (M x K), B (K x N) and C (M x N) of a product, as check_fits takes them."""
    return [(m, k), (k, n), (m, n)]


def check_fits(device: cl.Device, shapes: list[tuple[int, int]], host: bool = False) -> None:
    """Refuse, before allocating anything, matrices the device cannot hold or index. With
    `host`, also those whose host copies the measuring harness (random inputs made in float64
    first, results read back; on a CPU device the device buffers too) would not fit in the
    host's available memory: such a run would be killed by the system, not fail cleanly."""
    total = 0
    for rows, ld in shapes:
        n = rows * ld
        if n > MAX_ELEMENTS:
            raise ValueError(f"a {rows}x{ld} matrix has {n} elements; clgemm kernels index with "
                             f"32-bit integers and take at most {MAX_ELEMENTS}")
        if n * 4 > device.max_mem_alloc_size:
            raise ValueError(f"a {rows}x{ld} float32 matrix needs {n * 4 / 2**20:.0f} MiB, more than "
                             f"the device's maximum allocation of "
                             f"{device.max_mem_alloc_size / 2**20:.0f} MiB")
        total += n * 4
    if total > device.global_mem_size:
        raise ValueError(f"the matrices need {total / 2**20:.0f} MiB together, more than the device's "
                         f"{device.global_mem_size / 2**20:.0f} MiB of global memory")
    avail = _host_available() if host else None
    cpu = bool(device.type & cl.device_type.CPU)
    need = total * (6 if cpu else 4)
    if avail is not None and need > avail:
        raise ValueError(f"measuring these matrices needs about {need / 2**30:.1f} GiB of host memory "
                         f"(inputs made in float64, results read back"
                         f"{', device buffers in host memory' if cpu else ''}); "
                         f"{avail / 2**30:.1f} GiB is available")
