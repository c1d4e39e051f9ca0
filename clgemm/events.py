"""What a gemm() call waits for, and which events it leaves on its output Array.

clgemm runs on in-order queues only (operands.check_queue), where whatever was enqueued
earlier runs before the call's kernels without being named. So of the pending events that
pyopencl Arrays carry (.events), a call waits only for those its queue does not order by
itself: events of another queue, and user events, which belong to none. Naming the queue's
own events in a wait list ordered nothing and grew with them.

And the output: pyopencl's Array.add_event appends, and past 12 events blocks the host on
the oldest four, so calls into one c piled up events and every fourth one made the host
wait. Each event c carried when a call began lies before that call's last event (on its
queue, or in its wait list), so the last event stands in for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyopencl as cl


# The queue of each event seen, as (event, queue handle or 0 for a user event), by id():
# an Array keeps the events of its creation for good, so every call on it meets them again,
# and asking the driver costs ~0.4 us an event (a Python wrapper made for its queue), which
# showed as 2-3 us a call on the H200. Holding the event keeps its id from being reused.
_queue_of: dict[int, tuple[cl.Event, int]] = {}
_QUEUE_OF_SIZE = 256


def _queue_handle(e: cl.Event) -> int:
    seen = _queue_of.get(id(e))
    if seen is not None and seen[0] is e:
        return seen[1]
    q = e.command_queue                       # None for a user event
    handle = q.int_ptr if q is not None else 0
    if len(_queue_of) >= _QUEUE_OF_SIZE:
        _queue_of.clear()
    _queue_of[id(e)] = (e, handle)
    return handle


def foreign(queue: cl.CommandQueue, arrays: Iterable, own: cl.Event | None = None) -> list | None:
    """The events pending on `arrays` (pyopencl Arrays, or None) that `queue` does not
    order by itself, each once (a view shares its list with the Array it views); None when
    there are none. `own` is an event known to be on `queue`, the last a plan enqueued
    there, passed over without a lookup. Another queue's events already complete are taken
    out of the Arrays' lists (in place) rather than waited for: operands uploaded on one
    queue and multiplied on another otherwise named their finished uploads in every call's
    wait list, 4.5 us of host time a call on pocl (2026-12-05), and kept repeated calls off
    gemm()'s express lane."""
    out = None
    mine = None
    for x in arrays:
        if x is None:
            continue
        for e in tuple(x.events):
            if e is own:
                continue
            if mine is None:
                mine = queue.int_ptr
            if _queue_handle(e) == mine:
                continue
            status = e.command_execution_status
            if status == _COMPLETE:
                try:
                    x.events.remove(e)
                except ValueError:      # taken out meanwhile (another call, add_event)
                    pass
                continue
            if status < 0:              # waited for, it held the call back for good
                raise ValueError(f"an operand waits for an event that ended in error "
                                 f"(status {status}): its contents are not there to "
                                 f"multiply; remove the event from the Array's .events "
                                 f"once its contents are written again")
            if out is None:
                out = [e]
            elif e not in out:
                out.append(e)
    return out


_COMPLETE = cl.command_execution_status.COMPLETE


def forget(out, seen: Sequence[cl.Event]) -> None:
    """Drop from the Array `out`'s events those in `seen` (the ones it carried when the
    call began), once the call has recorded an event that follows them all. In place: a
    view and the Array it views share one list, and an event another thread added since
    stays."""
    events = out.events
    for e in seen:
        try:
            events.remove(e)
        except ValueError:      # taken out meanwhile (pyopencl's add_event, another call)
            pass
