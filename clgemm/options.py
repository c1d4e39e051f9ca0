"""The command line's option types and value parsers: integers and numbers in ASCII, lists
of sizes, shapes and kernels, NAME=VALUE pairs, and the checks of --out. Apart from
clgemm.cli so that it stays a thin list of commands; each raises click's errors, which
name the option."""

from __future__ import annotations

import math
import os
from pathlib import Path

import click

from . import entries, kernels
from .entries import DIGITS_MAX


def digits(text: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '²', which int() refuses, and '٣' or
    '３', which int() reads as 3."""
    return text.isascii() and text.isdigit()


class Int(click.IntRange):
    """An integer option written in ASCII digits: click's int() also reads '３', '٣' and
    '1_0' (which --workers took as 10)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not digits(value.strip().removeprefix("-").removeprefix("+")):
            self.fail(f"{value!r} is not a valid integer", param, ctx)
        return super().convert(value, param, ctx)


class Float(click.FloatRange):
    """A number option written in ASCII: float() also reads '１' and '1_0'. A bounded one
    (a time, a limit) is also finite: NaN passes every comparison with a bound (`--time-limit
    nan` ran without end) and inf means the option left out."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.min is None and self.max is None:
            self.name = "float"        # in --help: FLOAT, not FLOAT RANGE with "x<=None"

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value, param, ctx):
        if isinstance(value, str) and (not value.isascii() or "_" in value):
            self.fail(f"{value!r} is not a valid float", param, ctx)
        out = super().convert(value, param, ctx)
        if (self.min is not None or self.max is not None) and not math.isfinite(out):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return out


def not_blank(ctx, param, value: str | None) -> str | None:
    """An option given empty is refused, not taken for the option left out (its default)."""
    if value is not None and not value.strip():
        raise click.UsageError(f"{param.opts[0]} is empty: give a value, or leave the "
                               f"option out", ctx)
    return value


def param_pairs(ctx, param, values) -> dict[str, str]:
    out = {}
    for v in values:
        name, eq, val = (x.strip() for x in v.partition("="))
        if not eq or not name or not val:
            raise click.BadParameter(f"{v!r} is not NAME=VALUE")
        if name in out:
            raise click.BadParameter(f"{name} is given twice ({name}={out[name]} and "
                                     f"{name}={val}); give it once")
        out[name] = val
    return out




def split_k_value(ctx, param, value: str) -> int | str:
    if value == "auto":
        return value
    if not digits(value) or not value.strip("0"):
        raise click.BadParameter(f"must be auto or an integer >= 1, not {value!r}")
    if len(value.lstrip("0")) > DIGITS_MAX:
        raise click.BadParameter(f"{value[:20]}... is too large")
    return int(value)


def scalar_value(ctx, param, value: float) -> float:
    """--alpha and --beta, checked as run_gemm() checks them (run.scalar)."""
    from .run import scalar
    try:
        return scalar(value, param.name)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """--shapes of tune and bench: MxNxK,... (spaces around the commas allowed), each shape
    once, in the order given."""
    try:
        return entries.shape_list(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--shapes") from None


def kernel_keys(text: str) -> list[str]:
    """--kernels: numbers, ranges (5-7) and names, matrix-vector ones too, as registry keys."""
    keys = []
    for part in text.split(","):
        word = part.strip()
        given = [str(k) for k in parse_ints(word, "--kernels")] if digits(word[:1]) else [word]
        try:
            keys += [kernels.tunable(key).key for key in given]
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--kernels") from None
    return list(dict.fromkeys(keys))


MAX_LISTED = 4096    # values a list of numbers and ranges may give (--sizes, --kernels)
# timed launches a --repeat may ask for: each keeps its event and time until the median
# (10^12 grew the process by 150 MB a second until the system would have killed it)
MAX_REPEAT = 100_000


def parse_ints(text: str, what: str) -> list[int]:
    """Numbers and ranges like 1-7, comma-separated, each checked before it is expanded (a
    range of 10^11 values had filled the memory)."""
    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not (digits(lo) and (not dash or digits(hi))):
            raise click.BadParameter(f"{part!r} is not a number or a range like 1-7", param_hint=what)
        if max(len(lo.lstrip("0")), len(hi.lstrip("0"))) > DIGITS_MAX:
            raise click.BadParameter(f"{part.strip()[:20]}... is too large", param_hint=what)
        first, last = int(lo), int(hi) if dash else int(lo)
        if first < 1:
            raise click.BadParameter(f"{part.strip()!r}: values must be >= 1", param_hint=what)
        if last < first:
            raise click.BadParameter(f"{part.strip()!r} runs backwards: write it low-high, "
                                     f"as {last}-{first}", param_hint=what)
        if len(out) + last - first + 1 > MAX_LISTED:
            raise click.BadParameter(f"{text.strip()!r} gives more than {MAX_LISTED} values",
                                     param_hint=what)
        out += range(first, last + 1)
    return out


def results_folder(path: Path) -> None:
    """--out is a writable folder, made where it is not there yet."""
    if os.path.lexists(path) and not path.is_dir():
        raise click.BadParameter(f"{path} is not a folder", param_hint="--out")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.BadParameter(f"cannot make the folder {path}: {e.strerror or e}",
                                 param_hint="--out") from None
    if not os.access(path, os.W_OK):
        raise click.BadParameter(f"{path} is not a writable folder", param_hint="--out")
