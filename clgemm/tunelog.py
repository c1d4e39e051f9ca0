"""One tune's log: its JSON Lines records, validated as they are read (read_log) and each
appended as it comes (append_log), the lock that keeps a second identical tune from
running beside it, and the result that the tune hands back (with its summary and its
export in the T4 format)."""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from . import db, entries, kernels, store


STATUSES = ("ok", "wrong", "rejected", "compile_error", "launch_error", "timeout", "crashed")


def read_log(path: Path, kernel: kernels.Kernel) -> Iterator[dict]:
    """Valid log lines; anything else (a truncated last line after a kill, a hand edit) is
    skipped with a warning naming the file."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            try:
                rec = json.loads(raw)
                ok = (isinstance(rec, dict) and rec.get("schema") == entries.SCHEMA
                      and rec.get("status") in STATUSES)
                params = entries.valid_params(kernel, rec.get("params")) if ok else None
                if params is None:
                    raise ValueError("not a valid record")
                if rec["status"] == "ok" and not all(entries.is_positive(rec.get(f)) for f in
                                                     ("ms_median", "ms_min", "ms_max", "gflops")):
                    raise ValueError("timings missing or not positive")
                # what the T4 export and the report read as they are
                if not ((entries.is_number(rec.get("compile_s", 0)) and rec.get("compile_s", 0) >= 0)
                        and entries.is_number(rec.get("timeout_s", 0))
                        and (isinstance(rec.get("ms", []), list)
                             and all(entries.is_positive(t) for t in rec.get("ms", [])))
                        and all(isinstance(rec.get(f, ""), str) for f in ("at", "error"))):
                    raise ValueError("compile_s, timeout_s, ms, at or error of the wrong type")
            except (ValueError, RecursionError) as e:   # JSONDecodeError is a ValueError
                why = "nested too deeply" if isinstance(e, RecursionError) else e
                warnings.warn(f"{path}: line {no} ignored ({why})", entries.DataWarning, stacklevel=2)
                continue
            rec["params"] = params
            yield rec


def append_log(path: Path, record: Mapping) -> None:
    """Append one record and push it to disk before returning: a kill -9 after this call
    cannot lose it, and one during it leaves at most a truncated last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"schema": entries.SCHEMA, **record}, separators=(",", ":")) + "\n"
    # locked: the look at the last byte and the write are one step for other writers
    with store.locked(path, "the tune log's append"), open(path, "ab+") as f:
        if f.tell() > 0:                 # a torn last line must not swallow this record
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write(line.encode())
        f.flush()
        os.fsync(f.fileno())


class TuneBusy(RuntimeError):
    """Another tune of the same kernel at the same shape on the same device is running."""


