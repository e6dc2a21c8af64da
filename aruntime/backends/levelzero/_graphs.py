"""Capture into regular command lists, and graph replays."""

from __future__ import annotations

from typing import Any, cast

from ..._driver import DriverGraph, DriverStream
from ..._exceptions import InvalidArgumentError, NotSupportedError
from . import _errors
from ._base import _LevelZeroBase
from ._constants import _ST_COMMAND_LIST_DESC, UINT64_MAX
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._graph_launcher import _GraphLauncher
from ._handles import _List, _ZeEvent, _ZeGraph, _ZeStream


class _GraphOps(_LevelZeroBase):
    def capture_begin(self, stream: DriverStream) -> None:
        s = cast(_ZeStream, stream)
        desc = ffi.new("ze_command_list_desc_t*")
        desc.stype = _ST_COMMAND_LIST_DESC
        desc.commandQueueGroupOrdinal = self._compute_ordinal
        out = ffi.new("ze_command_list_handle_t*")
        self._check(
            self._lib.zeCommandListCreate(self._context, self._device, desc, out),
            "zeCommandListCreate",
        )
        with s.lock:
            s.capture = _List(out[0])

    def capture_end(self, stream: DriverStream) -> DriverGraph:
        s = cast(_ZeStream, stream)
        with s.lock:
            captured, s.capture = s.capture, None
            events, s.captured_events = s.captured_events, []
        if captured is None:
            raise InvalidArgumentError("end_capture: the stream is not capturing")
        rc = self._lib.zeCommandListClose(captured.handle)
        if rc != ZE_RESULT_SUCCESS:
            self._lib.zeCommandListDestroy(captured.handle)
            self._release_all(events)
            self._check(rc, "zeCommandListClose")
        return cast(DriverGraph, _ZeGraph(captured.handle, events))

    def capture_abort(self, stream: DriverStream) -> None:
        s = cast(_ZeStream, stream)
        with s.lock:
            captured, s.capture = s.capture, None
            events, s.captured_events = s.captured_events, []
        if captured is not None:
            self._lib.zeCommandListDestroy(captured.handle)
        self._release_all(events)

    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None:
        g = cast(_ZeGraph, graph)
        s = cast(_ZeStream, stream)
        if s.capture is not None:
            raise NotSupportedError(
                "launch_graph: Level Zero 1.4 cannot replay a command list inside another "
                "one, so a graph cannot be launched into a capture",
                backend=self.backend_name,
                function="zeCommandQueueExecuteCommandLists",
            )
        with self._lock:
            if self._launcher is None:
                self._launcher = _GraphLauncher(
                    self._lib,
                    self._context,
                    self._device,
                    self._compute_ordinal,
                    self._check,
                    self._run_graph,
                    f"aruntime-{self.backend_name}-graphs",
                )
            launcher = self._launcher
        ready = self._events.acquire()
        done = self._events.acquire()
        with s.lock:
            tail = self._tail(s)
            self._barrier(tail, signal=ready)
            ready.recorded = True
            self._barrier(tail, wait=[done])
            # Reset on the device once passed: that tells the pool it is free.
            self._check(
                self._lib.zeCommandListAppendEventReset(tail.handle, done.handle),
                "zeCommandListAppendEventReset",
            )
            done.recorded = True
            position = s.records
        with self._lock:
            g.pending += 1
        launcher.submit(ready, g, done, s, position)

    def graph_destroy(self, graph: DriverGraph) -> None:
        g = cast(_ZeGraph, graph)
        with self._lock:
            g.destroyed = True
            now = g.pending == 0
        if now:
            self._release_all(g.events)
            self._check(self._lib.zeCommandListDestroy(g.command_list), "zeCommandListDestroy")

    # -- launcher callbacks (on the launcher thread) ------------------------------
    def _run_graph(
        self,
        ready: _ZeEvent,
        graph: _ZeGraph,
        done: _ZeEvent,
        stream: _ZeStream,
        position: int,
        queue_: Any,
        fence: Any,
    ) -> None:
        lib = self._lib
        try:
            rc = lib.zeEventHostSynchronize(ready.handle, UINT64_MAX)
            self._events.release(ready)
            if rc == ZE_RESULT_SUCCESS:
                rc = lib.zeFenceReset(fence)
            if rc == ZE_RESULT_SUCCESS:
                lists = ffi.new("ze_command_list_handle_t[1]", [graph.command_list])
                rc = lib.zeCommandQueueExecuteCommandLists(queue_, 1, lists, fence)
                function = "zeCommandQueueExecuteCommandLists"
                if rc == ZE_RESULT_SUCCESS:
                    rc = lib.zeFenceHostSynchronize(fence, UINT64_MAX)
                    function = "zeFenceHostSynchronize"
            else:
                function = "zeEventHostSynchronize"
            if rc != ZE_RESULT_SUCCESS:
                error = _errors.error_for(rc, function, self.backend_name, "graph replay")
                with stream.lock:
                    stream.failures.append((position, error))
        finally:
            # Signal even on failure: nothing may wait forever on a failed op.
            done.fired = True
            lib.zeEventHostSignal(done.handle)
            self._events.release(done)
            with self._lock:
                graph.pending -= 1
                destroy = graph.destroyed and graph.pending == 0
            if destroy:
                self._release_all(graph.events)
                lib.zeCommandListDestroy(graph.command_list)
