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

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"


def _environment(lib_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(lib_dir), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env["ONEAPI_DEVICE_SELECTOR"] = "level_zero:*"
    return env


def _outcome(case: ET.Element) -> tuple[str, str]:
    """A junit testcase's outcome and the first line of its message."""
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            lines = (found.get("message") or "").splitlines()
            return outcome, lines[0] if lines else ""
    return "passed", ""


def run_suite(lib_dir: Path, extra: list[str]) -> dict[str, dict[str, str]]:
    """Each test's node id -> its outcome and message."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfE",
            f"--junitxml={report}",
            "--pyargs",
            "dpctl.tests",
            *extra,
        ]
        # From a scratch folder: nothing of this checkout may shadow the wheel.
        proc = subprocess.run(
            command, cwd=tmp, env=_environment(lib_dir), capture_output=True, text=True
        )
        # Its failures only: compare() prints the counts, against the listed ones.
        for line in proc.stdout.splitlines():
            if line.startswith(("FAILED ", "ERROR ")):
                print(line)
        if proc.returncode not in (0, 1):
            print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        if not report.exists():
            raise SystemExit("dpctl's suite wrote no report (did pytest start?)")
        outcomes: dict[str, dict[str, str]] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            nodeid = f"{case.get('classname')}::{case.get('name')}"
            outcome, message = _outcome(case)
            # A test that failed in its body and again in its teardown keeps the first.
            outcomes.setdefault(nodeid, {"outcome": outcome, "message": message})
        return outcomes


def compare(expected: dict[str, Any], outcomes: dict[str, dict[str, str]]) -> list[str]:
    """The reasons this run fails CI (none: it passes)."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    known: dict[str, dict[str, str]] = expected["known_refusals"]
    problems = []
    print(f"dpctl on levelzero-sim: {dict(sorted(counts.items()))}")
    print(f"expected:               {expected['counts']}")
    if counts["passed"] < expected["counts"]["passed"]:
        problems.append(f"{counts['passed']} tests pass, {expected['counts']['passed']} expected")
    for nodeid, entry in sorted(outcomes.items()):
        if entry["outcome"] not in ("failed", "error"):
            continue
        if nodeid not in known:
            problems.append(f"not a known refusal: {nodeid}: {entry['message']}")
        elif known[nodeid]["message"] not in entry["message"]:
            problems.append(
                f"{nodeid} fails otherwise than listed ({known[nodeid]['message']!r}): "
                f"{entry['message']}"
            )
    for nodeid in known:
        if outcomes.get(nodeid, {}).get("outcome") == "passed":
            print(f"now passes (drop it from known_refusals with --update): {nodeid}")
    if counts["passed"] > expected["counts"]["passed"]:
        print("more tests pass than expected.json records: commit the new counts (--update)")
    bad = counts["failed"] + counts["error"]
    print(f"dpctl's suite: {counts['passed']} passed, {bad} refused ({len(known)} listed)")
    return problems


def update(expected: dict[str, Any], outcomes: dict[str, dict[str, str]]) -> None:
    """Records this run's counts; refusals keep their reason, new ones need one."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    expected["counts"] = {k: counts.get(k, 0) for k in ("passed", "failed", "error", "skipped")}
    old: dict[str, dict[str, str]] = expected["known_refusals"]
    expected["known_refusals"] = {
        nodeid: old.get(nodeid) or {"why": "TODO: why", "message": entry["message"][:120]}
        for nodeid, entry in sorted(outcomes.items())
        if entry["outcome"] in ("failed", "error")
    }
    EXPECTED.write_text(json.dumps(expected, indent=1) + "\n")
    print(f"wrote {EXPECTED}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--lib-dir", type=Path, required=True, help="folder of levelzero-sim's libze_loader.so.1"
    )
    parser.add_argument("--update", action="store_true", help="record this run in expected.json")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    lib_dir = args.lib_dir.resolve()
    if not (lib_dir / "libze_loader.so.1").exists():
        raise SystemExit(f"no libze_loader.so.1 in {lib_dir}")
    smoke = subprocess.run(
        [sys.executable, str(HERE / "smoke.py")], env=_environment(lib_dir), check=False
    )
    expected = json.loads(EXPECTED.read_text())
    outcomes = run_suite(lib_dir, args.pytest_args)
    if args.update:
        update(expected, outcomes)
        return smoke.returncode
    problems = compare(expected, outcomes)
    if smoke.returncode != 0:
        problems.append("the smoke failed (above)")
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
