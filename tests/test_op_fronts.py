"""The Backend's compiled fronts (ffi/core/front.c) against its Python methods.

A front takes a memset, host copy, launch or replay only when every check passes, and
hands any other call to the Python method with the caller's own arguments.
So every outcome, and every error and its message, must be the Python
method's; these tests call both and compare.
"""

from __future__ import annotations

import gc
import inspect
import os
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import _enqueue

from .helpers import Gate, backend_or_skip

pytestmark = pytest.mark.anyio

BACKENDS = ["mock", "cuda-sim", "levelzero-sim"]
FRONTED = ("memset_async", "copy_h2d_async", "copy_d2h_async", "launch_graph")


@pytest.fixture(params=BACKENDS)
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    for backend in backend_or_skip(request.param):
        ptr = backend.alloc(8)
        backend.memset_async(ptr, 0, 8).wait()  # the first op puts the fronts on
        backend.free(ptr)
        yield backend


def _python(gpu: ar.Backend, method: str) -> Callable[..., Any]:
    """The Python method itself, bound: what the front falls back to."""
    function: Callable[..., Any] = getattr(type(gpu), method)
    return function.__get__(gpu)


def test_the_fronts_are_put_on_at_the_first_op(gpu: ar.Backend) -> None:
    for method in FRONTED:
        front = getattr(gpu, method)
        assert type(front).__name__ == "OpFront"
        assert front.__func__ is getattr(ar.Backend, method) and front.__self__ is gpu
        assert front.__name__ == method and front.__doc__ == getattr(ar.Backend, method).__doc__
        assert inspect.signature(front) == inspect.signature(_python(gpu, method))


def test_a_new_backend_has_none_until_its_first_op() -> None:
    with ar.open_backend("mock") as gpu:
        assert inspect.ismethod(gpu.memset_async)


def test_switched_off_there_are_none() -> None:
    """``ARUNTIME_COMPILED_ENQUEUE=0`` keeps the Python methods."""
    code = (
        "import aruntime as ar\n"
        "with ar.open_backend('mock') as gpu:\n"
        "    p = gpu.alloc(8); gpu.memset_async(p, 1, 8).wait(); gpu.free(p)\n"
        "    print(type(gpu.memset_async).__name__)\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root, "ARUNTIME_COMPILED_ENQUEUE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["method"]


async def test_the_ops_do_what_the_python_methods_do(gpu: ar.Backend) -> None:
    host = np.arange(256, dtype=np.uint8)
    ptr = gpu.alloc(256)
    with gpu.create_stream() as stream:
        for call in (gpu.memset_async, _python(gpu, "memset_async")):
            await call(ptr, 9, 256, stream=stream)
            back = np.zeros(256, np.uint8)
            await gpu.copy_d2h_async(ptr, back, stream)
            assert (back == 9).all()
        for h2d, d2h in (
            (gpu.copy_h2d_async, gpu.copy_d2h_async),
            (_python(gpu, "copy_h2d_async"), _python(gpu, "copy_d2h_async")),
        ):
            await h2d(host, ptr, stream)
            back = np.zeros(256, np.uint8)
            assert await d2h(ptr, back, stream=stream) is back
            assert (back == host).all()
        # By position, by keyword, and the default stream (made by the first such op).
        await gpu.memset_async(ptr, 3, 256)
        await gpu.memset_async(ptr, 4, 128, stream)
        back = bytearray(256)
        await gpu.copy_d2h_async(ptr, back)
        assert back == bytes([4]) * 128 + bytes([3]) * 128
    gpu.free(ptr)


def _outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[type, str] | None:
    try:
        done = call(*args, **kwargs)
    except Exception as exc:
        return type(exc), str(exc)
    done.wait()
    return None


def test_every_refusal_is_the_python_methods(gpu: ar.Backend) -> None:
    other = ar.open_backend("mock")
    ptr, small, theirs = gpu.alloc(64), gpu.alloc(8), other.alloc(8)
    freed = gpu.alloc(8)
    gpu.free(freed)
    closed_stream = gpu.create_stream()
    closed_stream.close()
    foreign_stream = other.create_stream()
    readonly = np.zeros(64, np.uint8)
    readonly.flags.writeable = False
    try:
        cases: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
            ("memset_async", (ptr, 256, 64), {}),
            ("memset_async", (ptr, -1, 64), {}),
            ("memset_async", (ptr, True, 64), {}),
            ("memset_async", (ptr, 1.0, 64), {}),
            ("memset_async", (ptr, 0, 65), {}),
            ("memset_async", (ptr, 0, -1), {}),
            ("memset_async", (ptr, 0, 1 << 70), {}),
            ("memset_async", (freed, 0, 8), {}),
            ("memset_async", (theirs, 0, 8), {}),
            ("memset_async", (int(ptr), 0, 8), {}),
            ("memset_async", (ptr, 0, 8), {"stream": closed_stream}),
            ("memset_async", (ptr, 0, 8), {"stream": foreign_stream}),
            ("memset_async", (ptr, 0, 8), {"stream": "default"}),
            ("memset_async", (ptr, 0, 8), {"strem": None}),
            ("memset_async", (ptr, 0, 8, None, None), {}),
            ("memset_async", (ptr, 0), {}),
            ("copy_h2d_async", (np.zeros(65, np.uint8), small), {}),
            ("copy_h2d_async", (np.zeros(16, np.float32), small), {}),
            ("copy_h2d_async", (np.zeros((4, 4), np.uint8)[:, ::2], ptr), {}),
            ("copy_h2d_async", ([1, 2, 3], ptr), {}),
            ("copy_h2d_async", (b"x" * 8, freed), {}),
            ("copy_h2d_async", (b"x" * 8, ptr), {"stream": closed_stream}),
            ("copy_d2h_async", (ptr, readonly), {}),
            ("copy_d2h_async", (ptr, b"x" * 8), {}),
            ("copy_d2h_async", (small, bytearray(9)), {}),
            ("copy_d2h_async", (ptr, bytearray(8)), {"stream": foreign_stream}),
        ]
        for method, args, kwargs in cases:
            front = _outcome(getattr(gpu, method), *args, **kwargs)
            python = _outcome(_python(gpu, method), *args, **kwargs)
            assert front is not None, (method, args, kwargs)
            assert front == python, (method, args, kwargs)
        # A numpy count is checked by Python, and taken.
        assert _outcome(gpu.memset_async, ptr, 0, np.int64(8)) is None
        # Nothing to do is a finished no-op both ways.
        assert _outcome(gpu.memset_async, ptr, 0, 0) is None
        assert _outcome(gpu.copy_h2d_async, b"", ptr) is None
    finally:
        foreign_stream.close()
        other.free(theirs)
        other.close()
        gpu.free(ptr)
        gpu.free(small)


