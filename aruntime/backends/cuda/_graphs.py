"""Stream capture and executable graphs."""

from __future__ import annotations

from typing import cast

from ..._driver import DriverGraph, DriverStream
from ._base import _CudaBase, _current
from ._constants import _CU_STREAM_CAPTURE_MODE_RELAXED, _CU_STREAM_CAPTURE_STATUS_NONE
from ._handles import _Graph, _Resources, _Stream


class _GraphOps(_CudaBase):
    # -- graphs --------------------------------------------------------------------
    def capture_begin(self, stream: DriverStream) -> None:
        """Begin capture in relaxed mode.

        Relaxed, because in async code many tasks share one thread: in global
        or thread-local mode, an unrelated task's ``cuMemAlloc`` on the loop
        thread during the capture would fail and invalidate the capture, and
        ``cuStreamEndCapture`` would have to come from the beginning thread.
        The core already refuses to wait on a capturing stream.
        """
        s = cast(_Stream, stream)
        self._enter("cuStreamBeginCapture_v2")
        code = self._lib.cuStreamBeginCapture_v2(s.handle, _CU_STREAM_CAPTURE_MODE_RELAXED)
        self._check(code, "cuStreamBeginCapture_v2")
        s.capture_keep = _Resources()

    def capture_end(self, stream: DriverStream) -> DriverGraph:
        s = cast(_Stream, stream)
        self._enter("cuStreamEndCapture")
        keep, s.capture_keep = s.capture_keep or _Resources(), None
        lib = self._lib
        graph = self._ffi.new("CUgraph *")
        code = lib.cuStreamEndCapture(s.handle, graph)
        if code != 0:
            if graph[0] != self._ffi.NULL:
                lib.cuGraphDestroy(graph[0])
            self._free_resources(keep)
            raise self._fail(code, "cuStreamEndCapture")
        exec_handle = self._ffi.new("CUgraphExec *")
        code = lib.cuGraphInstantiateWithFlags(exec_handle, graph[0], 0)
        # The executable graph is independent of the graph it was made from.
        lib.cuGraphDestroy(graph[0])
        if code != 0:
            self._free_resources(keep)
            raise self._fail(code, "cuGraphInstantiateWithFlags")
        address = int(self._ffi.cast("uintptr_t", exec_handle[0]))
        return DriverGraph(_Graph(exec_handle[0], address, keep))

    def capture_abort(self, stream: DriverStream) -> None:
        s = cast(_Stream, stream)
        keep, s.capture_keep = s.capture_keep, None
        lib = self._lib
        if self._dead is None:
            self._enter_slow_unchecked()
        status = self._ffi.new("CUstreamCaptureStatus *")
        if (
            lib.cuStreamIsCapturing(s.handle, status) == 0
            and int(status[0]) != _CU_STREAM_CAPTURE_STATUS_NONE
        ):
            graph = self._ffi.new("CUgraph *")
            lib.cuStreamEndCapture(s.handle, graph)  # fails when invalidated: nothing to keep
            if graph[0] != self._ffi.NULL:
                lib.cuGraphDestroy(graph[0])
        if keep is not None:
            self._free_resources(keep)  # never ran: nothing on the device uses it

    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None:
        g = cast(_Graph, graph)
        s = cast(_Stream, stream)
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuGraphLaunch")
        code = self._lib.cuGraphLaunch(g.exec, s.handle)
        if code != 0:
            raise self._fail(code, "cuGraphLaunch")
        if g.resources:
            g.streams.add(s)
            s.graphs.add(g)

    def graph_destroy(self, graph: DriverGraph) -> None:
        g = cast(_Graph, graph)
        g.direct = 0  # before the destroy: no direct replay of a freed graph
        if not self._enter_release():
            return
        code = self._lib.cuGraphExecDestroy(g.exec)
        if g.resources:
            events = g.pending_events
            for s in g.streams:
                event = self._fence(s)
                if event is not None:
                    events.append(event)
                s.graphs.discard(g)
            g.streams.clear()
            self._retire(events, g.resources)
            g.resources = _Resources()
        self._check(code, "cuGraphExecDestroy")
