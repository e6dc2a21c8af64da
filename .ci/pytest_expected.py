"""A client's pytest suite on a sim, checked against the suite's expected.json.

Shared by .ci/dpctl/run.py and .ci/dpnp/run.py.  A suite runs under pytest
from a scratch folder (so nothing of this checkout shadows the client's
wheel) with a junit report, from which each test's outcome and the first line
of its message are read.  expected.json holds the counts and the known
refusals: node id -> ``why`` (the reason the sim refuses it) and ``message``
(text the failure's message must contain, so that a refusal turning into a
wrong answer is caught).  A run fails CI when fewer tests pass than recorded,
or when a test fails or errs that is not listed, or otherwise than listed.
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

Outcomes = dict[str, dict[str, str]]
# How the sim's refusals begin in a build log ("levelzero-sim: cannot build ...").
SIM_LINE = "levelzero-sim: "


def client_arguments(description: str) -> argparse.Namespace:
    """A client run's command line: ``--lib-dir`` (checked to hold the loader), ``--update``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--lib-dir", type=Path, required=True, help="folder of levelzero-sim's libze_loader.so.1"
    )
    parser.add_argument("--update", action="store_true", help="record this run in expected.json")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    args.lib_dir = args.lib_dir.resolve()
    if not (args.lib_dir / "libze_loader.so.1").exists():
        raise SystemExit(f"no libze_loader.so.1 in {args.lib_dir}")
    return args


def levelzero_environment(lib_dir: Path) -> dict[str, str]:
    """This process's environment with levelzero-sim's libze_loader.so.1 first, as
    ``aruntime env levelzero-sim`` prints it."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(lib_dir), env.get("LD_LIBRARY_PATH", "")) if p
    )
    env["ONEAPI_DEVICE_SELECTOR"] = "level_zero:*"
    return env


def _outcome(case: ET.Element) -> tuple[str, str]:
    """A junit testcase's outcome and the first line of its message, followed
    by the sim's own line where the message has one (a build log's refusal
    comes lines below the client's exception)."""
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            lines = (found.get("message") or "").splitlines()
            sim = [line.strip() for line in lines[1:] if SIM_LINE in line]
            return outcome, " | ".join(lines[:1] + sim[:1])
    return "passed", ""


def junit_outcomes(report: Path) -> Outcomes:
    """Each test's node id (``module::name``) -> its outcome and message."""
    outcomes: Outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        nodeid = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = _outcome(case)
        # A test that failed in its body and again in its teardown keeps the first.
        outcomes.setdefault(nodeid, {"outcome": outcome, "message": message})
    return outcomes


def run_pytest(suite: str, args: list[str], env: dict[str, str]) -> Outcomes:
    """Runs ``pytest args`` from a scratch folder; the outcomes of its report."""
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
            *args,
        ]
        proc = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True)
        # Its failures only: compare() prints the counts, against the listed ones.
        for line in proc.stdout.splitlines():
            if line.startswith(("FAILED ", "ERROR ")):
                print(line)
        if proc.returncode not in (0, 1):
            # A crash (the process aborted) or pytest's own error: its tail says which.
            print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        if not report.exists():
            raise SystemExit(f"{suite} wrote no report (did pytest start, or crash?)")
        return junit_outcomes(report)


def compare(suite: str, expected: dict[str, Any], outcomes: Outcomes) -> list[str]:
    """The reasons this run fails CI (none: it passes)."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    known: dict[str, dict[str, str]] = expected["known_refusals"]
    problems = []
    print(f"{suite}: {dict(sorted(counts.items()))}")
    print(f"expected: {expected['counts']}")
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
    print(f"{suite}: {counts['passed']} passed, {bad} refused ({len(known)} listed)")
    return problems


def _listed(message: str) -> str:
    """What a new refusal lists of its message: the sim's line where there is
    one, without its word offset; else the message's start."""
    sim = message.partition(" | ")[2] or message
    return sim.split(" (Op")[0].split(" at word ")[0][:160] if SIM_LINE in sim else message[:120]


def update(path: Path, expected: dict[str, Any], outcomes: Outcomes) -> None:
    """Records this run's counts in path; a refusal that fails as listed keeps its
    reason, a new one (or one that now fails otherwise) needs one."""
    counts = Counter(entry["outcome"] for entry in outcomes.values())
    expected["counts"] = {k: counts.get(k, 0) for k in ("passed", "failed", "error", "skipped")}
    old: dict[str, dict[str, str]] = expected["known_refusals"]
    refusals = {}
    for nodeid, entry in sorted(outcomes.items()):
        if entry["outcome"] not in ("failed", "error"):
            continue
        listed = old.get(nodeid)
        if listed is None or listed["message"] not in entry["message"]:
            listed = {"why": "TODO: why", "message": _listed(entry["message"])}
        refusals[nodeid] = listed
    expected["known_refusals"] = refusals
    path.write_text(json.dumps(expected, indent=1) + "\n")
    print(f"wrote {path}")