def test_a_closed_backend_refuses_as_the_python_method_does() -> None:
    with ar.open_backend("cuda-sim" if "cuda-sim" in ar.available_backends() else "mock") as gpu:
        ptr = gpu.alloc(8)
        gpu.memset_async(ptr, 0, 8).wait()
        gpu.free(ptr)
    assert type(gpu.memset_async).__name__ == "OpFront"
    front = _outcome(gpu.memset_async, ptr, 0, 8)
    assert front is not None and front == _outcome(_python(gpu, "memset_async"), ptr, 0, 8)
    assert front[0] is ar.ClosedResourceError


def test_a_refused_copy_lets_go_of_the_view_it_made(gpu: ar.Backend) -> None:
    """The front makes the host view before it finds the range too small: released at once."""
    small = gpu.alloc(8)
    src = bytearray(16)
    with pytest.raises(ar.InvalidArgumentError):
        gpu.copy_h2d_async(src, small)
    src.extend(b"more")  # a view still exported would make this a BufferError
    dst = bytearray(16)
    with pytest.raises(ar.InvalidArgumentError):
        gpu.copy_d2h_async(small, dst)
    dst.extend(b"more")
    gpu.free(small)


def test_a_copy_holds_its_buffer_until_it_is_done(async_mock_backend: ar.Backend) -> None:
    """As the Python method: the buffer stays exported (unresizable) while the copy may read it."""
    gpu = async_mock_backend
    ptr = gpu.alloc(16)
    gpu.memset_async(ptr, 0, 16).wait()
    assert type(gpu.copy_h2d_async).__name__ == "OpFront"
    with gpu.create_stream() as stream:
        gate = Gate(gpu)
        gate.launch(stream)
        src = bytearray(16)
        done = gpu.copy_h2d_async(src, ptr, stream)  # queued behind the gate
        with pytest.raises(BufferError):
            src.extend(b"x")
        gate.open()
        done.wait()
        src.extend(b"x")  # let go once done
    gpu.free(ptr)


def test_a_backend_with_fronts_is_still_collected() -> None:
    """The fronts and the backend are a cycle: the collector frees it."""
    gpu = ar.open_backend("mock")
    ptr = gpu.alloc(8)
    gpu.memset_async(ptr, 0, 8).wait()
    assert type(gpu.memset_async).__name__ == "OpFront"
    gpu.free(ptr)
    gpu.close()
    gone = weakref.ref(gpu)
    del gpu, ptr
    gc.collect()
    assert gone() is None


