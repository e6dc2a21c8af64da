"""An HTTP service that runs a GPU kernel per request, without blocking its loop.

``POST /scale?factor=F`` takes a body of raw float32 values (little-endian, as
``numpy.ndarray.tobytes()`` writes them) and answers with the same values
times ``F``, computed on the device: the request uploads its array, launches
the builtin ``scale_f32`` kernel and downloads the result, awaiting each step,
so while the device works the event loop keeps serving other requests.
``GET /health`` answers at once, whatever the device is doing.

Admission control keeps a burst from piling up:

- a body over ``max_request_bytes`` is refused with 413 (before it is read
  when the client sends Content-Length), an empty or misaligned body or a bad
  ``factor`` with 400;
- at most ``max_inflight_bytes`` of device memory are in use by requests at
  once; a request waits for its share at most ``wait_timeout`` seconds, and
  at most ``max_waiting`` requests wait at all, so overload answers 503 (with
  Retry-After) instead of growing a queue;
- requests share a small pool of streams (one request per stream at a time).

With several devices (``--devices 0,1`` or ``--devices all``) the service
opens them as one :class:`aruntime.DevicePool` and sends each request to the
least busy device; a device that is lost answers 503 for its own requests
and leaves the pool, while the others keep serving.

Each request allocates its device memory with ``alloc_async`` and frees it
with ``free_async`` on its stream: the memory comes back to the next request
in the stream's order, so serving never reaches a driver free (which
synchronises the whole device on CUDA) and nothing waits for other
requests' work.

Run it with ``python examples/async_server`` (see ``__main__.py``), or build
the app yourself with :func:`create_app` and serve it with any ASGI server.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import aruntime as ar

BLOCK = 256


@dataclass(frozen=True)
class Limits:
    max_request_bytes: int = 1 << 20  # 413 above this
    max_inflight_bytes: int = 8 << 20  # device memory all requests may hold at once
    max_waiting: int = 256  # requests allowed to wait for memory or a stream
    wait_timeout: float = 2.0  # seconds a request may wait before 503
    streams: int = 4

    def __post_init__(self) -> None:
        if not 0 < self.max_request_bytes <= self.max_inflight_bytes:
            raise ValueError("max_request_bytes must be > 0 and fit in max_inflight_bytes")
        if self.streams < 1 or self.max_waiting < 0 or self.wait_timeout < 0:
            raise ValueError(f"bad limits: {self}")


class Overloaded(Exception):
    """No capacity within the wait budget: answer 503."""


class ByteBudget:
    """A semaphore counted in bytes: the bound on in-flight device memory."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._changed = anyio.Condition()

    @contextlib.asynccontextmanager
    async def reserve(self, nbytes: int) -> AsyncIterator[None]:
        """Hold ``nbytes`` of the budget for the block.

        Waits until they fit; cancelling the wait (a timeout) takes nothing.
        """
        async with self._changed:
            while self.used + nbytes > self.capacity:
                await self._changed.wait()
            self.used += nbytes
        try:
            yield
        finally:
            self.used -= nbytes  # no await: a cancelled request still returns its share
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._changed.notify_all()


class DeviceLost(Exception):
    """The device a request ran on was lost: answer 503; the other devices serve on."""


class Lane:
    """One device of the service: its backend, its stream pool and its kernel."""

    def __init__(self, gpu: ar.Backend, streams: list[ar.Stream]) -> None:
        self.gpu = gpu
        self.lost: str | None = None  # why the device stopped serving, once it has
        self.served = 0
        self._idle_send, self._idle_receive = anyio.create_memory_object_stream[ar.Stream](
            len(streams)
        )
        for stream in streams:
            self._idle_send.send_nowait(stream)
        self.scale_kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")

    async def take_stream(self) -> ar.Stream:
        return await self._idle_receive.receive()

    def give_back(self, stream: ar.Stream) -> None:
        self._idle_send.send_nowait(stream)

    def close(self) -> None:
        self._idle_send.close()
        self._idle_receive.close()


