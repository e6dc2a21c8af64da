"""Runs the dpnp smoke and a pinned slice of dpnp's tensor suite on levelzero-sim.

The slice's outcomes are compared with expected.json.

Run it with the Python of a venv that has .ci/dpnp/requirements.txt, from
anywhere:

    python .ci/dpnp/run.py --lib-dir aruntime/_lib/ze_loader [--update] [-- PYTEST_ARGS]

--lib-dir is the folder of levelzero-sim's libze_loader.so.1 (what
``aruntime env levelzero-sim`` puts on LD_LIBRARY_PATH).  smoke.py runs
first: each of its operations must give numpy's answer.  The slice is the
modules expected.json lists, of ``dpnp.tests.tensor`` (shipped in dpnp's
wheel), chosen to take two or three minutes on two cores; the whole suite
runs by hand (docs/levelzero.md).  Each test has a time limit.  The run fails
when fewer tests pass than expected.json records, or when a test fails or
errs that its ``known_refusals`` does not list, or whose message lacks the
text listed with it.  The tests in ``left_out`` (none now) do not run: each
would lose the device (a fault the sim reports), on which SYCL aborts the
process; each says why.  More passes than recorded are reported, to be committed with --update.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"
sys.path.insert(0, str(HERE.parent))
from pytest_expected import (  # noqa: E402
    client_arguments,
    compare,
    levelzero_environment,
    run_pytest,
    update,
)


def main() -> int:
    args = client_arguments(__doc__.split("\n")[0])
    lib_dir = args.lib_dir
    smoke = subprocess.run(
        [sys.executable, str(HERE / "smoke.py")], env=levelzero_environment(lib_dir), check=False
    )
    expected = json.loads(EXPECTED.read_text())
    # The wheel's test files by path, from its tests folder as rootdir: the
    # node ids read tensor.<module>::<test>, and dpnp's conftests apply.
    spec = importlib.util.find_spec("dpnp")
    if spec is None or spec.origin is None:
        raise SystemExit("dpnp is not installed (.ci/dpnp/requirements.txt)")
    tests = Path(spec.origin).parent / "tests"
    files = [
        str(tests / "tensor" / (name.replace(".", "/") + ".py")) for name in expected["modules"]
    ]
    # Left out by test function (module::function, every parametrization).
    left_out = " or ".join(nodeid.split("::")[1] for nodeid in expected["left_out"])
    deselect = ["-k", f"not ({left_out})"] if left_out else []
    outcomes = run_pytest(
        "dpnp's tensor suite",
        [
            f"--rootdir={tests}",
            f"--timeout={expected['timeout_s']}",
            *deselect,
            *files,
            *args.pytest_args,
        ],
        levelzero_environment(lib_dir),
    )
    if args.update:
        update(EXPECTED, expected, outcomes)
        return smoke.returncode
    problems = compare("dpnp.tests.tensor (slice) on levelzero-sim", expected, outcomes)
    if smoke.returncode != 0:
        problems.append("the smoke failed (above)")
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
