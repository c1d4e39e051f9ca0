"""The `clgemm` command through click's test runner."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from clgemm import verify
from clgemm.cli import main

KEYS = {"kernel", "params", "m", "n", "k", "device", "platform", "driver", "ms_median",
        "ms_min", "ms_max", "gflops", "verified", "rel_error", "tolerance"}


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_devices_lists_capabilities():
    r = invoke("devices")
    assert r.exit_code == 0, r.output
    for word in ("compute units", "global", "local", "max alloc", "max work-group", "fp64",
                 "shuffle", "TF32 tensor-core MMA (kernel 7)"):
        assert word in r.output


@pytest.mark.parametrize("errno_", ["ENOSPC", "EIO"])
def test_output_that_cannot_be_written_is_one_clear_error(monkeypatch, errno_):
    """Output to a full disk (or a failing device) ends in a line naming the cause and exit
    status 1, not a traceback; a file's write names the file."""
    import errno
    import click
    from clgemm import cli

    def full(*args, **kwargs):
        raise OSError(getattr(errno, errno_), os.strerror(getattr(errno, errno_)))
    monkeypatch.setattr(cli.click, "echo", full)
    r = CliRunner().invoke(main, ["devices"])
    assert r.exit_code == 1 and not isinstance(r.exception, OSError)
    assert f"Error: {os.strerror(getattr(errno, errno_))} (writing the output)" in r.output
    monkeypatch.setattr(cli.click, "echo", click.utils.echo)

    def file_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/data/out.json")
    monkeypatch.setattr(cli.devmod, "entries", file_full)
    r = CliRunner().invoke(main, ["devices"])
    assert r.exit_code == 1 and not isinstance(r.exception, OSError)
    assert "No space left on device: /data/out.json" in r.output


def test_an_unrelated_os_error_is_not_dressed_as_an_output_error(monkeypatch):
    from clgemm import cli

    def missing(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "/nowhere")
    monkeypatch.setattr(cli.devmod, "entries", missing)
    r = CliRunner().invoke(main, ["devices"])
    assert isinstance(r.exception, FileNotFoundError)


@pytest.mark.parametrize("command", [["devices"], ["run", "--size", "40"],
                                     ["bench", "--sizes", "40", "--against", "none"],
                                     ["tune", "--kernel", "5", "--size", "40"]])
def test_ctrl_c_anywhere_in_a_command_exits_130(monkeypatch, command):
    """Ctrl-C outside tune's search (opening the device, building the jobs, printing) and
    in every other command ended in click's "Aborted!" with exit status 1; a shell reports
    an interrupted command as 130."""
    from clgemm import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_queue", interrupted)
    monkeypatch.setattr(cli.devmod, "entries", interrupted)
    r = CliRunner().invoke(main, command)
    assert r.exit_code == 130 and "interrupted" in r.output, (r.exit_code, r.output)
    assert "Aborted!" not in r.output and "Traceback" not in r.output


def test_run_says_when_kernel_7_is_emulated(queue):
    from clgemm import device
    r = invoke("run", "--kernel", "7", "--size", "40", "--repeat", "1")
    assert r.exit_code == 0 and "PASS" in r.output, r.output
    assert ("MMA EMULATED" in r.output) != device.has_tf32_mma(queue.device)


def test_devices_for_one_device():
    import pyopencl as cl
    first = cl.get_platforms()[0].get_devices()[0].name.strip()   # pocl's here, the GPU's there
    r = invoke("devices", "--device", first)
    assert r.exit_code == 0, r.output
    assert r.output.count("compute units") == 1 and first in r.output
    r = invoke("devices", "--device", "no-such-device")
    assert r.exit_code != 0 and "no OpenCL device matches" in r.output


def test_run_prints_the_report():
    r = invoke("run", "--kernel", "2", "--size", "40", "--repeat", "3", "--param", "TS=8")
    assert r.exit_code == 0, r.output
    for word in ("kernel   2 (tiled: local-memory tiles)", "params   TS=8  [as given]", "M=40 N=40 K=40",
                 "median", "GFLOPS", "PASS",
                 "every element within", "relative Frobenius error"):
        assert word in r.output