class GpuService:
    """The devices, their stream pools and the admission limits, shared by all requests.

    With several devices (``devices=[0, 1]``, or ``None`` for every device of
    the backend) each request goes to the least busy one; a device that is
    lost answers 503 for the requests it held and takes no more, while the
    others keep serving.
    """

    def __init__(self, pool: ar.DevicePool, lanes: list[Lane], limits: Limits) -> None:
        self.pool = pool
        self.lanes = {id(lane.gpu): lane for lane in lanes}
        self.limits = limits
        self.budget = ByteBudget(limits.max_inflight_bytes)
        self.waiting = 0
        self.served = 0

    @property
    def gpu(self) -> ar.Backend:
        """The first device (the only one, unless the service was opened with several)."""
        return self.pool.backends[0]

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        backend: str = "auto",
        limits: Limits | None = None,
        devices: list[int] | None = [0],  # noqa: B006 (never mutated)
        **options: Any,
    ) -> AsyncIterator[GpuService]:
        """Open the devices and their stream pools; on exit, drain and release them."""
        limits = limits or Limits()
        async with ar.open_pool(backend, devices, **options) as pool:
            with contextlib.ExitStack() as stack:
                lanes = []
                for gpu in pool.backends:
                    streams = [
                        stack.enter_context(gpu.create_stream()) for _ in range(limits.streams)
                    ]
                    lane = Lane(gpu, streams)
                    stack.callback(lane.close)
                    lanes.append(lane)
                yield cls(pool, lanes, limits)

    def _lane(self) -> Lane:
        try:
            return self.lanes[id(self.pool.least_busy())]
        except ar.ClosedResourceError:
            raise DeviceLost("every device of the service was lost") from None

    @contextlib.asynccontextmanager
    async def _admitted(self, nbytes: int) -> AsyncIterator[tuple[Lane, ar.Stream]]:
        """A device, device memory and a stream for one request, or :class:`Overloaded`."""
        if self.waiting >= self.limits.max_waiting:
            raise Overloaded(f"{self.waiting} requests are already waiting")
        self.waiting += 1
        try:
            with anyio.fail_after(self.limits.wait_timeout):
                async with contextlib.AsyncExitStack() as stack:
                    await stack.enter_async_context(self.budget.reserve(nbytes))
                    lane = self._lane()
                    stream = await lane.take_stream()
                    stack.callback(lane.give_back, stream)
                    admitted = stack.pop_all()  # held past this block, released below
        except TimeoutError:
            raise Overloaded(f"no capacity within {self.limits.wait_timeout} s") from None
        finally:
            self.waiting -= 1
        async with admitted:
            yield lane, stream

    async def scale(self, values: np.ndarray, factor: float) -> np.ndarray:
        """``values * factor`` computed on a device; every step is awaited.

        Raises :class:`Overloaded` when no capacity frees up in time, and
        :class:`DeviceLost` when the device the request ran on was lost (that
        device then takes no more requests).  When cancelled, it first waits
        (shielded) for the ops it already queued, so the memory and the
        stream it gives back are really free.
        """
        async with self._admitted(values.nbytes) as (lane, stream):
            try:
                out = await self._scale_on(lane, stream, values, factor)
            except (ar.DeviceLostError, ar.ClosedResourceError) as exc:
                # Closed: another request on this device found it lost first.
                if isinstance(exc, ar.DeviceLostError):
                    self._lose(lane, exc)
                elif lane.lost is None:
                    raise
                raise DeviceLost(f"{lane.gpu.device.name} was lost: {lane.lost}") from exc
        lane.served += 1
        self.served += 1
        return out

    async def _scale_on(
        self, lane: Lane, stream: ar.Stream, values: np.ndarray, factor: float
    ) -> np.ndarray:
        gpu = lane.gpu
        # Stream-ordered: usable at once by this stream's ops, reused from
        # earlier requests' frees, and no call here waits for the device.
        ptr = gpu.alloc_async(values.nbytes, stream)
        try:
            await gpu.copy_h2d_async(values, ptr, stream=stream)
            grid = (values.size + BLOCK - 1) // BLOCK
            args = [np.uint32(values.size), np.float32(factor), ptr]
            await gpu.launch(lane.scale_kernel, grid, BLOCK, args, stream=stream)
            out = np.empty_like(values)
            await gpu.copy_d2h_async(ptr, out, stream=stream)
        except BaseException:
            # Cancelled (the client went away) or failed mid-way: the queued
            # ops still run.  Wait for them before giving back the memory
            # share and the stream, so the bound stays exact.
            with anyio.CancelScope(shield=True), contextlib.suppress(ar.AruntimeError):
                await stream
            raise
        finally:
            with contextlib.suppress(ar.DeviceLostError, ar.ClosedResourceError):
                gpu.free_async(ptr, stream)  # after this request's ops, in the stream's order
        return out

    def _lose(self, lane: Lane, exc: BaseException) -> None:
        """Take a lost device out of the pool: least_busy() passes over a closed backend."""
        if lane.lost is None:
            lane.lost = str(exc)
            with contextlib.suppress(ar.AruntimeError):
                lane.gpu.close()  # releases what the host holds; the device's errors are moot


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is larger than ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None  # refused before reading a byte
    chunks, size = [], 0
    async with contextlib.aclosing(request.stream()) as body:  # closed even if we stop early
        async for chunk in body:
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def _service(request: Request) -> GpuService:
    service: GpuService = request.app.state.service
    return service


