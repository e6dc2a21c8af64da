"""Runs the dpctl smoke and dpctl's own test suite on levelzero-sim; compares with expected.json.

Run it with the Python of a venv that has .ci/dpctl/requirements.txt, from
anywhere:

    python .ci/dpctl/run.py --lib-dir aruntime/_lib/ze_loader [--update] [-- PYTEST_ARGS]

--lib-dir is the folder of levelzero-sim's libze_loader.so.1 (what
``aruntime env levelzero-sim`` puts on LD_LIBRARY_PATH).  smoke.py runs
first and must pass whole.  Then dpctl's suite (``dpctl.tests``, shipped in
its wheel) runs under pytest, and the run fails when fewer tests pass than
expected.json records, or when a test fails or errs that its
``known_refusals`` does not list, or whose message lacks the text listed
with it (so that a refusal turning into a wrong answer is caught).  Each
known refusal says why.  More passes than recorded are reported, to be
committed with --update.
"""

from __future__ import annotations

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
    outcomes = run_pytest(
        "dpctl's suite",
        ["--pyargs", "dpctl.tests", *args.pytest_args],
        levelzero_environment(lib_dir),
    )
    if args.update:
        update(EXPECTED, expected, outcomes)
        return smoke.returncode
    problems = compare("dpctl on levelzero-sim", expected, outcomes)
    if smoke.returncode != 0:
        problems.append("the smoke failed (above)")
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
