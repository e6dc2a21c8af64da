"""Capture and graphs: record a stream's ops into a graph, replay it, destroy it.

While a stream captures, submission records its ops instead of running
them (their Completions are born "captured") and the stream's
:class:`aruntime._streamstate.StreamState` collects the host buffers they
use; the Graph made at the end keeps those alive until it is destroyed.

It collects the ledger entries of the device memory they use too, pinned
(:func:`aruntime._ledger.pin`): a ``free()`` of pinned memory invalidates the
pointer at once but parks the release, which runs only once the last graph
using the memory is destroyed and the work queued before that has finished.
So a replay never writes into memory that was handed out again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ._completion import Completion
from ._exceptions import CaptureError, InvalidArgumentError
from ._handles import Graph, GraphBody, Stream
from ._ledger import unpin
from ._objects import Objects
from ._op import OpKind
from ._state import BackendState

__all__ = ["Graphs"]


class Graphs:
    """The capture-and-graphs part of a backend."""

    def __init__(self, state: BackendState, objects: Objects) -> None:
        self._state = state
        self._driver = state.driver
        self._owner = state.handles
        self._objects = objects

    def begin_capture(self, stream: Stream) -> None:
        fn = "begin_capture"
        self._state.check_open(fn)
        st = self._objects.resolve(stream, fn)
        state = st.state
        with state.lock:
            if state.capturing:
                raise CaptureError(f"{fn}: {st!r} is already capturing")
            state.flush_tail()  # a marker recorded during the capture would be captured
            self._driver.capture_begin(st.handle)
            state.begin_capture()

    def end_capture(self, stream: Stream, fn: str) -> GraphBody:
        """End ``stream``'s capture: the graph it made."""
        self._state.check_open(fn)
        st = self._objects.resolve(stream, fn)
        state = st.state
        with state.lock:
            if not state.capturing:
                raise CaptureError(f"{fn}: {st!r} is not capturing")
            record = state.end_capture()
            try:
                handle = self._driver.capture_end(st.handle)
            except BaseException:
                self._release_unpinned(record.keepalive)
                raise
        return GraphBody(handle, record.keepalive, record.op_count, record.reads, record.writes)

    def new_graph(self, body: GraphBody | None) -> Graph:
        """The Graph handle of ``body`` (None: a ``with capture()`` block still running)."""
        state = self._state
        return Graph(
            self._owner,
            state.resources,
            self._driver,
            body,
            state.after_queued_work,
            state.wait_out_submits,
        )

    def abort_capture_if_active(self, stream: Stream) -> bool:
        fn = "abort_capture_if_active"
        # A closed stream of ours may still be capturing: it is accepted here.
        ours = isinstance(stream, Stream) and stream.backend is self._owner
        st = stream if ours else self._objects.resolve(stream, fn)
        state = st.state
        with state.lock:
            if not state.capturing:
                return False
            keepalive = state.end_capture().keepalive
            if not self._state.closed:
                self._driver.capture_abort(st.handle)
        self._release_unpinned(keepalive)
        return True

    def _release_unpinned(self, keepalive: list[object]) -> None:
        """Unpin a capture's entries; memory freed meanwhile goes after the queued work."""
        for release in unpin(keepalive):
            self._state.after_queued_work(release)

    @contextlib.contextmanager
    def capture(self, stream: Stream) -> Iterator[Graph]:
        self.begin_capture(stream)
        graph = self.new_graph(None)
        try:
            yield graph
        except BaseException:
            graph.close()  # stays empty: nothing to destroy, nothing to warn about
            self.abort_capture_if_active(stream)
            raise
        graph._complete(self.end_capture(stream, "capture"))

    def check_graph(self, graph: object, fn: str) -> Graph:
        if not isinstance(graph, Graph):
            raise TypeError(f"{fn}: expected a Graph, got {type(graph).__name__}")
        if graph.backend is not self._owner:
            raise InvalidArgumentError(f"{fn}: the graph belongs to another backend")
        return graph

    def launch_graph(self, graph: Graph, stream: Stream | None) -> Completion:
        fn = "launch_graph"
        self._state.check_open(fn)
        self.check_graph(graph, fn)
        graph.check_open(fn)
        body = graph.body
        if body is None:
            raise CaptureError(f"{fn}: the graph's capture has not ended yet")
        st = self._objects.resolve(stream, fn)
        # Held first: the kind reads its ranges from the graph (OpKind.LAUNCH_GRAPH).
        # As an entry too: the stream refuses the replay if it closed since (Graph.close).
        held = (graph,)
        return st.enqueue(
            OpKind.LAUNCH_GRAPH, self._driver.graph_launch, (body.handle,), held, held
        )
