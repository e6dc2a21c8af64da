"""Capture and graphs: record a stream's ops into a graph, replay it, destroy it.

While a stream captures, submission records its ops instead of running
them (their Completions are born "captured") and the stream's
:class:`aruntime._streamstate.StreamState` collects the host buffers they
use; the Graph made at the end keeps those alive until it is destroyed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

from ._completion import Completion
from ._exceptions import CaptureError, InvalidArgumentError
from ._handles import Graph, Stream
from ._state import BackendState
from ._submit import Submitter

__all__ = ["Graphs"]


class Graphs:
    """The capture-and-graphs part of a backend."""

    def __init__(self, state: BackendState, submitter: Submitter) -> None:
        self._state = state
        self._driver = state.driver
        self._owner = state.handles
        self._submitter = submitter

    def begin_capture(self, stream: Stream) -> None:
        fn = "begin_capture"
        self._state.check_open(fn)
        st = self._submitter.resolve(stream, fn)
        state = st.state
        with state.lock:
            if state.capturing:
                raise CaptureError(f"{fn}: {st!r} is already capturing")
            self._driver.capture_begin(st.handle)
            state.begin_capture()

    def end_capture_into(self, stream: Stream, graph: Graph, fn: str) -> None:
        self._state.check_open(fn)
        st = self._submitter.resolve(stream, fn)
        state = st.state
        with state.lock:
            if not state.capturing:
                raise CaptureError(f"{fn}: {st!r} is not capturing")
            keepalive, op_count = state.end_capture()
            handle = self._driver.capture_end(st.handle)
        graph.arm(handle, keepalive, op_count)
        graph._arm_finalizer(functools.partial(self._driver.graph_destroy, handle))
        with self._state.lock:
            self._state.graphs.add(graph)

    def abort_capture_if_active(self, stream: Stream) -> bool:
        st = self._submitter.resolve(stream, "abort_capture_if_active", allow_closed=True)
        state = st.state
        with state.lock:
            if not state.capturing:
                return False
            state.end_capture()
            if not self._state.closed:
                self._driver.capture_abort(st.handle)
        return True

    @contextlib.contextmanager
    def capture(self, stream: Stream) -> Iterator[Graph]:
        self.begin_capture(stream)
        graph = Graph(self._owner)
        try:
            yield graph
        except BaseException:
            self.abort_capture_if_active(stream)
            raise
        self.end_capture_into(stream, graph, "capture")

    def _check_graph(self, graph: object, fn: str) -> Graph:
        if not isinstance(graph, Graph):
            raise TypeError(f"{fn}: expected a Graph, got {type(graph).__name__}")
        if graph.backend is not self._owner:
            raise InvalidArgumentError(f"{fn}: the graph belongs to another backend")
        return graph

    def launch_graph(self, graph: Graph, stream: Stream | None) -> Completion:
        fn = "launch_graph"
        self._state.check_open(fn)
        self._check_graph(graph, fn)
        graph.check_open(fn)
        if graph.handle is None:
            raise CaptureError(f"{fn}: the graph's capture has not ended yet")
        return self._submitter.submit(
            fn, stream, self._driver.graph_launch, (graph.handle,), keepalive=(graph,)
        )

    def destroy_graph(self, graph: Graph) -> None:
        self._check_graph(graph, "destroy_graph")
        if not graph._mark_closed():
            return
        state = self._state
        with state.lock:
            state.graphs.discard(graph)
        handle = graph.handle
        if handle is not None and not state.closed:
            keep = graph.take_keepalive()
            driver = self._driver

            def destroy() -> None:
                driver.graph_destroy(handle)
                del keep[:]

            state.after_queued_work(destroy)
