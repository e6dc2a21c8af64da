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
import functools
from collections.abc import Iterator

from ._completion import Completion
from ._driver import DriverGraph
from ._exceptions import CaptureError, InvalidArgumentError
from ._handles import Graph, Stream
from ._ledger import Entry, unpin
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
            try:
                handle = self._driver.capture_end(st.handle)
            except BaseException:
                self._release_unpinned(keepalive)
                raise
        graph.arm(handle, keepalive, op_count)
        graph._arm_finalizer(
            functools.partial(
                _destroy_dropped,
                self._state,
                handle,
                [k for k in keepalive if isinstance(k, Entry)],
            )
        )
        with self._state.lock:
            self._state.graphs.add(graph)

    def abort_capture_if_active(self, stream: Stream) -> bool:
        st = self._submitter.resolve(stream, "abort_capture_if_active", allow_closed=True)
        state = st.state
        with state.lock:
            if not state.capturing:
                return False
            keepalive, _ = state.end_capture()
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
                # Runs once the work queued so far (replays included) has finished.
                try:
                    driver.graph_destroy(handle)
                finally:
                    for release in unpin(keep):
                        release()
                    del keep[:]

            state.after_queued_work(destroy)


def _destroy_dropped(state: BackendState, handle: DriverGraph, entries: list[Entry]) -> None:
    """A Graph collected without destroy_graph (its finalizer): destroy it, free what it held."""
    state.driver.graph_destroy(handle)
    for release in unpin(entries):
        state.after_queued_work(release)
