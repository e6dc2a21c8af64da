"""A Ray Serve deployment whose replicas each run ``scale_f32`` on a device of their own.

``POST /scale?factor=F`` takes raw float32 values (as ``ndarray.tobytes()``
writes them) and answers with the values times ``F``, computed on the
replica's device: upload, launch the builtin ``scale_f32`` kernel, download,
each step awaited, as ``examples/async_server`` does per request.
``GET /stats`` answers with the replica's id, its device and how many
allocations its backend holds (0 between requests: nothing leaks).

Which device a replica owns:

- on CUDA the replica asks Ray for ``num_gpus=1``; Ray narrows
  ``CUDA_VISIBLE_DEVICES`` to the GPU it assigned, so device 0 is that GPU;
- on a sim (cuda-sim, levelzero-sim) there are no GPUs for Ray to assign, so
  each replica takes sim device ``rank % ARUNTIME_SIM_DEVICES``, its rank
  being the one Serve gives it (a replacement replica inherits the rank of
  the one it replaces, so the devices stay spread).

Build the application with :func:`build_app` and run it with ``serve.run``
(``client.py`` does both).
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

import numpy as np
import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import aruntime as ar

BLOCK = 256
MAX_BODY = 1 << 20


def _replica_rank() -> int:
    rank: Any = serve.get_replica_context().rank
    # Ray >= 2.50 gives a ReplicaRank (global and per-node ranks); older ones an int.
    return int(getattr(rank, "local_rank", rank) or 0)


def _device_for_replica(kind: str) -> int:
    if not kind.endswith("-sim"):
        return 0  # the one GPU Ray left visible to this replica
    return _replica_rank() % int(os.environ.get("ARUNTIME_SIM_DEVICES", "1"))


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers={"Retry-After": "1"})


class Scaler:
    """The per-request work on one backend (the replica's, or an in-process one to compare)."""

    def __init__(self, gpu: ar.Backend) -> None:
        self.gpu = gpu
        self.kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        self.served = 0

    async def scale(self, values: np.ndarray, factor: float) -> np.ndarray:
        gpu = self.gpu
        with gpu.create_stream() as stream:
            ptr = gpu.alloc_async(values.nbytes, stream)
            try:
                await gpu.copy_h2d_async(values, ptr, stream=stream)
                grid = (values.size + BLOCK - 1) // BLOCK
                args = [np.uint32(values.size), np.float32(factor), ptr]
                await gpu.launch(self.kernel, grid, BLOCK, args, stream=stream)
                out = np.empty_like(values)
                await gpu.copy_d2h_async(ptr, out, stream=stream)
            finally:
                gpu.free_async(ptr, stream)
                # The free is queued: wait for it so the allocation count is
                # exact when the request answers (and the stream can close).
                with contextlib.suppress(ar.AruntimeError):
                    await stream
        self.served += 1
        return out


class ScaleReplica:
    """One replica: one backend on one device, shared by the requests it serves."""

    def __init__(self, kind: str) -> None:
        self.device = _device_for_replica(kind)
        self.replica_id = serve.get_replica_context().replica_id.unique_id
        self.scaler = Scaler(ar.open_backend(kind, device=self.device))

    def __del__(self) -> None:
        # Serve's only shutdown hook for a replica is __del__ (called when the
        # replica is stopped gracefully); a killed replica's process exits and
        # the driver's memory goes with it.
        self.scaler.gpu.close()

    async def __call__(self, request: Request) -> Response:
        if request.url.path.rstrip("/").endswith("/stats"):
            return JSONResponse(
                {
                    "replica": self.replica_id,
                    "actor": ray.get_runtime_context().get_actor_name(),
                    "pid": os.getpid(),
                    "device": self.device,
                    "served": self.scaler.served,
                    "live_allocs": self.scaler.gpu.live_alloc_count(),
                }
            )
        try:
            factor = float(request.query_params.get("factor", "2"))
        except ValueError:
            return _error(400, "factor must be a number")
        if not math.isfinite(factor):
            return _error(400, "factor must be finite")
        body = await request.body()
        if not body or len(body) % 4 or len(body) > MAX_BODY:
            return _error(400, f"the body must be 1..{MAX_BODY // 4} float32 values")
        try:
            out = await self.scaler.scale(np.frombuffer(body, dtype="<f4"), factor)
        except ar.OutOfMemoryError:
            return _error(503, "the device is out of memory")
        except ar.DeviceLostError as exc:
            return _error(503, f"device {self.device} was lost: {exc}")
        return Response(out.tobytes(), media_type="application/octet-stream")


def build_app(kind: str = "cuda-sim", replicas: int = 2, sim_devices: int = 2) -> Any:
    """The Serve application: ``replicas`` replicas of :class:`ScaleReplica` on ``kind``."""
    options: dict[str, Any] = {"num_cpus": 0}
    if kind.endswith("-sim"):
        # Read by the sim driver when it loads, in the replica's process.
        options["runtime_env"] = {"env_vars": {"ARUNTIME_SIM_DEVICES": str(sim_devices)}}
    else:
        options["num_gpus"] = 1
    deployment = serve.deployment(
        ScaleReplica,
        name="scale",
        num_replicas=replicas,
        ray_actor_options=options,
        max_ongoing_requests=32,
        health_check_period_s=1,
        health_check_timeout_s=10,
        graceful_shutdown_timeout_s=5,
    )
    return deployment.bind(kind)
