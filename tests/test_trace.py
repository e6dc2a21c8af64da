"""Tracing: the Chrome Trace Event file, and that device overlap shows as overlapping spans.

Overlap is judged from the trace's own (device) timestamps, never from the
wall clock: the sims' timing model makes each op hold its engine for a fixed
time, so a copy and a kernel queued at once on two streams must overlap on
the device, and one stream's ops must not overlap each other.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._native import native_library_path

ROOT = Path(__file__).resolve().parents[1]
EPS_US = 1e-9  # the file keeps one track's spans apart to the nanosecond

_METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def validate_trace(doc: Any) -> list[dict[str, Any]]:
    """Check the Trace Event format's required fields; return the complete ("X") events."""
    assert isinstance(doc, dict), "the object form has a top-level object"
    assert isinstance(doc["traceEvents"], list)
    assert doc["displayTimeUnit"] in ("ms", "ns")
    spans = []
    named_threads: set[tuple[int, int]] = set()
    named_processes: set[int] = set()
    for ev in doc["traceEvents"]:
        assert isinstance(ev, dict)
        assert ev["ph"] in ("X", "M"), ev
        assert isinstance(ev["name"], str) and ev["name"], ev
        for key in ("pid", "tid"):
            assert isinstance(ev[key], int) and not isinstance(ev[key], bool), ev
        if ev["ph"] == "M":
            assert ev["name"] in _METADATA, ev
            assert isinstance(ev["args"], dict)
            if ev["name"] == "thread_name":
                assert isinstance(ev["args"]["name"], str)
                named_threads.add((ev["pid"], ev["tid"]))
            elif ev["name"] == "process_name":
                assert isinstance(ev["args"]["name"], str)
                named_processes.add(ev["pid"])
            continue
        for key in ("ts", "dur"):
            assert isinstance(ev[key], (int, float)) and not isinstance(ev[key], bool), ev
        assert ev["dur"] >= 0, ev
        assert isinstance(ev["cat"], str) and ev["cat"]
        args = ev["args"]
        assert isinstance(args["bytes"], int) and args["bytes"] >= 0
        assert args["kernel"] is None or isinstance(args["kernel"], str)
        assert isinstance(args["stream"], str)
        spans.append(ev)
    for ev in spans:
        assert (ev["pid"], ev["tid"]) in named_threads, f"track {ev['tid']} has no thread_name"
        assert ev["pid"] in named_processes
    return spans