def test_run_json():
    r = invoke("run", "--kernel", "5", "--m", "33", "--n", "17", "--k", "9", "--repeat", "2",
               "--json", "--param", "TSM=32", "--param", "TSN=32")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output.strip().splitlines()[-1])
    assert KEYS <= set(d)
    assert (d["m"], d["n"], d["k"]) == (33, 17, 9)
    assert d["verified"] is True and d["rel_error"] <= d["tolerance"]
    assert d["params"]["TSM"] == 32 and d["ms_min"] <= d["ms_median"] <= d["ms_max"]
    assert d["params_source"].endswith("+given")     # TSN and TSM given, the rest not
    assert d["gflops"] > 0


def test_run_json_is_strict_when_the_check_fails(monkeypatch):
    """Operands of NaN make every element NaN: the error is infinite, which strict JSON
    cannot spell, so it is null; and a NaN that stays NaN is no race."""
    import numpy as np
    monkeypatch.setattr(verify, "random_matrix",
                        lambda rng, rows, cols: np.full((rows, cols), np.nan, np.float32))
    r = invoke("run", "--kernel", "2", "--size", "16", "--repeat", "1", "--json")
    assert r.exit_code == 1
    d = json.loads(r.output.strip().splitlines()[-1], parse_constant=pytest.fail)
    assert d["verified"] is False and d["rel_error"] is None
    r = invoke("run", "--kernel", "2", "--size", "16", "--repeat", "1")
    assert r.exit_code == 1 and "FAIL" in r.output and "race" not in r.output


@pytest.mark.parametrize("cmd", [["run", "--kernel", "2"], ["transpose"], ["bench", "--against", "none"]])
def test_harness_checks_host_memory_first(monkeypatch, cmd, tmp_path):
    """Matrices the host cannot hold beside their float64 makings are refused before any is
    made (on a CPU device its buffers are host memory too), not left to the OOM killer."""
    from clgemm import operands, verify
    monkeypatch.chdir(tmp_path)          # bench's default results folder
    monkeypatch.setattr(operands, "_host_available", lambda: 64 * 64 * 4 * 3)
    monkeypatch.setattr(verify, "random_matrix", lambda *a: pytest.fail("made a matrix"))
    r = invoke(*cmd, "--size" if cmd[0] != "bench" else "--sizes", "64")
    assert r.exit_code != 0 and "of host memory" in r.output and "Traceback" not in r.output


