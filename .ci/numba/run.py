"""Runs numba-cuda's own test suites on cuda-sim and compares with expected.json.

Run it with the Python of a venv that has the pinned numba-cuda[cu13] without
nvJitLink (see docs/numba.md), from anywhere:

    python .ci/numba/run.py --lib-dir aruntime/_lib

The suites are the modules expected.json lists, from the wheel's
``numba.cuda.tests.cudadrv`` and ``numba.cuda.tests.cudapy``.  They run under
pytest with ``plugin.py`` (the fixture numba's source-tree conftest gives),
numba's simulator off, and libcuda.so.1 taken from --lib-dir, on pytest-xdist
workers (one a core, four at most; each a process with its own cuda-sim), a
test module to a worker: ``-- -n 0`` runs them in this one process.  The run fails
when fewer tests pass than expected.json records, or when a test fails that
its ``known_refusals`` does not list (each entry says why the sim refuses
it).  The tests in ``left_out`` do not run at all: each faults the device,
which (as on a GPU) fails every later test of the process; each says why.
More passes than recorded are reported, to be committed with --update.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"
PACKAGES = ("numba.cuda.tests.cudadrv", "numba.cuda.tests.cudapy")


def _environment(lib_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(lib_dir), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env["NUMBA_ENABLE_CUDASIM"] = "0"  # numba's own simulator would test nothing of ours
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


def _targets(modules: list[str]) -> tuple[list[str], Path]:
    """Dotted module names: each listed module of either package that exists;
    and the folder the top package (``numba``) is in."""
    import importlib.util

    found = []
    root = None
    for name in modules:
        for package in PACKAGES:
            spec = importlib.util.find_spec(f"{package}.{name}")
            if spec is not None and spec.origin is not None:
                found.append(spec.name)
                root = Path(spec.origin).parents[spec.name.count(".")]
                break
        else:
            raise SystemExit(f"expected.json lists {name}, which neither suite has")
    if root is None:
        raise SystemExit("expected.json lists no modules")
    return found, root


def run_suites(
    lib_dir: Path, modules: list[str], left_out: list[str], extra: list[str], keep: Path | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = keep or Path(tmp) / "outcomes.json"
        leave_out = Path(tmp) / "leave_out.json"
        leave_out.write_text(json.dumps(sorted(left_out)))
        targets, root = _targets(modules)
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "plugin",
            "-o",
            "consider_namespace_packages=true",
            # Node ids then name the module (numba/cuda/tests/.../test_x.py::...);
            # from the scratch folder they read ::Class::test, which xdist's
            # loadfile would group as one file (one worker), and two modules
            # could share.
            f"--rootdir={root}",
            # Modules keep their order and share state (compiled kernels, a
            # module's setUpModule): each runs whole on one worker.
            "-n",
            "auto",
            "--maxprocesses=4",
            "--dist=loadfile",
            f"--numba-sim-outcomes={outcomes}",
            f"--numba-sim-leave-out={leave_out}",
            "--pyargs",
            *targets,
            *extra,
        ]
        # From a scratch folder: nothing of this checkout may shadow the wheel.
        subprocess.run(command, cwd=tmp, env=_environment(lib_dir), check=False)
        if not outcomes.exists():
            raise SystemExit("numba's suites wrote no outcomes (did pytest start?)")
        result: dict[str, Any] = json.loads(outcomes.read_text())
        return result


def compare(expected: dict[str, Any], outcomes: dict[str, Any]) -> list[str]:
    """The reasons this run fails CI (none: it passes)."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    known: dict[str, str] = expected["known_refusals"]
    problems = []
    print(f"numba-cuda on cuda-sim: {dict(sorted(counts.items()))}")
    print(f"expected:               {expected['counts']}")
    if counts["passed"] < expected["counts"]["passed"]:
        problems.append(f"{counts['passed']} tests pass, {expected['counts']['passed']} expected")
    for nodeid, entry in sorted(outcomes.items()):
        if entry["outcome"] in ("failed", "error") and nodeid not in known:
            problems.append(f"not a known refusal: {nodeid}: {entry['message']}")
    fixed = [n for n in known if outcomes.get(n, {}).get("outcome") == "passed"]
    for nodeid in fixed:
        print(f"now passes (drop it from known_refusals with --update): {nodeid}")
    if counts["passed"] > expected["counts"]["passed"]:
        print("more tests pass than expected.json records: commit the new counts (--update)")
    return problems


def update(expected: dict[str, Any], outcomes: dict[str, Any]) -> None:
    """Records this run's counts; failures keep their reason, new ones need one."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    expected["counts"] = {k: counts.get(k, 0) for k in ("passed", "failed", "error", "skipped")}
    old: dict[str, str] = expected["known_refusals"]
    expected["known_refusals"] = {
        nodeid: old.get(nodeid, "TODO: why: " + entry["message"][:160])
        for nodeid, entry in sorted(outcomes.items())
        if entry["outcome"] in ("failed", "error")
    }
    EXPECTED.write_text(json.dumps(expected, indent=1) + "\n")
    print(f"wrote {EXPECTED}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib-dir", type=Path, required=True, help="folder of libcuda.so.1")
    parser.add_argument("--update", action="store_true", help="record this run in expected.json")
    parser.add_argument("--outcomes", type=Path, help="also keep each test's outcome here (JSON)")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    lib_dir = args.lib_dir.resolve()
    if not (lib_dir / "libcuda.so.1").exists():
        raise SystemExit(f"no libcuda.so.1 in {lib_dir}")
    expected = json.loads(EXPECTED.read_text())
    outcomes = run_suites(
        lib_dir,
        expected["modules"],
        list(expected["left_out"]),
        args.pytest_args,
        args.outcomes and args.outcomes.resolve(),
    )
    if args.update:
        update(expected, outcomes)
        return 0
    problems = compare(expected, outcomes)
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