def load(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return validate_trace(json.load(f))


def by_track(spans: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    tracks: dict[int, list[dict[str, Any]]] = {}
    for ev in spans:
        tracks.setdefault(ev["tid"], []).append(ev)
    for evs in tracks.values():
        evs.sort(key=lambda e: e["ts"])
    return tracks


def assert_in_order_per_track(spans: list[dict[str, Any]]) -> None:
    for tid, evs in by_track(spans).items():
        for a, b in itertools.pairwise(evs):
            assert b["ts"] >= a["ts"] + a["dur"] - EPS_US, f"spans overlap on track {tid}: {a} {b}"


def overlapping_pairs(spans: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pairs = []
    for i, a in enumerate(spans):
        for b in spans[i + 1 :]:
            if a["tid"] == b["tid"]:
                continue
            if a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]:
                pairs.append((a["name"], b["name"]))
    return pairs


@contextlib.contextmanager
def gated(gpu: ar.Backend, streams: list[ar.Stream], hold_ops: int = 3) -> Iterator[None]:
    """Hold ``streams`` behind slow ops on a gate stream while the block enqueues.

    Then ops meant to overlap start together on the device even when a loaded
    machine makes enqueueing them take longer than they run.
    """
    scratch = gpu.alloc(64)
    gate = gpu.create_stream()
    event = gpu.create_event()
    for _ in range(hold_ops):
        gpu.memset_async(scratch, 0, 64, stream=gate)
    gpu.record_event(event, gate)
    for st in streams:
        gpu.stream_wait_event(st, event)
    try:
        yield
    finally:
        event.close()
        gate.close()
        gpu.free(scratch)


# -- mock ---------------------------------------------------------------------------------


def _double(launch: ar.LaunchConfig, n: np.uint32, buf: np.ndarray) -> None:
    del launch
    view = buf.view(np.float32)[: int(n)]
    view *= 2


def test_mock_trace_file_structure(tmp_path: Path) -> None:
    path = tmp_path / "mock.json"
    with ar.open_backend("mock") as gpu:
        module = gpu.load_module("demo", {"double": _double})
        kern = gpu.kernel(module, "double")
        host = np.arange(256, dtype=np.float32)
        dev = gpu.alloc(host.nbytes)
        with (
            gpu.create_stream(priority=1) as side,
            gpu.create_event() as uploaded,
            gpu.create_event() as computed,
            gpu.trace(path) as trace,
        ):
            gpu.copy_h2d_async(host, dev)
            gpu.record_event(uploaded)  # events order the streams (no race), untraced
            gpu.stream_wait_event(side, uploaded)
            gpu.launch(kern, 1, 256, [np.uint32(256), dev], stream=side)
            gpu.memset_async(dev, 0, 16, stream=side)
            gpu.record_event(computed, side)
            gpu.stream_wait_event(gpu.default_stream(), computed)
            gpu.copy_d2h_async(dev, host)
            gpu.synchronize()  # a marker, not an op: not traced
        assert trace.written and not trace.active and gpu._tracing.recorder is None
        gpu.free(dev)
    spans = load(path)
    assert [s["args"]["op"] for s in spans] == [
        "copy_h2d_async",
        "launch",
        "memset_async",
        "copy_d2h_async",
    ]
    launch = spans[1]
    assert launch["name"] == "double" and launch["cat"] == "kernel"
    assert launch["args"]["kernel"] == "demo.double"
    assert spans[0]["args"]["bytes"] == host.nbytes and spans[0]["cat"] == "copy_h2d"
    # The two directions use two engines: the kind tells them apart.
    assert [s["cat"] for s in spans] == ["copy_h2d", "kernel", "memset", "copy_d2h"]
    assert {s["args"]["stream"] for s in spans} == {"default stream", "stream 1 (priority 1)"}
    assert_in_order_per_track(spans)
    doc = json.loads(path.read_text())
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert names == {"default stream", "stream 1 (priority 1)"}
    process = [e for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert process[0]["args"]["name"].startswith("mock: ")


def test_trace_spans_api_and_nesting(tmp_path: Path) -> None:
    with ar.open_backend("mock") as gpu:
        dev = gpu.alloc(64)
        outer = gpu.trace(tmp_path / "outer.json")
        gpu.memset_async(dev, 1, 64)
        with gpu.trace(tmp_path / "inner.json") as inner:
            gpu.memset_async(dev, 2, 64)
        gpu.memset_async(dev, 3, 64)
        assert outer.active
        assert outer.stop() == tmp_path / "outer.json"
        assert outer.stop() == tmp_path / "outer.json"  # idempotent
        gpu.memset_async(dev, 4, 64)  # after every trace stopped: not recorded
        gpu.free(dev)
    assert len(outer.spans) == 3 and len(inner.spans) == 1
    span = inner.spans[0]
    assert span.op == "memset_async" and span.nbytes == 64 and span.duration_us >= 0
    assert len(load(tmp_path / "outer.json")) == 3


def test_span_kinds_tell_the_copy_directions_apart(tmp_path: Path) -> None:
    with ar.open_backend("mock") as gpu:
        a, b = gpu.alloc(64), gpu.alloc(64)
        host = np.zeros(64, np.uint8)
        with gpu.trace(tmp_path / "t.json") as trace:
            gpu.copy_h2d_async(host, a)
            gpu.copy_d2d_async(a, b, 64)
            gpu.copy_d2d_2d_async(a, 8, b, 8, 8, 8)
            gpu.copy_d2h_async(b, host)
        gpu.free(a)
        gpu.free(b)
    kinds = [(s.op, s.kind) for s in trace.spans]
    assert kinds == [
        ("copy_h2d_async", "copy_h2d"),
        ("copy_d2d_async", "copy_d2d"),
        ("copy_d2d_2d_async", "copy_d2d"),
        ("copy_d2h_async", "copy_d2h"),
    ]
    assert [s["cat"] for s in load(tmp_path / "t.json")] == [k for _, k in kinds]


def test_trace_errors(tmp_path: Path) -> None:
    gpu = ar.open_backend("mock")
    with pytest.raises(ar.InvalidArgumentError, match="does not exist"):
        gpu.trace(tmp_path / "missing" / "t.json")
    with pytest.raises(TypeError):
        gpu.trace(3)  # type: ignore[arg-type]
    gpu.close()
    with pytest.raises(ar.ClosedResourceError):
        gpu.trace(tmp_path / "t.json")


def test_failed_and_captured_ops_are_not_spans(tmp_path: Path) -> None:
    with ar.open_backend("mock") as gpu:
        dev = gpu.alloc(64)
        stream = gpu.create_stream()
        with gpu.trace(tmp_path / "t.json") as trace:
            gpu.driver.inject_fault("memset", ar.DriverError)  # type: ignore[attr-defined]
            with pytest.raises(ar.DriverError):
                gpu.memset_async(dev, 1, 64).wait()
            with gpu.capture(stream) as graph:
                gpu.memset_async(dev, 2, 64, stream=stream)
            gpu.launch_graph(graph, stream).wait()
        assert trace.dropped == 1
        assert [s.op for s in trace.spans] == ["launch_graph"]
        assert trace.spans[0].kind == "graph"
        graph.close()
        stream.close()
        gpu.free(dev)


def test_close_writes_active_traces(tmp_path: Path) -> None:
    gpu = ar.open_backend("mock", latency=0.001)
    dev = gpu.alloc(64)
    trace = gpu.trace(tmp_path / "t.json")
    gpu.memset_async(dev, 1, 64)
    gpu.free(dev)  # released after the op
    gpu.close()  # waits for the op, then writes the file
    assert trace.written and not trace.active
    assert len(load(tmp_path / "t.json")) == 1


@pytest.mark.anyio
async def test_async_with_awaits_traced_ops(tmp_path: Path) -> None:
    async with ar.open_backend("mock", latency=0.03) as gpu:
        dev = gpu.alloc(1024)
        streams = [gpu.create_stream() for _ in range(2)]
        with gated(gpu, streams):
            async with gpu.trace(tmp_path / "t.json") as trace:
                for i, st in enumerate(streams):
                    gpu.memset_async(dev[i * 512 : (i + 1) * 512], i, 512, stream=st)
                    gpu.memset_async(dev[i * 512 : (i + 1) * 512], i, 512, stream=st)
        assert len(trace.spans) == 4
        spans = load(tmp_path / "t.json")
        assert_in_order_per_track(spans)
        # Each mock stream runs on its own thread, each op sleeping 30 ms: the
        # two streams' ops overlap in the mock's clock.
        assert overlapping_pairs(spans)
        for st in streams:
            st.close()
        gpu.free(dev)


@pytest.mark.anyio
async def test_async_exit_leaves_an_unawaited_error_to_synchronize(tmp_path: Path) -> None:
    async with ar.open_backend("mock", latency=0.005) as gpu:
        dev = gpu.alloc(64)
        gpu.driver.inject_fault("memset", ar.DriverError)  # type: ignore[attr-defined]
        async with gpu.trace(tmp_path / "t.json") as trace:
            failing = gpu.memset_async(dev, 1, 64)
        assert failing.done() and trace.written
        with pytest.raises(ar.DriverError):
            await gpu.synchronize()  # the trace waited for the op but did not take its error
        gpu.free(dev)


# -- the sims, with their timing model ------------------------------------------------------


@contextlib.contextmanager
def sim_timing(name: str, copy_gbps: float, latency_us: float) -> Iterator[None]:
    if name == "cuda-sim":
        lib: Any = ctypes.CDLL(os.path.realpath(native_library_path("libcuda.so.1")))
        setter = lib.arsim_set_timing
    else:
        lib = ctypes.CDLL(str(native_library_path("libze_aruntime_sim.so").resolve()))
        setter = lib.arze_sim_set_timing
    setter.argtypes = [ctypes.c_double, ctypes.c_double]
    setter(copy_gbps, latency_us)
    try:
        yield
    finally:
        setter(0.0, 0.0)


def open_sim(name: str) -> ar.Backend:
    try:
        return ar.open_backend(name)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.mark.parametrize("name", ["cuda-sim", "levelzero-sim"])
def test_sim_overlap_shows_as_overlapping_spans(name: str, tmp_path: Path) -> None:
    gpu = open_sim(name)
    try:
        kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
        n = 1 << 16
        host = np.zeros(n, np.float32)
        a, b = gpu.alloc(host.nbytes), gpu.alloc(host.nbytes)
        s1, s2 = gpu.create_stream(), gpu.create_stream()
        args_a = [np.uint32(n), np.float32(1), a]
        args_b = [np.uint32(n), np.float32(2), b]
        path = tmp_path / f"{name}.json"
        with sim_timing(name, 1.0, 30_000.0), gated(gpu, [s1, s2]), gpu.trace(path):
            # s1: copy then kernel; s2: kernel then copy.  The copy engine and
            # the compute engine each take one op of each stream at a time.
            gpu.copy_h2d_async(host, a, s1)
            gpu.launch(kern, n // 256, 256, args_b, stream=s2)
            gpu.launch(kern, n // 256, 256, args_a, stream=s1)
            gpu.copy_d2h_async(b, host, s2)
            done = [gpu.synchronize(s1), gpu.synchronize(s2)]
            for c in done:
                c.wait(timeout=60)
        spans = load(path)
        assert len(spans) == 4
        assert_in_order_per_track(spans)
        assert len(by_track(spans)) == 2
        pairs = overlapping_pairs(spans)
        assert ("copy_h2d_async", "fill_f32") in pairs, spans
        kernels = [s for s in spans if s["cat"] == "kernel"]
        assert {s["args"]["kernel"] for s in kernels} == {"aruntime.vector_ops.fill_f32"}
        # The timing model's lower bound: every op held its engine >= 30 ms.
        assert all(s["dur"] >= 30_000 - 50 for s in spans), spans
        np.testing.assert_array_equal(host, np.full(n, 2, np.float32))
        s1.close()
        s2.close()
        gpu.free(a)
        gpu.free(b)
    finally:
        gpu.close()


@pytest.mark.parametrize("name", ["cuda-sim", "levelzero-sim"])
def test_traced_kernel_failure_reaches_its_awaiter(name: str, tmp_path: Path) -> None:
    gpu = open_sim(name)
    try:
        kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
        dev = gpu.alloc(1024)
        st = gpu.create_stream()
        if name == "cuda-sim":
            lib: Any = ctypes.CDLL(os.path.realpath(native_library_path("libcuda.so.1")))
            inject = lib.arsim_inject_fault
        else:
            lib = ctypes.CDLL(str(native_library_path("libze_aruntime_sim.so").resolve()))
            inject = lib.arze_sim_inject_fault
        with gpu.trace(tmp_path / "t.json"):
            inject(-1, 2, 1)  # the next kernel fails when it runs (not sticky)
            failing = gpu.launch(kern, 1, 64, [np.uint32(64), np.float32(1), dev], stream=st)
            with pytest.raises(ar.DriverError):
                failing.wait(timeout=60)
            gpu.memset_async(dev, 0, 1024, stream=st).wait(timeout=60)
        assert [s["args"]["op"] for s in load(tmp_path / "t.json")][-1] == "memset_async"
        st.close()
        gpu.free(dev)
    finally:
        gpu.close()


# -- ARUNTIME_TRACE ----------------------------------------------------------------------------

_SCRIPT = """
import sys
import numpy as np
import aruntime as ar

gpu = ar.open_backend(sys.argv[1])
dev = gpu.alloc(4096)
gpu.copy_h2d(np.ones(4096, np.uint8), dev)
gpu.memset(dev, 0, 100)
if sys.argv[2] == "close":
    gpu.free(dev)
    gpu.close()
second = ar.open_backend("mock")
second.memset(second.alloc(8), 1, 8)
# "exit": the backends stay open; the exit hook writes what has finished.
"""


def _run(tmp_path: Path, backend: str, how: str, trace: Path) -> None:
    env = dict(os.environ, ARUNTIME_TRACE=str(trace), PYTHONPATH=str(ROOT))
    subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(_SCRIPT), backend, how],
        env=env,
        check=True,
        timeout=120,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("how", ["close", "exit"])
def test_env_trace_in_a_subprocess(tmp_path: Path, how: str) -> None:
    trace = tmp_path / "env.json"
    _run(tmp_path, "mock", how, trace)
    spans = load(trace)
    assert [s["args"]["op"] for s in spans] == ["copy_h2d_async", "memset_async"]
    # The process's second backend writes next to it, never over it.
    assert [s["args"]["op"] for s in load(tmp_path / "env-2.json")] == ["memset_async"]


def test_env_trace_to_a_missing_folder_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aruntime import _trace

    monkeypatch.setenv("ARUNTIME_TRACE", str(tmp_path / "missing" / "t.json"))
    monkeypatch.setattr(_trace, "_env_traces", iter([1]))
    with pytest.warns(RuntimeWarning, match="not tracing: ARUNTIME_TRACE: the folder"):
        gpu = ar.open_backend("mock")
    with gpu:
        assert gpu._tracing.recorder is None


def test_env_trace_on_cuda_sim(tmp_path: Path) -> None:
    open_sim("cuda-sim").close()
    trace = tmp_path / "env.json"
    _run(tmp_path, "cuda-sim", "close", trace)
    assert [s["args"]["op"] for s in load(trace)] == ["copy_h2d_async", "memset_async"]


# -- Perfetto ------------------------------------------------------------------------------------


def _trace_processor_shell() -> str | None:
    explicit = os.environ.get("PERFETTO_TRACE_PROCESSOR_SHELL")
    if explicit and Path(explicit).is_file():
        return explicit
    found = shutil.which("trace_processor_shell") or shutil.which("trace_processor")
    if found:
        return found
    cache = Path.home() / ".local" / "share" / "perfetto" / "prebuilts"
    for candidate in sorted(cache.glob("trace_processor_shell*")) if cache.is_dir() else []:
        if candidate.is_file() and os.access(candidate, os.X_OK) and candidate.suffix != ".tmp":
            return str(candidate)
    return None


def test_perfetto_trace_processor_loads_the_trace(tmp_path: Path) -> None:
    tp_module = pytest.importorskip(
        "perfetto.trace_processor", reason="pip install perfetto to load traces in Perfetto"
    )
    shell = _trace_processor_shell()
    if shell is None:
        pytest.skip(
            "the perfetto package is installed but its trace_processor_shell binary is not: "
            "the package downloads it on first use, and this machine is offline "
            "(set PERFETTO_TRACE_PROCESSOR_SHELL to a local copy)"
        )
    path = tmp_path / "t.json"
    with ar.open_backend("mock") as gpu, gpu.create_stream() as side:
        dev = gpu.alloc(256)
        with gpu.trace(path):
            gpu.memset_async(dev, 1, 128)
            gpu.memset_async(dev[128:], 2, 128, stream=side)
        gpu.free(dev)
    config = tp_module.TraceProcessorConfig(bin_path=shell)
    with tp_module.TraceProcessor(trace=str(path), config=config) as tp:
        rows = list(
            tp.query(
                "select s.name as name, t.name as thread from slice s "
                "join thread_track tt on s.track_id = tt.id "
                "join thread t using(utid) order by s.ts"
            )
        )
    assert [(r.name, r.thread) for r in rows] == [
        ("memset_async", "default stream"),
        ("memset_async", "stream 1 (priority 0)"),
    ]


def test_a_traced_op_keeps_its_own_error_on_a_threaded_driver(tmp_path: Path) -> None:
    # The threaded mock hands an op's error to the next event recorded on its
    # stream: the trace's end event comes after the op's marker, so the
    # failing op's own Completion fails with its own error, and the next op
    # with one naming it (stream order), not the other way round.
    with ar.open_backend("mock", latency=0.0) as gpu:
        dev = gpu.alloc(64)
        with gpu.trace(tmp_path / "t.json") as trace:
            gpu.driver.inject_fault("memset", ar.DriverError)  # type: ignore[attr-defined]
            failing = gpu.memset_async(dev, 1, 64)
            fine = gpu.memset_async(dev, 2, 64)
            with pytest.raises(ar.DriverError, match=r"^memset: injected"):
                failing.wait(30)
            with pytest.raises(ar.DriverError, match="the earlier op memset_async") as info:
                fine.wait(30)
            assert info.value.first_failure is failing  # type: ignore[attr-defined]
        assert len(trace.spans) + trace.dropped == 2
        gpu.free(dev)
