"""Messages a new user reads are whole: none stops at "tried:" or in mid-clause ("...")."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from aruntime import cli
from aruntime._registry import BackendStatus, probe_backends

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

#: A clause cut off: a heading with nothing after it, or an ellipsis.
CUT = re.compile(r"(tried|:)\s*($|[;)])|\.\.\.")


#: The cuda backend's reason on a machine without libcuda (what the issue quoted, cut).
NO_LIBCUDA = (
    "the cuda backend is unavailable; tried:\n"
    "  - libcuda.so.1 cannot be loaded: cannot load library 'libcuda.so.1': libcuda.so.1: "
    "cannot open shared object file: No such file or directory.  Additionally, "
    "ctypes.util.find_library() did not manage to locate a library called 'libcuda.so.1'"
)


def test_demo_fallback_names_whole_reasons() -> None:
    statuses = [
        BackendStatus("cuda", False, (), NO_LIBCUDA),
        BackendStatus(
            "levelzero",
            False,
            (),
            "levelzero: no usable Level Zero library; tried:\n"
            "  - ARUNTIME_LEVELZERO_LIBRARY: not set\n"
            "  - libze_loader.so.1: no Level Zero driver is installed for it to load "
            "(looked for libze_intel_gpu.so.1, libze_intel_vpu.so.1)",
        ),
        BackendStatus("cuda-sim", True, ()),
    ]
    name, note = cli._demo_choice(statuses)
    assert name == "cuda-sim"
    assert note == (
        "Falling back to the cuda-sim software driver: cuda: libcuda.so.1 cannot be loaded; "
        "levelzero: libze_loader.so.1: no Level Zero driver is installed for it to load "
        "(details: aruntime info)."
    )


def test_demo_line_here_is_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_BACKEND", raising=False)
    _, note = cli._demo_choice(probe_backends())
    if note is None:
        pytest.skip("a real device is here: the demo names no fallback")
    assert not CUT.search(note.removesuffix(" (details: aruntime info).")), note


def test_a_long_single_clause_is_kept_whole() -> None:
    long = "x" * 150
    status = BackendStatus(
        "cuda", False, (), f"the cuda backend is unavailable; tried:\n  - {long}"
    )
    assert cli._short(status) == long


def test_error_line_keeps_the_listed_causes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARUNTIME_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
    assert cli.main(["demo", "--backend", "cuda", "--no-progress", "--no-trace"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("aruntime demo: error: the cuda backend is unavailable; tried: ")
    assert re.search(r"tried: \S", line) and "/nonexistent/libcuda.so.1" in line, line
    assert not CUT.search(line)


def test_bench_compute_says_why_a_backend_is_skipped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_compute

    monkeypatch.setenv("ARUNTIME_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
    bench_compute.sim_table(["cuda"], 0.001)
    bench_compute.gpu_table(0.001)
    lines = [line for line in capsys.readouterr().out.splitlines() if "skipped" in line]
    assert len(lines) == 2, lines
    for line in lines:
        assert re.search(r"tried: \S", line) and "/nonexistent/libcuda.so.1" in line, line
        assert not CUT.search(line), line
    sys.modules.pop("bench_compute", None)
