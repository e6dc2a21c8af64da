"""examples/async_server: the Starlette GPU service under load, its limits, real servers.

The load test drives the app in-process (``httpx.ASGITransport``) with 200
concurrent requests on the threaded mock and on cuda-sim with its timing model
(each op holds its engine 2 ms), checks every byte, and records the /health
latency under load against at rest (printed with ``-s``; no wall-clock
assertion).  The last tests start the real servers, uvicorn and hypercorn
under trio, in a subprocess.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import cffi
import httpx
import numpy as np
import pytest

import aruntime as ar
from aruntime._native import native_library_path

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "examples" / "async_server"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"async_server_{name}", SERVER / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


app_module = _load("app")
loadtest = _load("loadtest")


@pytest.fixture
def cuda_sim_timing() -> Iterator[None]:
    """cuda-sim ops hold their engine 2 ms each, as device work would (restored after)."""
    try:
        ar.open_backend("cuda-sim").close()
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"cuda-sim unavailable: {exc}")
    ffi = cffi.FFI()
    ffi.cdef(
        "void arsim_set_timing(double copy_gbps, double op_latency_us);"
        "void arsim_get_timing(double *copy_gbps, double *op_latency_us);"
    )
    lib: Any = ffi.dlopen(str(native_library_path("libcuda.so.1").resolve()))
    gbps, latency = ffi.new("double *"), ffi.new("double *")
    lib.arsim_get_timing(gbps, latency)
    lib.arsim_set_timing(0.0, 2000.0)
    try:
        yield
    finally:
        lib.arsim_set_timing(gbps[0], latency[0])


@asynccontextmanager
async def serving(
    backend: str, limits: Any = None, **options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """The app with its lifespan run, and a client over ASGITransport."""
    app = app_module.create_app(backend, limits, **options)
    async with app.router.lifespan_context(app):
        service = app.state.service
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gpu") as client:
            yield client, service
        # Every request freed its memory and returned its share and its stream.
        assert service.budget.used == 0 and service.waiting == 0
        assert service.gpu.live_alloc_count() == 0, service.gpu.alloc_report()
    assert service.gpu.closed  # the lifespan's exit drained and closed the backend


@pytest.mark.anyio
@pytest.mark.parametrize("variant", ["mock-async", "cuda-sim"])
async def test_200_concurrent_requests_and_health_under_load(
    variant: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    if variant == "cuda-sim":
        request.getfixturevalue("cuda_sim_timing")
        backend, options = "cuda-sim", {}
    else:
        backend, options = "mock", {"latency": 0.002}
    limits = app_module.Limits(wait_timeout=60.0)
    async with serving(backend, limits, **options) as (client, service):
        report = await loadtest.run_load(client, requests=200)
        assert service.served == 200
    assert report.statuses == [200] * 200
    assert report.wrong_bytes == 0
    # /health answered every time while the device work was in flight.
    assert report.load_ms, "no health check ran during the load"
    assert report.health_failures == 0
    record_property("health_latency_ratio", round(report.ratio, 3))
    print(f"\n[{variant}] {report.summary()}")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["mock", "cuda-sim", "levelzero-sim"])
async def test_requests_never_reach_a_driver_alloc_or_free(backend: str) -> None:
    """Per-request memory is stream-ordered and reused: after warm-up, no driver call.

    A driver free synchronises the device on CUDA (and the sims model it), so
    a server that reached one per request would stall every request.
    """
    try:
        ar.open_backend(backend).close()
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{backend} unavailable: {exc}")
    values = np.arange(4096, dtype="<f4")
    async with serving(backend, app_module.Limits(streams=2, wait_timeout=60.0)) as (
        client,
        service,
    ):
        driver = service.gpu.driver
        calls: list[str] = []
        for name in ("mem_alloc", "mem_free", "mem_alloc_async", "mem_free_async"):
            original = getattr(driver, name)

            def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
                calls.append(_name)
                return _original(*args)

            setattr(driver, name, counted)

        async def one() -> None:
            response = await client.post("/scale?factor=2", content=values.tobytes())
            assert response.content == (values * 2).tobytes()

        async def burst(n: int) -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(one)

        await burst(8)  # warm-up: the pool makes a block per stream in use
        del calls[:]
        await burst(32)
        assert service.served == 40
        # The core's pool (mock, Level Zero) makes no driver call at all; CUDA's
        # pool is the driver's, reached only through the stream-ordered calls.
        assert "mem_alloc" not in calls and "mem_free" not in calls, calls


@pytest.mark.anyio
async def test_size_and_format_limits() -> None:
    limits = app_module.Limits(max_request_bytes=4096, max_inflight_bytes=8192)
    async with serving("mock", limits) as (client, _):
        ok = await client.post("/scale?factor=0.5", content=np.ones(1024, "<f4").tobytes())
        assert ok.status_code == 200
        assert ok.headers["content-type"] == "application/octet-stream"
        assert ok.content == np.full(1024, 0.5, "<f4").tobytes()
        too_big = await client.post("/scale", content=bytes(4100))
        assert too_big.status_code == 413

        for bad in (b"", b"abc"):
            assert (await client.post("/scale", content=bad)).status_code == 400
        for factor in ("x", "nan", "inf"):
            response = await client.post(f"/scale?factor={factor}", content=bytes(8))
            assert response.status_code == 400, factor
        assert (await client.get("/scale")).status_code == 405
        health = (await client.get("/health")).json()
        assert health["status"] == "ok" and health["served"] == 1


# The app stops reading at the limit, so httpx's body generator is never
# exhausted; under trio its finalizer reports that (the client's side, not the app's).
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <async_generator object AsyncIteratorByteStream"
    ":pytest.PytestUnraisableExceptionWarning"
)
@pytest.mark.anyio
async def test_body_without_content_length_is_counted_while_read() -> None:
    limits = app_module.Limits(max_request_bytes=4096, max_inflight_bytes=8192)
    async with serving("mock", limits) as (client, _):

        async def chunked(n: int) -> AsyncIterator[bytes]:
            for _ in range(n):
                yield np.ones(256, "<f4").tobytes()

        assert (await client.post("/scale", content=chunked(5))).status_code == 413
        ok = await client.post("/scale?factor=3", content=chunked(4))
        assert ok.status_code == 200 and ok.content == np.full(1024, 3, "<f4").tobytes()


@pytest.mark.anyio
@pytest.mark.parametrize("wait_timeout", [0.05, 30.0])
async def test_overload_answers_503_without_queueing(wait_timeout: float) -> None:
    """While the memory bound is reached, two requests may wait and the rest get 503 at once.

    With a short wait the waiters time out (503 too); with a long one they are
    served as soon as the memory is released.
    """
    limits = app_module.Limits(
        max_request_bytes=4096,
        max_inflight_bytes=4096,
        max_waiting=2,
        wait_timeout=wait_timeout,
        streams=1,
    )
    async with serving("mock", limits, latency=0.001) as (client, service):
        values = np.arange(1024, dtype="<f4")
        responses: list[httpx.Response] = []

        async def one() -> None:
            responses.append(await client.post("/scale?factor=2", content=values.tobytes()))

        # service.budget.reserve: the device memory bound is reached meanwhile
        async with anyio.create_task_group() as tg, service.budget.reserve(4096):
            for _ in range(20):
                tg.start_soon(one)
            # Hold the memory until the waiters have timed out (short wait)
            # or until the others were refused (long wait).
            while len(responses) < (18 if wait_timeout > 1 else 20):
                await anyio.sleep(0.001)
            if wait_timeout > 1:  # nobody timed out: two wait, the rest were refused
                assert service.waiting == 2
                refused = [r.json()["error"] for r in responses]
                assert all("already waiting" in e for e in refused), refused
        codes = [r.status_code for r in responses]
        assert len(codes) == 20
        served = 2 if wait_timeout > 1 else 0
        assert codes.count(200) == served and codes.count(503) == 20 - served, codes
        for r in responses:
            if r.status_code == 200:
                assert r.content == (values * 2).tobytes()
            else:
                assert r.headers["retry-after"] == "1"
        assert service.waiting == 0 and service.budget.used == 0
        ok = await client.post("/scale?factor=2", content=values.tobytes())
        assert ok.status_code == 200 and ok.content == (values * 2).tobytes()


@pytest.mark.anyio
async def test_request_cancelled_mid_flight_returns_its_share() -> None:
    """A client that goes away mid-request: memory, share and stream all come back."""
    limits = app_module.Limits(streams=1)
    async with serving("mock", limits, latency=0.05) as (client, service):
        with anyio.move_on_after(0.02) as scope:
            await client.post("/scale", content=np.ones(256, "<f4").tobytes())
        assert scope.cancelled_caught
        assert service.budget.used == 0 and service.waiting == 0
        assert service.gpu.live_alloc_count() == 0
        ok = await client.post("/scale?factor=4", content=np.ones(256, "<f4").tobytes())
        assert ok.status_code == 200 and ok.content == np.full(256, 4, "<f4").tobytes()


@pytest.mark.anyio
async def test_device_out_of_memory_is_503() -> None:
    async with serving("mock") as (client, service):
        service.gpu.driver.inject_fault("alloc", ar.OutOfMemoryError)
        response = await client.post("/scale", content=bytes(64))
        assert response.status_code == 503
        assert (await client.post("/scale", content=bytes(64))).status_code == 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("server", ["uvicorn", "hypercorn-trio"])
def test_real_server(server: str) -> None:
    """``python examples/async_server`` serves over a socket, under asyncio and trio."""
    port = _free_port()
    argv = [sys.executable, str(SERVER), "--backend", "mock", "--latency", "0.001"]
    argv += ["--port", str(port), *(["--trio"] if server == "hypercorn-trio" else [])]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"{base}/health", timeout=1).json()["status"] == "ok"
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)

        async def load() -> None:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:

                async def one(i: int) -> None:
                    values = np.arange(i + 1, dtype="<f4")
                    r = await client.post(f"/scale?factor={i}", content=values.tobytes())
                    assert r.status_code == 200
                    assert r.content == (values * np.float32(i)).tobytes()

                async with anyio.create_task_group() as tg:
                    for i in range(32):
                        tg.start_soon(one, i)

        anyio.run(load)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.anyio
async def test_a_lost_device_leaves_the_others_serving() -> None:
    """Two devices: one is lost mid-load; its requests get 503, the rest are all right."""
    # Two mock backends stand in for two devices (the mock has one).
    pool = ar.DevicePool([ar.open_backend("mock"), ar.open_backend("mock")], _site=("t", 1))
    with contextlib.ExitStack() as stack:
        stack.callback(pool.close)
        lanes = [
            app_module.Lane(gpu, [stack.enter_context(gpu.create_stream()) for _ in range(2)])
            for gpu in pool.backends
        ]
        for lane in lanes:
            stack.callback(lane.close)
        service = app_module.GpuService(pool, lanes, app_module.Limits())
        values = np.arange(256, dtype="<f4")
        for _ in range(4):  # both devices take work
            assert (await service.scale(values, 3.0) == values * 3).all()
        assert all(lane.served > 0 for lane in lanes)
        lost, alive = lanes
        lost.gpu.driver.inject_fault("launch", ar.DeviceLostError)  # type: ignore[attr-defined]
        outcomes: list[str] = []

        async def one() -> None:
            try:
                out = await service.scale(values, 2.0)
            except app_module.DeviceLost as exc:
                assert "was lost" in str(exc)
                outcomes.append("lost")
            else:
                assert (out == values * 2).all()
                outcomes.append("ok")

        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(one)
        # The requests the lost device held at the time fail; no other does.
        assert outcomes.count("lost") >= 1 and len(outcomes) == 40, outcomes
        assert lost.lost is not None and lost.gpu.closed
        outcomes.clear()
        for _ in range(10):
            await one()
        assert outcomes == ["ok"] * 10
        assert pool.least_busy() is alive.gpu
        assert alive.gpu.live_alloc_count() == 0