class TuneLog:
    """The JSON Lines log of (device, kernel, shape), held for one tune: `open` takes the
    tune's lock or refuses at once (TuneBusy); two identical tunes would each measure every
    configuration and double each other's device load, and the second one would resume
    nothing the first measures meanwhile. A killed holder's lock goes with it."""

    def __init__(self, dev, kern: kernels.Kernel, shape: tuple[int, int, int]):
        self.dev, self.kern, self.shape = dev, kern, tuple(shape)
        self.path = db.log_path(dev, kern.key, *shape)
        self._lock = store.lock(self.path, "tune-", timeout=0)
        self._owner = Path(str(self._lock.lock_file) + ".owner")
        self.records: list[dict] = []
        self.retried: list[dict] = []   # resumed timeouts, measured again first
        self.resumed = 0

    def open(self, fresh: bool = False, timeout: float | None = None) -> TuneLog:
        """Take the lock and resume the log: each configuration's last record, less those
        that ran out of a shorter `timeout` than this tune's (timeout_s), which are measured
        again: a rerun with a longer --timeout retried none of them."""
        try:
            self._lock.acquire()
        except filelock.Timeout:
            raise TuneBusy(self._busy()) from None
        try:
            self._owner.write_text(f"{os.getpid()} {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            if fresh and self.path.exists():
                store.move_aside(self.path)
            last = {key(r["params"]): r for r in read_log(self.path, self.kern)}.values()
            again = [r["status"] == "timeout" and timeout is not None
                     and r.get("timeout_s", 0) < timeout for r in last]
            self.records = [r for r, a in zip(last, again) if not a]
            self.retried = [r for r, a in zip(last, again) if a]
        except BaseException:
            self.close()
            raise
        self.resumed = len(self.records)
        return self

    def _busy(self) -> str:
        try:
            pid, _, since = self._owner.read_text().strip().partition(" ")
            who = f" (process {pid}, since {since})"
        except OSError:
            who = ""
        return (f"another tune of kernel {self.kern.key} at {db.shape_key(*self.shape)} on "
                f"{db.device_key(self.dev)} is running{who}; it would measure the same "
                f"configurations and double the device's load: wait for it to end, then run "
                f"this again to resume from its log {self.path}")

    def close(self) -> None:
        if self._lock.is_locked:
            self._owner.unlink(missing_ok=True)
            self._lock.release()

    def __enter__(self) -> TuneLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def unretried(self) -> list[dict]:
        """The old records of the resumed timeouts not measured again (yet): the T4 export
        keeps them."""
        done = {key(r["params"]) for r in self.records}
        return [r for r in self.retried if key(r["params"]) not in done]

    def append(self, record: dict) -> dict:
        """Stamp, write (flushed and fsynced) and keep one finished evaluation."""
        rec = {**record, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        append_log(self.path, rec)
        self.records.append(rec)
        return rec

    def done(self) -> dict[tuple, float | None]:
        """{configuration: GFLOPS or None (failed)} for every record: what not to measure
        again, and what a model starts from."""
        return {key(r["params"]): (r.get("gflops") if r["status"] == "ok" else None)
                for r in self.records}

    def best(self) -> dict | None:
        return max((r for r in self.records if r["status"] == "ok"), key=lambda r: r["gflops"],
                   default=None)

    def failures(self) -> int:
        return sum(r["status"] != "ok" for r in self.records)

    def of(self, params: Mapping[str, int]) -> dict | None:
        """The record of `params` measured correct, if there is one."""
        return next((r for r in self.records if r["status"] == "ok" and r["params"] == params), None)


def key(p: Mapping[str, int]) -> tuple:
    """A configuration as a hashable key."""
    return tuple(sorted(p.items()))


def read_records(path: Path, kern: kernels.Kernel, quiet: bool = False) -> list[dict]:
    """A log's valid records (read_log); with `quiet`, without the warnings for bad lines."""
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", entries.DataWarning)
        return list(read_log(Path(path), kern))


@dataclass
class Result:
    kernel: str
    shape: tuple
    device: str
    log: str
    counts: dict
    records: list[dict]
    best: dict | None
    finalists: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    evaluated_now: int = 0
    db: str | None = None
    split_stage: list[dict] = field(default_factory=list)
    # the configurations the winner is compared with, timed in the finalists' rounds:
    # {"defaults": {...}, "before": {...}}, each with params, gflops and (before) where from
    references: dict = field(default_factory=dict)
    stopped_by: str = ""            # budget | space | time limit
    note: str = ""                  # what the user should know (a fallback, say)
    kept: str = ""                  # why the database was left as it was, despite a winner
    why_none: str = ""              # why there is no winner, where the finals say it best
    # resumed timeouts this run was to measure again and did not (it stopped first): their
    # old records, which the T4 export keeps
    unretried: list[dict] = field(default_factory=list)

    def exported(self) -> list[dict]:
        """Every configuration's last record, for --export-t4: this run's, and the old
        record of a timeout it was to retry and did not."""
        return self.records + self.unretried

    @property
    def throughput(self) -> float:
        return self.evaluated_now / self.seconds if self.seconds else 0.0

    def no_winner_reason(self) -> str | None:
        if self.best is not None:
            return None
        if self.stopped_by == "busy":
            return "another process is tuning this shape; it was skipped"
        if self.why_none:
            return self.why_none
        if not any(r["status"] == "ok" for r in self.records) and self.stopped_by == "time limit" \
                and self.evaluated_now == 0:
            return ("the time limit ran out before any configuration was evaluated "
                    "(nothing was measured)")
        return "no configuration was correct"

    def summary(self) -> dict:
        by_status: dict[str, int] = {}
        for r in self.records:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        top = sorted((r for r in self.records if r["status"] == "ok"), key=lambda r: -r["gflops"])[:10]
        return {"kernel": self.kernel, "m": self.shape[0], "n": self.shape[1], "k": self.shape[2],
                "device": self.device, "log": self.log, "database": self.db, **self.counts,
                "status_counts": by_status, "seconds": round(self.seconds, 2),
                "evaluated_now": self.evaluated_now,
                "configs_per_second": round(self.throughput, 2), "best": self.best,
                "finalists": self.finalists, "split_stage": self.split_stage,
                "references": self.references, "stopped_by": self.stopped_by,
                "no_winner_reason": self.no_winner_reason(), "note": self.note,
                "top": [{k: r.get(k) for k in ("params", "gflops", "ms_median", "ms_min", "ms_max")}
                        for r in top]}


_T4_INVALIDITY = {"ok": "correct", "wrong": "correctness", "rejected": "constraints",
                  "compile_error": "compile", "launch_error": "runtime", "crashed": "runtime",
                  "timeout": "timeout"}


def to_t4(records: Iterable[Mapping], metadata: Mapping) -> dict:
    """Log records in the T4 results format that Kernel Tuner, KTT and BAT read: one result
    per configuration, times in milliseconds, the objective being the median time."""
    results = []
    for r in records:
        ok = r["status"] == "ok"
        times = {}
        if "compile_s" in r:
            times["compilation_time"] = 1e3 * r["compile_s"]
        if r.get("ms"):                  # logs before 2026-12-02 lack them
            times["runtimes"] = list(r["ms"])
        out = {"configuration": dict(r["params"]), "objectives": ["time"],
               "invalidity": _T4_INVALIDITY[r["status"]], "correctness": 1 if ok else 0,
               "times": times,
               "measurements": ([{"name": "time", "value": r["ms_median"], "unit": "ms"},
                                 {"name": "GFLOP/s", "value": r["gflops"], "unit": "GFLOP/s"}]
                                if ok else [])}
        if "at" in r:
            out["timestamp"] = r["at"]
        if not ok and r.get("error"):
            out["error"] = r["error"]
        results.append(out)
    return {"schema_version": "1.0.0", "metadata": dict(metadata), "results": results}
