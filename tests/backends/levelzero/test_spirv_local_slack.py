"""A load just past the end of a work-group's local memory, as a GPU runs it.

A GPU gives a work-group its shared local memory in steps: on Xe-LP, the
device the sim says it is, the next power of two of the bytes the launch
needs, at least 1 KiB (Intel's compute-runtime, ``alignSlmSize`` in
``shared/source/gen12lp/command_encoder_gen12lp.cpp``).  A load past the
kernel's own bytes but within that step reads whatever is left there, and
dpnp's ``masked_extract`` kernel makes one (and does not use the value).
levelzero-sim runs such a load: it reads zeros and says so once per kernel
on stderr.  Everything else still faults: the same load under
``ARUNTIME_SIM_SANITIZE=1``, a load beyond the step, and any store past the
end.  The kernels are spirv/local_slack.cl and local_slack_big.cl (one
``__local`` array each), built by spirv/build.py.  Each case runs in a fresh
process: the sanitizer is read when the sim loads, and the report goes to
the process's stderr.
"""

from __future__ import annotations

import json
from typing import Any

from ._subproc import run_python

SCRIPT = """
import json
from pathlib import Path

import numpy as np

import aruntime as ar

image, kernel, runs = {image!r}, {kernel!r}, {runs!r}
gpu = ar.open_backend("levelzero-sim")
module = gpu.load_module(kernel, Path("tests/backends/levelzero/spirv", image).read_bytes())
fn = gpu.kernel(module, kernel)
results = []
for index, op in runs:
    at, out = gpu.alloc(8), gpu.alloc(8)
    gpu.copy_h2d(np.array([index, op], np.int32), at)
    gpu.copy_h2d(np.full(2, -1, np.int32), out)
    try:
        gpu.launch(fn, 1, 1, [at, out]).wait()
        results.append({{"out": gpu.copy_d2h(out, np.empty(2, np.int32)).tolist()}})
    except ar.DeviceLostError as e:
        results.append({{"error": str(e)}})
        break  # the device is lost: nothing more runs
print(json.dumps(results))
"""

LOAD, VLOAD2, STORE = 0, 1, 2


def _run(
    runs: list[tuple[int, int]], sanitize: bool = False, big: bool = False
) -> tuple[list[dict[str, Any]], str]:
    """Runs the kernel once per (index, op) in a fresh process: its results and stderr."""
    image, kernel = ("local_slack_big.spv", "slack_big") if big else ("local_slack.spv", "slack")
    code = SCRIPT.format(image=image, kernel=kernel, runs=runs)
    proc = run_python(code, ARUNTIME_SIM_SANITIZE="1" if sanitize else "0")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def _report(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "reads past its end" in line]


def test_a_load_one_past_the_end_reads_zero_and_is_said_once() -> None:
    results, stderr = _run([(5, LOAD), (5, LOAD), (4, LOAD)])
    assert results == [{"out": [0, -1]}, {"out": [0, -1]}, {"out": [104, -1]}], stderr
    (line,) = _report(stderr)  # once per kernel, however often it runs
    assert line.startswith("levelzero-sim: kernel slack: a load of 4 bytes at byte 20 "), line
    assert "local memory reads past its end (20 bytes: " in line, line
    assert "a GPU gives the work-group 1024 bytes of shared local memory and reads " in line, line
    assert "whatever is left there, the sim reads zeros" in line, line
    assert "ARUNTIME_SIM_SANITIZE=1 makes it a fault" in line, line


def test_a_load_across_the_end_reads_its_bytes_then_zeros() -> None:
    """vload2 at buf + 4: buf[4], then the 4 bytes past the end."""
    results, stderr = _run([(4, VLOAD2)])
    assert results == [{"out": [104, 0]}], stderr
    (line,) = _report(stderr)
    assert "a load of 8 bytes at byte 16 " in line, line


def test_the_sanitizer_makes_the_load_a_fault() -> None:
    results, stderr = _run([(5, LOAD)])
    assert results == [{"out": [0, -1]}], stderr
    results, stderr = _run([(5, LOAD)], sanitize=True)
    assert len(results) == 1 and "error" in results[0], results
    assert "kernel slack" in results[0]["error"], results
    assert "invalid access of 4 bytes" in results[0]["error"], results
    assert not _report(stderr), stderr


def test_a_load_beyond_the_allocation_step_faults() -> None:
    """The step for 20 bytes is 1 KiB: its last int reads zero, the next faults."""
    results, stderr = _run([(255, LOAD), (256, LOAD)])
    assert results[0] == {"out": [0, -1]}, stderr
    assert "error" in results[1] and "invalid access of 4 bytes" in results[1]["error"], results
    assert "a load of 4 bytes at byte 1020 " in _report(stderr)[0], stderr


def test_the_step_is_a_power_of_two() -> None:
    """2,100 bytes of __local memory: a GPU gives 4 KiB (not 3), so byte 3072 reads zero."""
    results, stderr = _run([(524, LOAD), (768, LOAD), (1023, LOAD), (1024, LOAD)], big=True)
    assert results[:3] == [{"out": [624, -1]}, {"out": [0, -1]}, {"out": [0, -1]}], stderr
    assert "error" in results[3] and "invalid access of 4 bytes" in results[3]["error"], results
    (line,) = _report(stderr)
    assert "(2100 bytes: " in line and " 4096 bytes of shared local memory" in line, line


def test_a_store_past_the_end_faults_where_a_load_does_not() -> None:
    results, stderr = _run([(5, LOAD), (5, STORE)])
    assert results[0] == {"out": [0, -1]}, stderr
    assert "error" in results[1] and "invalid access of 4 bytes" in results[1]["error"], results
