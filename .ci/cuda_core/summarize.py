"""Counts and first causes of a cuda.core test run on cuda-sim (its JUnit XML).

    python .ci/cuda_core/summarize.py results.xml [--list CATEGORY] [--json out.json]

Prints the four counts (pass, fail, error, skip; an xfail counts as a skip),
each failure and error under its first cause, and the pass rate over the tests
that need neither a cubin nor cudart:

- ``cubin``: the first error is CUDA_ERROR_NO_BINARY_FOR_GPU (an example
  script says so in its stderr), which cuda-sim answers only for GPU machine
  code: a cubin, or a fatbin without PTX it can run.  The tests compile to
  cubin on purpose (``Program.compile("cubin")``).
- ``cudart``: the first error is a runtime-API ``cudaError*``: CUDA's runtime
  (cuda.bindings.runtime, or ``Device.sync``, which calls
  cudaDeviceSynchronize) starts by asking the driver for its private export
  table, which cuda-sim does not have.

The other causes: a driver entry point cuda-sim lacks, a driver error code,
NVML (another library, libnvidia-ml, which cuda-sim does not provide), or an
error raised in Python with no CUDA error under it (the tests of the cuda-python
commit disagreeing with the cuda-core wheel, or this machine).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict

NEED_CUBIN = "cubin"
NEED_CUDART = "cudart"


def _outcome(case: ET.Element) -> tuple[str, str]:
    # What the test wrote to stderr counts too: an example script's traceback
    # is there (run.sh asks pytest to keep it, junit_logging=system-err).
    stderr = "".join(c.text or "" for c in case if c.tag == "system-err")
    for child in case:
        if child.tag in ("failure", "error"):
            text = (child.get("message") or "") + "\n" + (child.text or "")
            return child.tag, text + "\n" + stderr
        if child.tag == "skipped":
            return "skipped", child.get("message") or ""
    return "passed", ""


def first_cause(text: str) -> str:
    """The category of a failure or error, from its message and traceback."""
    if "CUDA_ERROR_NO_BINARY_FOR_GPU" in text or (
        "do not include the corresponding device configuration" in text
    ):
        return NEED_CUBIN
    if re.search(r"\bcudaError\w+", text):
        return NEED_CUDART
    missing = re.search(r"function (cu\w+) is not found", text)
    if missing:
        return f"missing entry point {missing.group(1)}"
    if re.search(r'"nvml" is an NVIDIA driver library|libnvidia-ml', text):
        return "NVML (libnvidia-ml is not part of cuda-sim)"
    code = re.search(r"\b(CUDA_ERROR_\w+)", text)
    if code:
        return code.group(1)
    raised = re.search(r"^E\s+(\w+(?:Error|Exception|Warning)|Failed)\b", text, re.M)
    return f"Python-level {raised.group(1) if raised else 'failure'} (no CUDA error)"


def summarize(path: str) -> dict[str, object]:
    counts: Counter[str] = Counter()
    causes: dict[str, list[str]] = defaultdict(list)
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kind, text = _outcome(case)
        counts[kind] += 1
        if kind in ("failure", "error"):
            causes[first_cause(text)].append(name)
    cubin, cudart = len(causes.get(NEED_CUBIN, ())), len(causes.get(NEED_CUDART, ()))
    ran = counts["passed"] + counts["failure"] + counts["error"]
    rest = ran - cubin - cudart
    return {
        "passed": counts["passed"],
        "failed": counts["failure"],
        "errors": counts["error"],
        "skipped": counts["skipped"],
        "need_cubin": cubin,
        "need_cudart": cudart,
        "rate_of_run": counts["passed"] / rest if rest else 0.0,
        "rate_with_skips": counts["passed"] / (rest + counts["skipped"]) if rest else 0.0,
        "causes": {k: sorted(v) for k, v in sorted(causes.items(), key=lambda kv: -len(kv[1]))},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit_xml")
    parser.add_argument("--list", metavar="CAUSE", help="print the tests of one cause")
    parser.add_argument("--json", metavar="PATH", help="write the summary as JSON")
    args = parser.parse_args(argv)
    s = summarize(args.junit_xml)
    causes = s["causes"]
    assert isinstance(causes, dict)
    if args.list:
        print("\n".join(causes.get(args.list, [])))
        return 0
    print(
        f"passed {s['passed']}, failed {s['failed']}, errors {s['errors']}, "
        f"skipped {s['skipped']} (xfail counted as skipped)"
    )
    print(f"need a cubin: {s['need_cubin']}; need cudart: {s['need_cudart']}")
    print(
        f"pass rate without those: {s['rate_of_run']:.1%} of the tests that ran, "
        f"{s['rate_with_skips']:.1%} counting skips as not passed"
    )
    print("failures and errors by first cause:")
    for cause, names in causes.items():
        print(f"  {len(names):5d}  {cause}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(s, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
