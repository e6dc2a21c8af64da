"""Copies and fills; pageable host memory is staged through pinned buffers."""

from __future__ import annotations

from typing import Any, cast

from ..._driver import Driver, DriverStream
from ..._exceptions import OutOfMemoryError
from .._staging import DIRECT_PAGEABLE_H2D_MAX, chunks
from ._base import _CudaBase, _current
from ._constants import (
    _CU_MEMORYTYPE_DEVICE,
    _CU_STREAM_CAPTURE_STATUS_NONE,
    _CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
)
from ._ffi import CData
from ._handles import _Stream


class _CopyOps(_CudaBase):
    # -- async copies ------------------------------------------------------------
    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
        """Enqueue a host-to-device copy (callers serialise enqueues per stream).

        Pageable-memory policy.  For pageable (not page-locked) source memory,
        the CUDA driver first copies the bytes into its own pinned staging
        buffers on the calling thread, and blocks that thread while its
        staging buffers are full, that is, for about the length of a large
        copy.  To keep the event loop free:

        * pinned memory (``alloc_host_pinned``, or memory that
          ``cuPointerGetAttribute`` reports as host memory, e.g. pinned by
          PyTorch) goes straight to ``cuMemcpyHtoDAsync_v2``;
        * pageable copies up to 64 KiB also go straight to the driver: staging
          them costs the calling thread a memcpy of a few microseconds;
        * larger pageable copies are cut into 4 MiB chunks.  Each chunk is
          enqueued as a native host function (``cuLaunchHostFunc``; C code in
          ``libaruntime_cuda_helpers.so``, no Python and no GIL on the driver
          thread) that copies it into a per-stream pinned staging buffer,
          followed by ``cuMemcpyHtoDAsync_v2`` from that buffer.  Stream order
          guarantees that a chunk is not staged before the previous one has
          left the buffer.  The calling thread only enqueues: 2 driver calls
          per 4 MiB.

        The core keeps ``src`` alive until the op completes, which covers the
        host function reading it later.
        """
        s: _Stream = stream  # type: ignore[assignment]  # not cast(): a call per op
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyHtoDAsync_v2")
        nbytes = src.nbytes
        buffer = self._ffi.from_buffer(src)
        try:
            if nbytes > DIRECT_PAGEABLE_H2D_MAX and not self._is_pinned(
                int(self._ffi.cast("uintptr_t", buffer)), nbytes
            ):
                self._staged_copy(s, buffer, dst, nbytes, to_device=True)
                return
            code = self._lib.cuMemcpyHtoDAsync_v2(dst, buffer, nbytes, s.handle)
            if code != 0:
                raise self._fail(code, "cuMemcpyHtoDAsync_v2")
        except BaseException:
            _release_export(self._ffi, buffer)
            raise

    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None:
        """Enqueue a device-to-host copy.

        Pageable-memory policy.  A ``cuMemcpyDtoHAsync`` into pageable memory
        is synchronous in the CUDA driver: the calling thread waits for all
        earlier work on the stream and then for the copy.  So every pageable
        destination, whatever its size, is staged: ``cuMemcpyDtoHAsync_v2``
        into a pinned per-stream buffer in 4 MiB chunks, each followed by a
        native host function (see :meth:`memcpy_h2d`) that copies the chunk
        into ``dst`` on the driver's thread.  Pinned destinations go straight
        to the driver.  The enqueueing thread never waits for the device.
        """
        s: _Stream = stream  # type: ignore[assignment]  # not cast(): a call per op
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyDtoHAsync_v2")
        nbytes = dst.nbytes
        buffer = self._ffi.from_buffer(dst, require_writable=True)
        try:
            if not self._is_pinned(int(self._ffi.cast("uintptr_t", buffer)), nbytes):
                self._staged_copy(s, buffer, src, nbytes, to_device=False)
                return
            code = self._lib.cuMemcpyDtoHAsync_v2(buffer, src, nbytes, s.handle)
            if code != 0:
                raise self._fail(code, "cuMemcpyDtoHAsync_v2")
        except BaseException:
            _release_export(self._ffi, buffer)
            raise

    def _staged_copy(
        self, stream: _Stream, host: CData, device: int, nbytes: int, *, to_device: bool
    ) -> None:
        lib = self._lib
        helpers, hostfn = self._host_functions()
        status = self._ffi.new("CUstreamCaptureStatus *")
        self._check(lib.cuStreamIsCapturing(stream.handle, status), "cuStreamIsCapturing")
        capturing = int(status[0]) != _CU_STREAM_CAPTURE_STATUS_NONE
        if capturing:
            # The graph replays these nodes: its staging buffer and copy jobs
            # must live as long as the graph, not as the stream.
            keep = stream.capture_keep if stream.capture_keep is not None else self._orphans
            if not keep.staging:
                keep.staging.append(self._take_staging())
            staging = keep.staging[0]
        else:
            if stream.staging is None:
                stream.staging = self._take_staging()
            staging = stream.staging
        free_after = 0 if capturing else 1
        host_bytes = self._ffi.cast("char *", host)
        for offset, chunk in chunks(nbytes):
            if to_device:
                job = helpers.ar_copy_job_new(staging, host_bytes + offset, chunk, free_after)
            else:
                job = helpers.ar_copy_job_new(host_bytes + offset, staging, chunk, free_after)
            if job == self._ffi.NULL:
                raise OutOfMemoryError(
                    "staging a pageable copy: malloc of a copy job failed",
                    backend=self.backend_name,
                    function="ar_copy_job_new",
                )
            if capturing:
                keep.jobs.append(job)
            if to_device:
                code = lib.cuLaunchHostFunc(stream.handle, hostfn, job)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuLaunchHostFunc")
                code = lib.cuMemcpyHtoDAsync_v2(device + offset, staging, chunk, stream.handle)
                if code != 0:
                    raise self._fail(code, "cuMemcpyHtoDAsync_v2")
            else:
                code = lib.cuMemcpyDtoHAsync_v2(staging, device + offset, chunk, stream.handle)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuMemcpyDtoHAsync_v2")
                code = lib.cuLaunchHostFunc(stream.handle, hostfn, job)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuLaunchHostFunc")

    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyDtoDAsync_v2")
        s: _Stream = stream  # type: ignore[assignment]
        code = self._lib.cuMemcpyDtoDAsync_v2(dst, src, nbytes, s.handle)
        if code != 0:
            raise self._fail(code, "cuMemcpyDtoDAsync_v2")

    # -- several devices -----------------------------------------------------------
    def is_peer(self, other: Driver) -> bool:
        return (
            isinstance(other, _CopyOps)
            and other._library is self._library
            and other._device != self._device
        )

    def can_access_peer(self, other: Driver) -> bool:
        if not self.is_peer(other):
            return False
        peer = cast(_CopyOps, other)
        out = self._ffi.new("int *")
        self._check(
            self._lib.cuDeviceCanAccessPeer(out, self._device, peer._device),
            "cuDeviceCanAccessPeer",
        )
        return bool(out[0])

    def _enable_peer(self, peer: _CopyOps) -> None:
        """Direct access to ``peer``'s memory, once, where the devices allow it.

        Without it ``cuMemcpyPeerAsync`` still copies, through host memory.
        Called with this context current; another library may have enabled it.
        """
        if peer._device in self._peers_tried:
            return
        self._peers_tried.add(peer._device)
        if not self.can_access_peer(peer):
            return
        code = self._lib.cuCtxEnablePeerAccess(peer._ctx, 0)
        if code not in (0, _CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
            raise self._fail(code, "cuCtxEnablePeerAccess")

    def memcpy_peer(
        self,
        src: int,
        dst: int,
        nbytes: int,
        src_driver: Driver,
        dst_driver: Driver,
        stream: DriverStream,
    ) -> None:
        self._enter("cuMemcpyPeerAsync")
        source, target = cast(_CopyOps, src_driver), cast(_CopyOps, dst_driver)
        self._enable_peer(target if source is self else source)
        code = self._lib.cuMemcpyPeerAsync(
            dst, target._ctx, src, source._ctx, nbytes, cast(_Stream, stream).handle
        )
        if code != 0:
            raise self._fail(code, "cuMemcpyPeerAsync")

    def memcpy_2d(
        self,
        src: int,
        src_pitch: int,
        dst: int,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: DriverStream,
    ) -> None:
        self._enter("cuMemcpy2DAsync_v2")
        params = self._ffi.new("CUDA_MEMCPY2D_v2 *")
        params.srcMemoryType = _CU_MEMORYTYPE_DEVICE
        params.srcDevice = src
        params.srcPitch = src_pitch
        params.dstMemoryType = _CU_MEMORYTYPE_DEVICE
        params.dstDevice = dst
        params.dstPitch = dst_pitch
        params.WidthInBytes = width_bytes
        params.Height = height
        code = self._lib.cuMemcpy2DAsync_v2(params, cast(_Stream, stream).handle)
        self._check(code, "cuMemcpy2DAsync_v2")

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemsetD8Async")
        code = self._lib.cuMemsetD8Async(dst, value & 0xFF, nbytes, stream.handle)  # type: ignore[attr-defined]
        if code != 0:
            raise self._fail(code, "cuMemsetD8Async")


def _release_export(ffi: Any, buffer: Any) -> None:
    """Drop ``from_buffer``'s export of the caller's buffer now, on an enqueue that raised.

    The error's traceback keeps this call's frame, and so the export, alive
    in a reference cycle with the op's Completion; the garbage collector
    then clears the core's memoryview while it is still exported, and the
    interpreter crashes later (seen after a sticky error on cuda-sim).
    """
    try:
        ffi.release(buffer)
    except (AttributeError, ValueError):  # a cffi without release(), or released already
        pass