def _fill(gpu: ar.Backend) -> ar.Kernel:
    return gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")


async def test_a_launch_does_what_the_python_method_does(gpu: ar.Backend) -> None:
    """The front takes a launch once its signature and geometry were checked (by the first
    launch, in Python), with args as a list or a tuple and the keywords at their defaults."""
    kernel, ptr = _fill(gpu), gpu.alloc(64 * 4)
    back = np.zeros(64, np.float32)
    with gpu.create_stream() as stream:
        launch, python = gpu.launch, _python(gpu, "launch")
        assert type(launch).__name__ == "OpFront"
        for value, call, kwargs in [
            (1.0, python, {"stream": stream}),
            (2.0, launch, {"stream": stream}),
            (3.0, launch, {"stream": stream, "shared_mem": 0, "reads": None, "writes": None}),
            (4.0, launch, {}),
            (5.0, launch, {"stream": stream, "writes": [ptr]}),  # annotated: Python's
        ]:
            args = [np.uint32(64), np.float32(value), ptr]
            await call(kernel, 1, 64, args if value % 2 else tuple(args), **kwargs)
            await gpu.copy_d2h_async(ptr, back, stream)
            assert (back == value).all(), value
    gpu.free(ptr)


def test_every_launch_refusal_is_the_python_methods(gpu: ar.Backend) -> None:
    other = ar.open_backend("mock")
    kernel, ptr = _fill(gpu), gpu.alloc(64)
    freed = gpu.alloc(64)
    gpu.free(freed)
    theirs = _fill(other)
    args = [np.uint32(16), np.float32(1), ptr]
    gpu.launch(kernel, 1, 16, args).wait()  # the signature and geometry, checked once
    try:
        cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
            ((theirs, 1, 16, args), {}),
            (("fill_f32", 1, 16, args), {}),
            ((kernel, 0, 16, args), {}),
            ((kernel, True, 16, args), {}),
            ((kernel, 1, 1 << 40, args), {}),
            ((kernel, 1, 16, [np.uint32(16), 1.0, ptr]), {}),
            ((kernel, 1, 16, [np.uint32(16), np.float32(1), freed]), {}),
            ((kernel, 1, 16, args), {"shared_mem": -1}),
            ((kernel, 1, 16, args), {"shared_mem": 1 << 40}),
            ((kernel, 1, 16, args), {"stream": 3}),
            ((kernel, 1, 16, args), {"reads": [freed]}),
            ((kernel, 1, 16, args), {"grid": 1}),
            ((kernel, 1, 16, args, 0), {}),
            ((kernel, 1, 16), {}),
        ]
        for call_args, kwargs in cases:
            front = _outcome(gpu.launch, *call_args, **kwargs)
            python = _outcome(_python(gpu, "launch"), *call_args, **kwargs)
            assert front is not None, (call_args, kwargs)
            assert front == python, (call_args, kwargs)
    finally:
        gpu.free(ptr)
        other.close()


def test_the_common_case_runs_no_python_of_the_backend_or_ops(gpu: ar.Backend) -> None:
    """What the fronts are for: neither the Backend's method nor Ops' runs for a plain op."""
    kernel, ptr = _fill(gpu), gpu.alloc(64)
    host = np.zeros(16, np.float32)
    args = [np.uint32(16), np.float32(1), ptr]
    with gpu.create_stream() as stream:
        gpu.launch(kernel, 1, 16, args, stream=stream).wait()  # the first launch: Python's
        ran: list[str] = []

        def profile(frame: Any, event: str, arg: object) -> None:
            name = Path(frame.f_code.co_filename).name
            if event == "call" and name in ("_backend.py", "_ops.py"):
                ran.append(f"{name}:{frame.f_code.co_name}")

        sys.setprofile(profile)
        try:
            gpu.memset_async(ptr, 0, 64, stream=stream)
            gpu.copy_h2d_async(host, ptr, stream)
            gpu.copy_d2h_async(ptr, host, stream=stream)
            gpu.launch(kernel, 1, 16, args, stream=stream)
        finally:
            sys.setprofile(None)
        stream.synchronize().wait()
        assert ran == []
        sys.setprofile(profile)
        try:
            with pytest.raises(ar.InvalidArgumentError):
                gpu.memset_async(ptr, 0, 65, stream=stream)  # not the plain case: Python's
        finally:
            sys.setprofile(None)
        assert "_backend.py:memset_async" in ran and "_ops.py:memset_async" in ran
    gpu.free(ptr)


