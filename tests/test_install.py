"""A plain (non-editable) wheel carries the .cl sources: `clgemm run` works from the
installed package in another directory, with no checkout in sight."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_kernels(tmp_path):
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    # with the build backend already installed, build without pip's isolated environment,
    # which fetches the backend from the index: a machine with no network can run this too
    offline = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *offline,
                            "-w", str(wheels), str(ROOT)], capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stderr
    wheel = next(wheels.glob("clgemm-*.whl"))
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                                "--target", str(target), str(wheel)], capture_output=True,
                               text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    # the installed copy first; the rest of an inherited PYTHONPATH (where a machine keeps
    # pyopencl, say) stays, but never this checkout
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != ROOT]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), *kept]),
               PYOPENCL_COMPILER_OUTPUT="0")

    where = subprocess.run([sys.executable, "-c",
                            "import clgemm.build as b; print(b.kernel_dir())"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    kdir = Path(where.stdout.strip())
    assert kdir.is_relative_to(target), kdir
    assert sorted(p.name for p in kdir.glob("*.cl")) == sorted(p.name for p in (ROOT / "kernels").glob("*.cl"))
    assert (target / "clgemm" / "tuned" / "nvidia-h200.json").is_file()   # the shipped database

    run = subprocess.run([sys.executable, "-m", "clgemm", "run", "--kernel", "2", "--size", "33",
                          "--repeat", "2", "--json"], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1])["verified"] is True


def test_every_script_answers_help():
    """The README says each maintained tool under scripts/ has --help: it prints its usage
    and exits 0 without touching a device (job_summary.py once exited 1)."""
    scripts = sorted((ROOT / "scripts").glob("*.py"))
    assert scripts
    for script in scripts:
        r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and "usage" in r.stdout.lower(), (script.name, r.stderr[-500:])
    r = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_job.sh"), "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "usage" in r.stdout


def test_gpu_job_compare_refuses_a_folder_that_is_no_version(tmp_path):
    """`gpu_job.sh compare DIR SHAPES` runs `python3 -m clgemm` inside DIR: a DIR without
    clgemm/ and kernels/ imported the installed package, so the tree was timed against
    itself with no word. It is named and refused before anything runs."""
    empty = tmp_path / "not-a-version"
    empty.mkdir()
    r = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_job.sh"), "compare", str(empty),
                        "16x16x16"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OUT": str(tmp_path / "out")})
    assert r.returncode == 2, r.stderr[-500:]
    assert f"{empty} holds no clgemm/ and kernels/" in r.stderr
    assert not list((tmp_path / "out").glob("before-*")), "a bench ran"


def test_ab_versions_refuses_a_version_that_is_no_package(tmp_path):
    """scripts/ab_versions.py runs the CLI inside each version's DIR: one without clgemm/
    and kernels/ ran the installed package instead, and a NAME without =DIR ended in a
    traceback. Both are named by argparse (exit 2) before anything runs."""
    empty = tmp_path / "not-a-version"
    empty.mkdir()
    for versions, words in ((f"before={empty},after={ROOT}", f"'before={empty}'"),
                            (f"before,after={ROOT}", "'before'")):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_versions.py"),
                            "--versions", versions, "--shapes", "16x16x16"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
        assert f"{words}: a version is NAME=DIR, DIR holding clgemm/ and kernels/" in r.stderr


def test_plans_versions_refuses_a_version_without_its_package(tmp_path):
    """scripts/plans_versions.py (whose NAME=DIR parser ab_versions.py and changed_choices.py
    share) ran scripts/plans.py inside each DIR: one holding that script but no clgemm/
    imported the installed package, another version timed as this one. It is named, as are
    two versions of one name, by argparse (exit 2) before anything runs."""
    lone = tmp_path / "scripts-only"
    (lone / "scripts").mkdir(parents=True)
    (lone / "scripts" / "plans.py").write_text("")
    for versions, words in ((f"a={ROOT},b={lone}", f"'b={lone}': a version is NAME=DIR, DIR "
                             "holding clgemm/, kernels/ and scripts/plans.py"),
                            (f"a={ROOT},a={ROOT}", "two or more versions with distinct names")):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "plans_versions.py"),
                            "--versions", versions, "--", "--shapes", "16x16x16"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
        assert words in r.stderr


def test_plans_names_a_json_folder_it_cannot_write(tmp_path):
    """scripts/plans.py writes --json after each shape, so that a run cut short keeps what
    ran: a folder that is not there is named by argparse (exit 2) before any shape runs,
    not met as a traceback after the first."""
    target = tmp_path / "missing" / "rows.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "plans.py"), "--shapes",
                        "16x16x16", "--variant", "gemm:", "--json", str(target)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert f"--json {target}: its folder {target.parent} does not exist" in r.stderr