async def scale(request: Request) -> Response:
    service = _service(request)
    try:
        factor = float(request.query_params.get("factor", "2"))
    except ValueError:
        return _error(400, "factor must be a number")
    if not math.isfinite(factor):
        return _error(400, "factor must be finite")
    body = await _read_body(request, service.limits.max_request_bytes)
    if body is None:
        return _error(413, f"the body is over {service.limits.max_request_bytes} bytes")
    if not body or len(body) % 4:
        return _error(400, f"the body must be float32 values, got {len(body)} bytes")
    values = np.frombuffer(body, dtype="<f4")
    try:
        out = await service.scale(values, factor)
    except Overloaded as exc:
        return _error(503, f"overloaded: {exc}", {"Retry-After": "1"})
    except ar.OutOfMemoryError:
        return _error(503, "the device is out of memory", {"Retry-After": "1"})
    except DeviceLost as exc:
        return _error(503, str(exc), {"Retry-After": "1"})
    return Response(out.tobytes(), media_type="application/octet-stream")


async def health(request: Request) -> Response:
    service = _service(request)
    return JSONResponse(
        {
            "status": "ok",
            "backend": service.gpu.name,
            "devices": [
                {"name": lane.gpu.device.name, "served": lane.served, "lost": lane.lost}
                for lane in service.lanes.values()
            ],
            "inflight_bytes": service.budget.used,
            "waiting": service.waiting,
            "served": service.served,
        }
    )


def create_app(
    backend: str = "auto",
    limits: Limits | None = None,
    devices: list[int] | None = [0],  # noqa: B006 (never mutated)
    **options: Any,
) -> Starlette:
    """The ASGI app; the devices open at startup and close at shutdown (lifespan).

    ``devices`` lists the device ordinals to serve from (``None``: every
    device of the backend).  ``options`` go to :func:`aruntime.open_backend`
    (``latency=0.002`` makes the mock's ops take time).
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with GpuService.open(backend, limits, devices, **options) as service:
            app.state.service = service
            yield

    return Starlette(
        routes=[Route("/scale", scale, methods=["POST"]), Route("/health", health)],
        lifespan=lifespan,
    )