def _filling_graph(gpu: ar.Backend, stream: ar.Stream, ptr: ar.DevicePtr, value: float) -> ar.Graph:
    kernel = _fill(gpu)
    with gpu.capture(stream) as graph:
        gpu.launch(kernel, 1, 16, [np.uint32(16), np.float32(value), ptr], stream=stream)
    return graph


async def test_a_replay_does_what_the_python_method_does(gpu: ar.Backend) -> None:
    """By position, by keyword, on the default stream, and through ``Graph.launch``."""
    ptr, back = gpu.alloc(64), np.zeros(16, np.float32)
    with gpu.create_stream() as stream:
        graph = _filling_graph(gpu, stream, ptr, 7.0)
        assert type(gpu.launch_graph).__name__ == "OpFront"
        for value, replay in [
            (7.0, lambda: _python(gpu, "launch_graph")(graph, stream)),
            (7.0, lambda: gpu.launch_graph(graph, stream)),
            (7.0, lambda: gpu.launch_graph(graph, stream=stream)),
            (7.0, lambda: gpu.launch_graph(graph)),
            (7.0, lambda: graph.launch(stream)),
        ]:
            await gpu.memset_async(ptr, 0, 64, stream=stream)
            await gpu.synchronize()
            await replay()
            await gpu.synchronize()
            await gpu.copy_d2h_async(ptr, back, stream)
            assert (back == value).all()
        graph.close()
    gpu.free(ptr)


def test_every_replay_refusal_is_the_python_methods(gpu: ar.Backend) -> None:
    other = ar.open_backend("mock")
    ptr, theirs = gpu.alloc(64), other.alloc(64)
    closed_stream = gpu.create_stream()
    closed_stream.close()
    try:
        with gpu.create_stream() as stream, other.create_stream() as foreign_stream:
            graph = _filling_graph(gpu, stream, ptr, 1.0)
            destroyed = _filling_graph(gpu, stream, ptr, 2.0)
            destroyed.close()
            foreign = _filling_graph(other, foreign_stream, theirs, 3.0)
            cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
                ((destroyed, stream), {}),
                ((foreign, stream), {}),
                ((graph, foreign_stream), {}),
                ((graph, closed_stream), {}),
                ((graph.handle, stream), {}),
                ((None,), {}),
                ((graph,), {"stream": "default"}),
                ((graph,), {"strem": stream}),
                ((graph, stream, stream), {}),
                ((), {}),
            ]
            for call_args, kwargs in cases:
                front = _outcome(gpu.launch_graph, *call_args, **kwargs)
                python = _outcome(_python(gpu, "launch_graph"), *call_args, **kwargs)
                assert front is not None, (call_args, kwargs)
                assert front == python, (call_args, kwargs)
            # A capture still running: its graph is not ready, refused alike.
            with gpu.capture(stream) as running:
                gpu.memset_async(ptr, 0, 8, stream=stream)
                other_stream = gpu.create_stream()
                front = _outcome(gpu.launch_graph, running, other_stream)
                python = _outcome(_python(gpu, "launch_graph"), running, other_stream)
                assert front is not None and front == python and front[0] is ar.CaptureError
                other_stream.close()
            running.close()
            graph.close()
            foreign.close()
    finally:
        gpu.free(ptr)
        other.free(theirs)
        other.close()


def test_a_replay_runs_no_python_of_the_backend_or_graphs(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(64)
    with gpu.create_stream() as stream:
        graph = _filling_graph(gpu, stream, ptr, 5.0)
        ran: list[str] = []

        def profile(frame: Any, event: str, arg: object) -> None:
            path = Path(frame.f_code.co_filename)
            core = path.parent.name == "aruntime"  # not a driver's own _graphs.py
            if event == "call" and core and path.name in ("_backend.py", "_graphs.py", "_ops.py"):
                ran.append(f"{path.name}:{frame.f_code.co_name}")

        sys.setprofile(profile)
        try:
            gpu.launch_graph(graph, stream)
            graph.launch(stream)
        finally:
            sys.setprofile(None)
        stream.synchronize().wait()
        assert ran == []
        graph.close()
        sys.setprofile(profile)
        try:
            with pytest.raises(ar.ClosedResourceError):
                gpu.launch_graph(graph, stream)  # not the plain case: Python's
        finally:
            sys.setprofile(None)
        assert "_graphs.py:launch_graph" in ran
    gpu.free(ptr)