def test_blank_device_means_the_default(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    r = invoke("devices", "--device", " ")
    assert r.exit_code == 0, r.output
    assert r.output.count("compute units") == 1 and "Oclgrind" not in r.output


def test_run_no_check():
    r = invoke("run", "--kernel", "1", "--size", "8", "--no-check", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["verified"] is None


def test_failed_verification_exits_nonzero(monkeypatch):
    monkeypatch.setattr(verify, "tolerance", lambda k: -1.0)
    r = invoke("run", "--kernel", "1", "--size", "8")
    assert r.exit_code == 1
    assert "FAIL" in r.output


@pytest.mark.parametrize("args,words", [
    (["--size", "0"], "0 is not in the range"),
    (["--size", "-3"], "not in the range"),
    (["--size", "1.5"], "not a valid integer"),
    (["--size", "abc"], "not a valid integer"),
    (["--kernel", "9"], "valid kernels: 1 (naive), 2 (tiled)"),
    (["--device", "no-such-gpu"], "no OpenCL device matches"),
    (["--param", "TS"], "not NAME=VALUE"),
    (["--kernel", "2", "--param", "TS=24"], "TS=24 is outside"),
    (["--kernel", "2", "--param", "XX=4"], "no parameter 'XX'"),
    (["--kernel", "5", "--param", "WIDTH=4", "--param", "WPTN=2"], "WIDTH divides WPTN"),
    (["--split-k", "0"], "must be auto or an integer >= 1"),
    (["--kernel", "2", "--size", "33", "--pad", "yes"], "kernel 2 has no padded launch"),  # ran unpadded
    (["--split-k", "many"], "must be auto or an integer >= 1"),
    (["--size", "100000"], "32-bit integers"),                 # before any host matrix is made
    (["--m", "1", "--n", "1", "--k", "3000000000"], "32-bit integers"),
])
def test_run_errors_are_clear(args, words):
    r = invoke("run", *args)
    assert r.exit_code != 0
    assert words in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("flag,by,launches,read", [
    ("--trans-b", "transpose", 2, []), ("--trans-b", "kernel", 1, ["B"]),
    ("--trans-b", "auto", 2, []), ("--trans-a", "auto", 1, ["A"]), ("--trans-a", "transpose", 2, []),
])
def test_run_transposed_operand_either_way(flag, by, launches, read):
    """auto reads A^T as it lies and transposes B^T first (the faster way for each on the H200)."""
    r = invoke("run", "--kernel", "5", "--m", "40", "--n", "36", "--k", "20", flag,
               "--transposed-by", by, "--json", "--param", "TSM=32", "--param", "TSN=32",
               "--param", "WPTM=4", "--param", "WPTN=4")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verified"] and out["transposed_by"] == by and out["launches"] == launches
    assert out["read_as_they_lie"] == read


def test_run_pad_yes_reports_padding():
    r = invoke("run", "--kernel", "5", "--m", "37", "--n", "53", "--k", "29", "--pad", "yes",
               "--json", "--param", "TSM=32", "--param", "TSN=32", "--param", "WPTM=4",
               "--param", "WPTN=4")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verified"] and out["padded"] and out["launches"] == 2   # A and B copied in one launch, GEMM (C in place)


def test_run_split_k_reports_the_slices():
    r = invoke("run", "--kernel", "5", "--m", "3", "--n", "40", "--k", "600", "--split-k", "5",
               "--beta", "0.5", "--json", "--param", "TSM=32", "--param", "TSN=32",
               "--param", "WPTM=4", "--param", "WPTN=4")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verified"] and out["splits"] == 5 and out["launches"] == 2   # GEMM, reduce


def test_run_transposed_by_kernel_on_a_kernel_that_cannot_names_the_flag():
    r = invoke("run", "--kernel", "3", "--size", "16", "--trans-a", "--transposed-by", "kernel")
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "cannot read transposed operands" in r.output and "--transposed-by transpose" in r.output


@pytest.mark.parametrize("name,value", [("alpha", "1e40"), ("beta", "-3.5e38")])
def test_run_refuses_a_scalar_beyond_float32_with_gemms_message(queue, monkeypatch, name, value):
    """alpha and beta go through the library's own check (operands.scalar): `clgemm run`,
    run_gemm() and gemm() refuse the same value with the same message, before compiling."""
    import numpy as np
    from clgemm import build
    from clgemm.gemm import gemm
    from clgemm.run import run_gemm
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError) as lib:
        gemm(queue, a, a, kernel="1", **{name: float(value)})
    message = str(lib.value)
    assert message == f"{name}={float(value)!r} is beyond float32's range (the kernels compute in float32)"
    monkeypatch.setattr(build, "compile_source", lambda *a, **kw: pytest.fail("compiled"))
    with pytest.raises(ValueError) as run:
        run_gemm(queue, 4, 4, 4, kernel="1", **{name: float(value)})
    assert str(run.value) == message
    r = invoke("run", "--kernel", "1", "--size", "8", f"--{name}", value)
    assert r.exit_code == 2 and "Traceback" not in r.output and "FAIL" not in r.output
    assert r.output.strip().splitlines()[-1] == f"Error: Invalid value for '--{name}': {message}"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_run_refuses_a_non_finite_scalar(value):
    """gemm() propagates a NaN or infinite alpha as BLAS does; `clgemm run` checks its result
    against float64, which such an alpha makes non-finite everywhere, so it refuses it
    up front instead of reporting a failed check."""
    r = invoke("run", "--kernel", "1", "--size", "8", "--alpha", value)
    assert r.exit_code == 2 and "Traceback" not in r.output and "FAIL" not in r.output
    assert f"Invalid value for '--alpha': alpha={float(value)!r} is not finite" in r.output


def test_run_gemm_reports_its_stages(queue):
    """run_gemm tells its progress callback each stage, and k of R as timed launches end."""
    from clgemm.run import run_gemm
    seen = []
    r = run_gemm(queue, 24, 24, 24, kernel="1", repeat=3,
                 progress=lambda stage, done=None, total=None: seen.append((stage, done, total)))
    assert r["verified"]
    # where the compiler reports registers (NVIDIA's -cl-nv-verbose), a build for it comes first
    stages = [s for s, _, _ in seen if s != "compiling kernel 1 for the compiler's register report"]
    assert stages[:4] == ["making random operands", "compiling kernel 1 (naive)", "warm-up launch",
                          "verifying 24 of 24 rows against float64"]
    timed = [(d, t) for s, d, t in seen if s == "timing"]
    assert timed[0] == (0, 3) and timed[-1] == (3, 3)
    assert [d for d, _ in timed] == sorted(d for d, _ in timed)
    assert stages[-1] == "checking that the output did not change"


def test_run_shows_progress_on_a_terminal_only(monkeypatch):
    """Progress goes to stderr where it is a terminal (rich's TTY_COMPATIBLE=1 says it is);
    never with --json, and never where stderr is not a terminal."""
    args = ("run", "--kernel", "1", "--size", "16", "--repeat", "3")
    r = invoke(*args)
    assert r.exit_code == 0 and r.stderr == "" and "PASS" in r.stdout
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    for stage in ("compiling kernel 1 (naive)", "verifying 16 of 16 rows", "timing", "3 of 3"):
        assert stage in r.stderr
    assert r.stdout.startswith("kernel   1 (naive") and "timing" not in r.stdout
    r = invoke(*args, "--json")
    assert r.exit_code == 0 and r.stderr == ""
    assert json.loads(r.stdout)["verified"] is True


def test_devices_shows_pocls_work_group_stack(queue):
    from clgemm import device
    r = invoke("devices")
    assert r.exit_code == 0, r.output
    stack = device.work_group_stack(queue.device)
    if stack is None:                  # a device that runs work-groups on no host stack
        assert "a work-group's stack" not in r.output
    else:
        assert f"a work-group's stack: {stack / 2**20:.1f} MiB" in r.output


def test_a_wide_table_piped_is_printed_in_full(capsys):
    """rich cuts what it prints to a file or a pipe at 80 columns; the CLI's tables are
    printed in full there (show.full_width_console)."""
    from rich.table import Table
    from clgemm import show
    table = Table(title="top configurations")
    for col in ("GFLOPS", "median ms", "parameters"):
        table.add_column(col)
    params = " ".join(f"P{i}={i * 1000}" for i in range(20))          # 168 characters
    table.add_row("1234", "0.1234", params)
    show.full_width_console().print(table)
    out = capsys.readouterr().out
    assert params in out and max(map(len, out.splitlines())) > 80


@pytest.mark.parametrize("kernel,words", [("2", "of the FP32 peak)"),
                                          ("7", "of the FFMA peak; its products run on the tensor cores")])
def test_run_names_the_peak_it_compares_with(monkeypatch, kernel, words):
    """Where the device's FP32 peak is known (NVIDIA), the report gives the run's share of
    it; a tensor-core kernel's share of the FFMA peak can pass 100% (kernel 8 at 4096^3 on
    the H200: 118%), so its line says what it compares with."""
    from clgemm import device as devmod
    monkeypatch.setattr(devmod, "peak_gflops", lambda dev: 1e-6)
    params = ["TSM=32", "TSN=32", "TSK=16", "WM=32", "WN=32", "FOLD=8"] if kernel == "7" \
        else ["TS=4"]
    r = invoke("run", "--kernel", kernel, "--size", "16", "--repeat", "1",
               *(a for p in params for a in ("--param", p)))
    assert r.exit_code == 0, r.output
    assert words in r.output


def test_one_element_missing_one_term_fails_the_check(rng):
    """verify.passes judges each element: one output of a 256 x 256 x 1024 product missing
    one small term (a tenth of a typical one) is within the whole matrix's Frobenius
    tolerance, and passed the check before, but far outside its own element's allowance."""
    a, b = verify.random_matrix(rng, 256, 1024), verify.random_matrix(rng, 1024, 256)
    ref = verify.reference(a, b)
    out = ref.astype(np.float32)
    terms = np.abs(a[7] * b[:, 9])
    j = int(np.argmin(np.where(terms > 0.03, terms, np.inf)))
    assert verify.passes(out, ref, 1024, a, b)
    out[7, 9] -= a[7, j] * b[j, 9]
    assert verify.rel_error(out, ref) <= verify.tolerance(1024)   # the whole matrix: passed
    assert not verify.passes(out, ref, 1024, a, b)


def test_a_single_cancelling_sum_passes_the_check_and_a_missing_term_does_not(rng):
    """verify.passes takes a 1 x 1 output whose sum cancels (the Frobenius check alone
    failed such correct sums in 1.3% of draws), and still fails its largest term left out."""
    cancelled = 0
    for _ in range(2000):                       # none cancels with odds below 1e-11
        a, b = verify.random_matrix(rng, 1, 9), verify.random_matrix(rng, 9, 1)
        out = np.float32(0.0)
        for j in range(9):                      # float32, in order, as a kernel sums
            out = np.float32(out + a[0, j] * b[j, 0])
        ref = verify.reference(a, b)
        got = np.array([[out]])
        cancelled += verify.rel_error(got, ref) > verify.tolerance(9)
        assert verify.passes(got, ref, 9, a, b)
        j = np.argmax(np.abs(a[0] * b[:, 0]))
        assert not verify.passes(got - np.float32(a[0, j] * b[j, 0]), ref, 9, a, b)
    assert cancelled >= 1                       # the case the check is for did occur


def test_clgemm_run_passes_a_correct_cancelling_sum(queue):
    """run_gemm at 1 x 1 x 9 on seeds until its one element cancels past the Frobenius
    tolerance: it is verified all the same (element by element against the magnitudes of
    its terms), as gemm()'s result is right."""
    from clgemm.run import run_gemm
    for seed in range(3000):
        r = run_gemm(queue, 1, 1, 9, kernel="1", params={"TS": 4}, repeat=1, seed=seed)
        if r["rel_error"] > r["tolerance"]:
            assert r["verified"], r
            break
    else:
        pytest.fail("no seed of 3000 gave a cancelling sum")


def _no_tuning(monkeypatch):
    from clgemm import show
    monkeypatch.setattr(show, "tune_with_progress", lambda *a, **kw: pytest.fail("tuned"))


def _no_bench(monkeypatch):
    from clgemm import bench as benchmod
    monkeypatch.setattr(benchmod, "bench", lambda *a, **kw: pytest.fail("measured"))


def test_tune_export_t4_never_overwrites_a_file(home, monkeypatch, tmp_path):
    """--export-t4 refuses a path that exists (the tuning database, a tune log, an earlier
    export), before any tuning, as bench never overwrites its results."""
    _no_tuning(monkeypatch)
    for path in (tmp_path / "t4.json", home / "db" / "device.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"kept": true}')
        r = invoke("tune", "--kernel", "2", "--size", "16", "--export-t4", str(path))
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert str(path) in r.output and "exists" in r.output and "another path" in r.output
        assert path.read_text() == '{"kept": true}'


def test_a_file_that_appears_at_the_export_path_while_tuning_is_kept(home, monkeypatch, tmp_path):
    """The path is checked before the tune; a file someone writes there meanwhile is left
    as it is, and the export goes beside it (named on stderr)."""
    from clgemm import show
    path = tmp_path / "t4.json"
    real = show.tune_with_progress

    def tune_and_meanwhile(*args, **kwargs):
        path.write_text('{"kept": true}')
        (tmp_path / "t4-2.json").write_text('{"also kept": true}')
        return real(*args, **kwargs)
    monkeypatch.setattr(show, "tune_with_progress", tune_and_meanwhile)
    r = invoke("tune", "--kernel", "2", "--size", "16", "--budget", "2", "--workers", "1",
               "--export-t4", str(path))
    assert r.exit_code == 0, r.output
    assert path.read_text() == '{"kept": true}'
    assert (tmp_path / "t4-2.json").read_text() == '{"also kept": true}'
    assert json.loads((tmp_path / "t4-3.json").read_text())["metadata"]["kernel"] == "2"
    assert f"the export goes to {tmp_path / 't4-3.json'}" in r.output


@pytest.mark.parametrize("where", ["a file", "below a file", "the device's folder a file"])
def test_bench_checks_its_out_folder_before_measuring(monkeypatch, queue, tmp_path, where):
    """--out, and the folder for the device that the results go into, are checked before
    anything is measured (a file named as the device's folder lost a whole bench at the end,
    FileExistsError as the results were written)."""
    _no_bench(monkeypatch)
    from clgemm import bench as benchmod
    plain = tmp_path / "plain"
    if where == "the device's folder a file":
        plain = benchmod.results_dir(queue, tmp_path)
    plain.write_text("kept")
    out = {"a file": plain, "below a file": plain / "results"}.get(where, tmp_path)
    r = invoke("bench", "--sizes", "8", "--against", "none", "--out", str(out))
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--out" in r.output and str(out) in r.output
    assert plain.read_text() == "kept"


@pytest.mark.parametrize("digit", ["²", "٣", "３"])
def test_only_ascii_digits_are_numbers(monkeypatch, tmp_path, home, digit):
    """str.isdigit() takes '²' (which int() refuses) and '٣' (which int() reads as 3): the
    options take ASCII digits only."""
    _no_bench(monkeypatch)
    r = invoke("run", "--kernel", "5", "--size", "8", "--split-k", digit)
    assert r.exit_code == 2 and "must be auto or an integer >= 1" in r.output, r.output
    bench = ("bench", "--against", "none", "--out", str(tmp_path))
    r = invoke(*bench, "--sizes", f"8,{digit}")
    assert r.exit_code == 2 and "is not a number" in r.output, r.output
    r = invoke(*bench, "--sizes", f"8-1{digit}")
    assert r.exit_code == 2 and "is not a number" in r.output, r.output
    r = invoke(*bench, "--sizes", "8", "--kernels", f"5,{digit}")
    assert r.exit_code == 2 and "--kernels" in r.output and digit in r.output, r.output
    r = invoke("run", "--kernel", "5", "--size", "8", "--param", f"TSK={digit}")
    assert r.exit_code == 2 and f"TSK={digit!r} of kernel 5 must be an integer" in r.output, r.output
    r = invoke("run", "--kernel", "5", "--size", "8", "--device", f"{digit}:0")
    assert r.exit_code == 2 and "no OpenCL device matches" in r.output, r.output
    r = invoke("bench", "--against", "none", "--out", str(tmp_path), "--shapes", f"8x8x{digit}")
    assert r.exit_code == 2 and "is not MxNxK" in r.output, r.output
    # the integer and number options too (click's int() and float() read '٣' as 3, and
    # '1_0' as 10: --workers 1_0 started ten workers)
    for args in (["run", "--kernel", "2", "--size", f"1{digit}"],
                 ["run", "--kernel", "2", "--size", "8", "--m", f"{digit}"],
                 ["run", "--kernel", "2", "--size", "8", "--alpha", f"1{digit}"],
                 ["transpose", "--rows", f"{digit}", "--cols", "4"],
                 ["tune", "--kernel", "2", "--size", "8", "--workers", f"{digit}"],
                 ["tune", "--kernel", "2", "--size", "8", "--time-limit", f"{digit}"]):
        r = invoke(*args)
        assert r.exit_code == 2 and "is not a" in r.output and "Traceback" not in r.output, (args, r.output)


@pytest.mark.parametrize("cmd,option", [
    (["tune", "--kernel", "2"], "--shapes"), (["tune", "--kernel", "2"], "--export-t4"),
    (["bench"], "--sizes"), (["bench"], "--shapes"), (["bench"], "--kernels"),
    (["bench"], "--against"), (["bench"], "--out"),
])
@pytest.mark.parametrize("blank", ["", " "])
def test_a_list_given_empty_is_refused_not_taken_for_the_default(home, monkeypatch, cmd, option,
                                                                 blank):
    _no_tuning(monkeypatch)
    _no_bench(monkeypatch)
    r = invoke(*cmd, option, blank)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"{option} is empty" in r.output


def test_run_says_when_fewer_slices_ran_than_asked():
    """Every slice of k holds whole tiles of k: at k = 8 (one tile) 100 slices are 1."""
    r = invoke("run", "--kernel", "5", "--size", "8", "--repeat", "1", "--split-k", "100")
    assert r.exit_code == 0, r.output
    assert "split-K  1 slice ran, not the 100 asked" in r.output
    r = invoke("run", "--kernel", "5", "--m", "3", "--n", "40", "--k", "600", "--repeat", "1",
               "--split-k", "5", "--param", "TSM=32", "--param", "TSN=32", "--param", "WPTM=4",
               "--param", "WPTN=4")
    assert r.exit_code == 0 and "k cut into 5 slices" in r.output, r.output
    assert "asked" not in r.output


@pytest.mark.parametrize("cmd", [["run", "--kernel", "2"], ["transpose", "--kernel", "naive"]])
def test_a_parameter_given_twice_is_refused(cmd):
    r = invoke(*cmd, "--size", "8", "--param", "TS=4", "--param", " TS=8")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "TS is given twice" in r.output


def test_bench_and_tune_read_shapes_alike(monkeypatch, tmp_path):
    """One parser serves both commands' --shapes: spaces around the commas are allowed and a
    shape given twice is measured once (bench used to refuse ' 8x8x8')."""
    from clgemm import bench as benchmod
    seen = {}

    def fake_bench(queue, kernels, shapes, *a, **kw):
        seen["shapes"] = list(shapes)
        raise SystemExit(0)
    monkeypatch.setattr(benchmod, "bench", fake_bench)
    r = invoke("bench", "--against", "none", "--out", str(tmp_path),
               "--shapes", "8x8x8, 3x5x7 ,8x8x8")
    assert r.exit_code == 0, r.output
    assert seen["shapes"] == [(8, 8, 8), (3, 5, 7)]
    from clgemm import options
    assert options.parse_shapes("8x8x8, 3x5x7 ,8x8x8") == [(8, 8, 8), (3, 5, 7)]
    r = invoke("tune", "--kernel", "2", "--shapes", "8x8x8, 0x5x7")
    assert r.exit_code == 2 and "'0x5x7' is not MxNxK" in r.output, r.output


def test_numbers_with_underscores_and_seeds_out_of_range_are_refused(monkeypatch, tmp_path, home):
    """--workers 1_0 started ten workers (int() reads '1_0'); --seed -5 failed only once the
    search began, with an error that named no option, and 2^32 passed where the strategy
    was random; --sizes 16 with --shapes 16x16x16 timed the shape twice."""
    for args, words in ((["tune", "--kernel", "2", "--size", "8", "--workers", "1_0"], "'1_0' is not a valid integer"),
                        (["tune", "--kernel", "2", "--size", "8", "--timeout", "1_0"], "'1_0' is not a valid float"),
                        (["tune", "--kernel", "2", "--size", "8", "--seed", "-5"], "--seed"),
                        (["tune", "--kernel", "2", "--size", "8", "--strategy", "random",
                          "--seed", str(2**32)], "--seed")):
        r = invoke(*args)
        assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, (args, r.output)
    from clgemm import bench as benchmod
    seen = {}

    def fake_bench(queue, kernels, shapes, *a, **kw):
        seen["shapes"] = list(shapes)
        raise SystemExit(0)
    monkeypatch.setattr(benchmod, "bench", fake_bench)
    r = invoke("bench", "--against", "none", "--out", str(tmp_path), "--sizes", "16,16",
               "--shapes", "16x16x16,8x8x8")
    assert r.exit_code == 0, r.output
    assert seen["shapes"] == [(16, 16, 16), (8, 8, 8)]


def test_run_json_says_what_was_run_and_measured():
    """--json carries what the text says: alpha, beta, repeats, rows checked, the output's
    stability, emulation."""
    r = invoke("run", "--kernel", "5", "--m", "37", "--n", "53", "--k", "29", "--alpha", "2",
               "--beta", "1", "--repeat", "3", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["alpha"], out["beta"], out["repeat"], out["rows_checked"]) == (2.0, 1.0, 3, 37)
    assert out["emulated"] is False and "stable" not in out     # beta: c read, no rerun check
    r = invoke("run", "--kernel", "5", "--size", "16", "--repeat", "2", "--json")
    assert json.loads(r.output)["stable"] is True


def test_run_refuses_an_alpha_below_floats_normal_range():
    r = invoke("run", "--size", "16", "--alpha", "1e-50")      # 0 in float32: gemm() refuses it
    assert r.exit_code == 2 and "alpha=1e-50 is below float32's range" in r.output, r.output
    r = invoke("run", "--size", "16", "--alpha", "1e-40")      # subnormal: the run's check
    assert r.exit_code == 2 and "below float32's smallest normal number" in r.output, r.output
    r = invoke("run", "--size", "16", "--beta", "-1e-42")
    assert r.exit_code == 2 and "beta=-1e-42" in r.output, r.output


def test_matvec_dot_bandwidth_counts_its_vector_along_the_rows():
    r = invoke("run", "--kernel", "matvec-dot", "--m", "2", "--n", "1", "--k", "1000",
               "--repeat", "2", "--json")
    out = json.loads(r.output)
    # the matrix (2 x 1000), the vector (1000) and C written (2), in bytes
    assert out["gbps"] * out["ms_median"] * 1e6 == pytest.approx(4 * (2000 + 1000 + 2))


def test_a_parameter_of_two_minus_signs_is_refused_naming_it():
    r = invoke("run", "--size", "16", "--param", "TSM=--32")
    assert r.exit_code == 2 and "TSM" in r.output and "int()" not in r.output, r.output


def test_runs_progress_callbacks_have_all_come_when_it_stops(queue):
    """A callback still due when Python exits aborted `clgemm run` in a terminal (SIGABRT
    after PASS): the counting waits for every callback asked for."""
    import pyopencl as cl
    from clgemm import run
    counted, stop = run._counted(lambda: [cl.enqueue_marker(queue)], lambda done: None)
    for _ in range(50):
        counted()
    queue.finish()
    assert stop() == 50


def test_a_matrix_vector_kernel_refuses_transposed_by_as_it_refuses_pad():
    for option in (("--transposed-by", "transpose"), ("--pad", "yes"), ("--split-k", "2")):
        r = invoke("run", "--kernel", "matvec-sweep", "--m", "1", "--n", "64", "--k", "64",
                   *option)
        assert r.exit_code == 2 and "takes neither split_k, pad nor transposed_by" in r.output, \
            (option, r.output)


def test_one_run_is_said_in_the_singular():
    r = invoke("run", "--kernel", "2", "--size", "16", "--repeat", "1")
    assert r.exit_code == 0 and "(1 run after a warm-up" in r.output, r.output


def test_a_run_whose_product_overflows_float32_says_so():
    r = invoke("run", "--kernel", "2", "--size", "16", "--repeat", "1", "--alpha", "3e38")
    assert r.exit_code == 1 and "FAIL" in r.output, r.output
    assert "its float32 result overflows" in r.output
    r = invoke("run", "--kernel", "2", "--size", "16", "--repeat", "1", "--alpha", "3e38", "--json")
    assert json.loads(r.output)["overflows"] is True


def test_bounded_numbers_counts_and_lists_are_refused_before_anything_runs(home, tmp_path):
    """--time-limit nan ran a tune without end (NaN passes every bound), --timeout nan
    recorded a timed-out split stage with exit 0, --repeat 10^12 grew the process until the
    system would kill it, and a range of 10^11 values ran out of memory in a traceback; a
    range written backwards was refused as values below 1."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    wide, empty = tmp_path / "wide.json", tmp_path / "empty.json"
    wide.write_text(json.dumps({"MWG": 2**64 + 64}))
    empty.write_text("{}")
    out = str(tmp_path / "out")
    for args, words in (
            (["tune", "--size", "8", "--budget", "2", "--time-limit", "nan"],
             "'nan' is not a finite number"),
            (["tune", "--size", "8", "--budget", "2", "--timeout", "inf"],
             "'inf' is not a finite number"),
            (["run", "--size", "8", "--repeat", str(2**40)], "1<=x<=100000"),
            (["transpose", "--size", "8", "--repeat", str(2**40)], "1<=x<=100000"),
            (["bench", "--against", "none", "--out", out, "--sizes", "1-99999999999"],
             "gives more than 4096 values"),
            (["bench", "--against", "none", "--out", out, "--kernels", "7-5"],
             "'7-5' runs backwards: write it low-high, as 5-7"),
            (["bench", "--against", "none", "--out", out, "--sizes", "0-4"], "values must be >= 1"),
            (["bench", "--against", "clblast", "--out", out, "--sizes", "8",
              "--clblast-params", str(deep)], "nested too deeply"),
            (["bench", "--against", "clblast", "--out", out, "--sizes", "8",
              "--clblast-params", str(wide)], "0 to 2^31-1"),
            (["bench", "--against", "clblast", "--out", out, "--sizes", "8",
              "--clblast-params", str(empty)], "none empty")):
        r = invoke(*args)
        assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, (args, r.output)
    r = invoke("run", "--help")
    assert "FLOAT RANGE" not in r.output.split("--beta")[1].split("\n")[0] and "x<=None" not in r.output


def test_a_device_name_matching_several_devices_is_refused_and_the_simulator_is_not_guessed(
        monkeypatch):
    """A substring that matched several devices took the first, the Oclgrind simulator
    among them, which is to run only where asked for; the machine's GPUs of one kind are
    alike, and a bad PYOPENCL_CTX is named as where the choice came from."""
    from types import SimpleNamespace

    from clgemm import device as devmod

    def entry(spec, device, platform):
        return SimpleNamespace(spec=spec, device=SimpleNamespace(name=device),
                               platform=SimpleNamespace(name=platform))
    listed = [entry("0:0", "Oclgrind Simulator", "Oclgrind"),
              entry("1:0", "pthread-Intel(R) Xeon(R) Processor", "Portable Computing Language"),
              entry("2:0", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA"),
              entry("2:1", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA")]
    monkeypatch.setattr(devmod, "entries", lambda: listed)
    assert devmod.select("r") is listed[1].device              # not the simulator
    assert devmod.select("oclgrind") is listed[0].device
    assert devmod.select("H100") is listed[2].device           # alike: the first
    with pytest.raises(devmod.DeviceNotFound, match="'a' matches several devices: 1:0 .*2:0"):
        devmod.select("a")
    monkeypatch.setenv("PYOPENCL_CTX", "nonsense")
    with pytest.raises(devmod.DeviceNotFound, match="^PYOPENCL_CTX=nonsense: no OpenCL device"):
        devmod.select()
