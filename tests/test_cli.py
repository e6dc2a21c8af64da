"""The ``aruntime`` command line: every command, its --help, and its failures."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from aruntime import BACKEND_NAMES, BackendStatus, DeviceInfo, open_backend, probe_backends
from aruntime._demo import DemoConfig, DemoResult, RunTimes
from aruntime.cli import _demo_choice, main, overlap_verdict

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--chunks", "3", "--chunk-mb", "0.01", "--streams", "2", "--no-progress", "--no-trace"]


def _available(name: str) -> bool:
    return any(s.name == name and s.available for s in probe_backends())


@pytest.mark.parametrize("command", [[], ["info"], ["demo"], ["bench"]])
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert "usage: aruntime" in capsys.readouterr().out


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "info" in capsys.readouterr().out


def test_info_lists_every_backend(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # rich reads it: no wrapped cells
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for name in BACKEND_NAMES:
        assert name in out
    assert "aruntime mock device" in out
    assert "aruntime demo (--backend best) would run on:" in out
    assert 'open_backend("auto") opens:' in out


@pytest.mark.parametrize(
    ("knob", "line"),
    [(None, "device code (PTX on cuda-sim, SPIR-V on levelzero-sim)"), ("host", "host builds")],
)
def test_info_says_which_kernels_the_sims_run(
    knob: str | None, line: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    if knob is None:
        monkeypatch.delenv("ARUNTIME_SIM_KERNELS", raising=False)
    else:
        monkeypatch.setenv("ARUNTIME_SIM_KERNELS", knob)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert sum("software drivers run kernels:" in ln for ln in out.splitlines()) == 1
    assert line in out


def test_demo_on_mock(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["demo", "--backend", "mock", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "Pipeline on mock" in out
    assert "match numpy" in out
    for stage in ("H2D copy", "kernel scale_f32", "D2H copy", "overlap, 2 streams"):
        assert stage in out
    # Nothing overlaps on the mock: no verdict, and no speed-up as if it had.
    text = " ".join(out.split())
    assert "its streams cannot overlap" in text, out
    assert "speed-up over" not in text and " met" not in text and "MISSED" not in text, out
    assert "device time, 2 streams" not in text, out


def _result(
    serial: tuple[float, float], pipelined: tuple[float, float], overlaps: bool = True
) -> DemoResult:
    """A DemoResult whose passes took ``(device ms, busiest engine's busy ms)``."""
    one = RunTimes(1, serial[0], serial[0], True, 0.0, {"compute": serial[1]})
    many = RunTimes(4, pipelined[0], pipelined[0], True, 0.0, {"compute": pipelined[1]})
    return DemoResult(DemoConfig(), "levelzero-sim", "sim", one, many, overlaps=overlaps)


def test_demo_verdict_agrees_with_the_speed_up() -> None:
    """levelzero-sim once printed overlap 1.00 'met' beside a 0.89x speed-up."""

    # 1 stream already 0.98 busy; 4 streams slower: 1.00 overlap but no gain.
    slower = overlap_verdict(_result((10.0, 9.8), (11.2, 11.2)))
    assert "MISSED" in slower and "met" not in slower, slower
    assert "0.89x" in slower and "no faster than 1" in slower and "0.98" in slower, slower
    # Faster and overlapped: met, with the speed-up beside it.
    met = overlap_verdict(_result((30.0, 10.0), (12.0, 10.0)))
    assert "met" in met and "MISSED" not in met and "2.50x" in met, met
    # Faster, but the busiest engine idle half the time: missed.
    missed = overlap_verdict(_result((30.0, 10.0), (20.0, 10.0)))
    assert "MISSED" in missed and "1.50x" in missed, missed
    # Streams that cannot overlap: no target, no speed-up.
    mock = overlap_verdict(_result((10.0, 3.0), (4.0, 3.0), overlaps=False))
    assert "cannot overlap" in mock and "speed-up over" not in mock, mock
    assert "met" not in mock and "MISSED" not in mock, mock


@pytest.mark.parametrize("name", ["cuda-sim", "levelzero-sim"])
def test_demo_overlap_is_a_fraction_with_a_verdict(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _available(name):
        pytest.skip(f"{name} is unavailable here")
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["demo", "--backend", name, *SMALL]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if "overlap, 2 streams" in line]
    value = float(row.split("│")[2].split(",")[0])
    assert 0.0 < value <= 1.0, row
    assert "target >= 0.8 met" in row or "target >= 0.8 MISSED" in row, row
    assert "varies from run to run" in " ".join(out.split())


def test_overlap_cannot_exceed_one_when_ops_of_one_engine_overlap() -> None:
    """On several host threads, a sim's copies overlap each other: the figure stays <= 1."""
    from aruntime._demo import ENGINES, RunTimes, _time_stages, union_ms

    assert union_ms([]) == 0.0
    assert union_ms([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0

    class Ev:
        def __init__(self, t: float) -> None:
            self.t = t

    class Gpu:
        def elapsed_ms(self, a: Ev, b: Ev) -> float:
            return b.t - a.t

    class Chunk:
        def __init__(self, *times: float) -> None:
            self.events = tuple(Ev(t) for t in times)

    # Two uploads at once (0-4 and 0-4), then compute and download: the
    # per-stage totals (8 ms of H2D) exceed the pass's 6 ms span.
    first = Chunk(0, 4, 5, 6)
    second = Chunk(0, 4, 5, 6)
    second.events = (first.events[0], *second.events[1:])
    timed = _time_stages(Gpu(), [first, second], None)  # type: ignore[arg-type]
    assert timed is not None
    span, busy = timed
    assert span == 6 and busy == {ENGINES[0]: 4, ENGINES[1]: 1, ENGINES[2]: 1}
    run = RunTimes(2, 7.0, span, True, 0.0, busy)
    assert run.overlap == pytest.approx(4 / 6)
    assert RunTimes(2, 1.0, 1.0, True, 0.0, {"copy H2D": 1.5}).overlap == 1.0
    assert RunTimes(1, 1.0, None, True, 0.0, {}).overlap is None


def test_demo_under_trio_with_a_progress_bar(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The trace goes to the temporary folder's aruntime-demo-trace.json by
    # default: this test's own folder, not the /tmp that other runs (and the
    # other xdist worker) share.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    args = ["demo", "--backend", "mock", "--loop", "trio", "--chunks", "2", "--chunk-mb", "0.01"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "under trio" in out
    assert "2/2" in out  # the progress bar's final state


def test_demo_says_when_it_falls_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARUNTIME_BACKEND", raising=False)
    if _available("cuda") or _available("levelzero"):
        pytest.skip("a real GPU is here: the demo does not fall back")
    assert main(["demo", *SMALL]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "Falling back" in line]
    assert len(lines) == 1
    assert "cuda" in lines[0] and "levelzero" in lines[0]


def test_demo_backend_auto_is_open_backends_auto(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule for "auto" (docs/backends.md); the demo's own preference is "best"."""
    from aruntime._registry import resolve_auto

    monkeypatch.delenv("ARUNTIME_BACKEND", raising=False)
    expected = resolve_auto()
    with open_backend("auto") as gpu:
        assert gpu.name == expected
    assert main(["demo", "--backend", "auto", *SMALL]) == 0
    out = capsys.readouterr().out
    assert f"Pipeline on {expected} " in out
    monkeypatch.setenv("ARUNTIME_BACKEND", "levelzero-sim")
    assert main(["demo", "--backend", "auto", *SMALL]) == 0
    assert "Pipeline on levelzero-sim " in capsys.readouterr().out
    monkeypatch.delenv("ARUNTIME_BACKEND")
    if not (_available("cuda") or _available("levelzero")) and _available("cuda-sim"):
        assert expected == "mock"
        assert main(["demo", "--backend", "best", *SMALL]) == 0
        assert "Pipeline on cuda-sim " in capsys.readouterr().out


def test_backends_doc_states_the_auto_rule_the_code_follows() -> None:
    from aruntime.cli import DEMO_ORDER

    text = (ROOT / "docs" / "backends.md").read_text()
    section = text.split('## Which backend "auto" opens', 1)[1].split("\n## ", 1)[0]
    auto, best = section.split("- **`best`**", 1)
    assert "else a real CUDA device, else a real Level Zero\n  device, else `mock`" in auto
    named = {"cuda": "a real CUDA device", "levelzero": "a real Level Zero"}
    places = [best.index(named.get(n, f"`{n}`")) for n in DEMO_ORDER]
    assert places == sorted(places), "the doc lists 'best' in another order than DEMO_ORDER"


def test_demo_choice_order() -> None:
    dev = (DeviceInfo("d", 1 << 30, 4),)

    def statuses(*available: str) -> list[BackendStatus]:
        return [
            BackendStatus(n, n in available, dev if n in available else (), f"{n}: no driver")
            for n in BACKEND_NAMES
        ]

    assert _demo_choice(statuses("mock", "cuda-sim", "cuda")) == ("cuda", None)
    assert _demo_choice(statuses("mock", "levelzero", "cuda-sim"))[0] == "levelzero"
    name, note = _demo_choice(statuses("mock", "cuda-sim", "levelzero-sim"))
    assert name == "cuda-sim" and note is not None
    assert "cuda: no driver" in note and "levelzero: no driver" in note
    name, note = _demo_choice(statuses("mock", "levelzero-sim"))
    assert name == "levelzero-sim" and note is not None and "cuda-sim: no driver" in note
    name, note = _demo_choice(statuses("mock"))
    assert name == "mock" and note is not None and "mock" in note


def _one_line_failure(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def test_unknown_backend_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--backend", "nope"])
    assert exc.value.code == 2
    assert "invalid choice: 'nope'" in _one_line_failure(capsys)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--chunk-mb", "-1"], "argument --chunk-mb: must be a number > 0 (MiB), got -1"),
        (["--chunk-mb", "0"], "argument --chunk-mb: must be a number > 0 (MiB), got 0"),
        (["--chunk-mb", "inf"], "argument --chunk-mb: must be a number > 0 (MiB), got inf"),
        (["--chunk-mb", "1e-7"], "argument --chunk-mb: must hold at least one float32"),
        (["--chunk-mb", "x"], "argument --chunk-mb: 'x' is not a number"),
        (["--chunks", "0"], "argument --chunks: must be >= 1, got 0"),
        (["--streams", "-2"], "argument --streams: must be >= 1, got -2"),
        (
            ["--trace", "/nonexistent/dir/t.json"],
            "argument --trace: the folder '/nonexistent/dir' does not exist",
        ),
        (["--trace", "/"], "argument --trace: '/' is a folder, not a file"),
        (
            ["--chunk-mb", "100000"],
            "argument --chunk-mb: 100000 MiB x 16 chunks needs 3.052 TiB of pinned host memory",
        ),
        (
            ["--chunk-mb", "3000", "--chunks", "1"],
            "argument --chunk-mb: 3000 MiB x 3 streams needs 8.789 GiB of device memory, "
            "more than mock's 8 GiB",
        ),
    ],
)
def test_demo_checks_every_argument_before_it_runs(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One style for every bad argument: argparse's line, exit 2, and nothing run."""
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--backend", "mock", "--no-progress", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith("aruntime demo: error: "), err
    assert says in err[0] and err[0].endswith("(see aruntime demo --help)"), err


def test_bench_verdicts_say_missed_as_the_footnotes_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    for name in ("_harness", "bench_await"):  # imported afresh, and forgotten after
        monkeypatch.delitem(sys.modules, name, raising=False)
    import _harness
    import bench_await

    monkeypatch.setitem(sys.modules, "_harness", _harness)
    monkeypatch.setitem(sys.modules, "bench_await", bench_await)
    assert "MISSED" in _harness.verdict(2.0, 1.5, at_most=True)
    assert "met" in _harness.verdict(1.0, 1.5, at_most=True)
    monkeypatch.setattr(bench_await, "TARGET", 0.01)  # every row misses
    monkeypatch.setenv("COLUMNS", "200")
    assert bench_await.main(["--quick", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "asyncio own" in line or "trio dflt" in line]
    assert len(rows) == 2 and all("MISSED" in row for row in rows), out
    assert "missed" not in out.replace("a missed target", ""), out
    assert "ends in met or MISSED" in " ".join(out.split()), out


def test_bad_environment_backend_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARUNTIME_BACKEND", "bogus")
    assert main(["demo", *SMALL]) == 1
    assert "ARUNTIME_BACKEND='bogus'" in _one_line_failure(capsys)


def test_unavailable_backend_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    missing = [s.name for s in probe_backends() if not s.available]
    if not missing:
        pytest.skip("every backend is available here")
    assert main(["demo", "--backend", missing[0], *SMALL]) == 1
    assert _one_line_failure(capsys).startswith("aruntime demo: error: ")


def test_bench_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "await", "copy"]) == 0
    out = capsys.readouterr().out
    assert "asyncio" in out and "trio" in out
    assert "copy_h2d" in out and "ratio" in out


def test_bench_lists_and_rejects_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert "await" in listed and "copy" in listed
    assert main(["bench", "nonesuch"]) == 1
    assert "no benchmark named nonesuch" in _one_line_failure(capsys)


def test_python_dash_m() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "aruntime", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("aruntime ")


def test_bench_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """main(argv) per script; --quick passes QUICK_ARGV and skips scripts without it."""
    (tmp_path / "bench_plain.py").write_text(
        "def main(argv=None):\n    print('plain ran with', argv)\n    return 0\n"
    )
    (tmp_path / "bench_broken.py").write_text(
        "QUICK_ARGV = ['--small']\n\ndef main(argv=None):\n    raise RuntimeError('boom')\n"
    )
    assert main(["bench", "--dir", str(tmp_path), "plain"]) == 0
    assert "plain ran with []" in capsys.readouterr().out
    assert main(["bench", "--quick", "--dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "bench_plain has no quick mode" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "bench_broken: RuntimeError: boom" in err[0]


def test_bench_runs_a_module_that_defines_a_dataclass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """@dataclass looks its module up in sys.modules: the script must be registered there."""
    (tmp_path / "bench_typed.py").write_text(
        "from dataclasses import dataclass\n\n"
        "@dataclass\nclass Row:\n    name: str\n\n"
        "def main(argv=None):\n    print('row', Row('x').name)\n    return 0\n"
    )
    assert main(["bench", "--dir", str(tmp_path), "typed"]) == 0
    assert "row x" in capsys.readouterr().out
    assert not [m for m in sys.modules if m.startswith("_aruntime_bench_")]


def test_bench_debug_shows_the_benchmarks_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bench_deep.py").write_text(
        "def inner():\n    raise ValueError('deep down')\n\ndef main(argv=None):\n    inner()\n"
    )
    monkeypatch.setenv("ARUNTIME_DEBUG", "1")
    assert main(["bench", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "bench_deep.py" in err and "in inner" in err
    assert "ValueError: deep down" in err


def test_bench_reports_a_benchmark_that_cannot_run_here_as_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aruntime.cli import SKIPPED

    (tmp_path / "bench_needs.py").write_text(
        f"def main(argv=None):\n    print('needs a package')\n    return {SKIPPED}\n"
    )
    assert main(["bench", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "bench_needs cannot run here" in out and "skipped" in out


def test_every_benchmark_has_a_quick_mode_and_takes_argv() -> None:
    """``aruntime bench --quick`` (run on an installed copy by test_packaging) skips none."""
    import ast

    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    assert len(scripts) >= 12
    for path in scripts:
        tree = ast.parse(path.read_text())
        names = {
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        assert "QUICK_ARGV" in names, f"{path.name} has no QUICK_ARGV"
        (entry,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        assert [a.arg for a in entry.args.args] == ["argv"], f"{path.name}: main(argv)"


def test_demo_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--trace PATH writes the pipelined pass's trace where tracing is built in."""
    monkeypatch.setenv("COLUMNS", "400")  # the path in one table cell, unwrapped
    import aruntime as ar
    from aruntime._demo import can_trace

    path = tmp_path / "demo.json"
    with ar.open_backend("mock") as gpu:
        tracing = can_trace(gpu)
    args = ["--chunks", "2", "--chunk-mb", "0.01", "--no-progress", "--trace", str(path)]
    status = main(["demo", "--backend", "mock", *args])
    if tracing:
        assert status == 0
        assert path.exists()
        assert str(path) in capsys.readouterr().out.replace("\n", "")
    else:
        assert status == 1
        assert "no tracing" in _one_line_failure(capsys)
        assert not path.exists()
