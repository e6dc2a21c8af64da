"""Streams, events, modules and kernels: making them, and the calls on them.

Handles are made only here (the backend's factories), each built whole:
its driver object, the backend's resource registry, the completion policy
its ops go to (streams) and how to defer a release behind queued work.
From then on a handle releases itself (see _handles).  This part also
resolves the ``stream`` argument of every call (None: the default stream).
"""

from __future__ import annotations

import contextlib
from typing import Any, TypeVar

import numpy as np

from ._driver import Driver, DriverStream
from ._exceptions import CaptureError, InvalidArgumentError
from ._handles import Event, Stream, SubmitPolicy
from ._modules import Kernel, Module
from ._peer import peer_driver
from ._state import BackendState
from ._streamstate import StreamState
from ._validate import no_module_message

__all__ = ["Objects"]

_H = TypeVar("_H", Stream, Event)


class Objects:
    """The streams, events and modules part of a backend."""

    def __init__(self, state: BackendState, policy: SubmitPolicy) -> None:
        self._state = state
        self._driver: Driver = state.driver
        self._owner = state.handles
        self._policy = policy

    def resolve(self, stream: object, fn: str) -> Stream:
        """The open Stream ``stream`` names (None: the default stream), or a clear error."""
        if stream is None:
            default = self._state.default
            return default if default is not None else self.default_stream()
        if type(stream) is Stream and stream.open_for is self._owner:
            return stream  # the common case, on every op's path
        if not isinstance(stream, Stream):
            raise TypeError(f"{fn}: stream must be a Stream or None, got {type(stream).__name__}")
        return self._ours(stream, fn, "stream")

    def _ours(self, handle: _H, fn: str, what: str) -> _H:
        """``handle`` if it is this backend's and open, else a clear error."""
        if handle.backend is not self._owner:
            raise InvalidArgumentError(f"{fn}: the {what} belongs to another backend")
        handle.check_open(fn)
        return handle

    # -- streams -----------------------------------------------------------------------------
    def create_stream(self, priority: int) -> Stream:
        fn = "create_stream"
        self._state.check_open(fn)
        if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)):
            raise TypeError(f"{fn}: priority must be an int, got {type(priority).__name__}")
        low, high = self._driver.priority_range()
        if not low <= priority <= high:
            raise InvalidArgumentError(
                f"{fn}: priority {priority} is outside this device's range {low}..{high}"
            )
        return self.new_stream(int(priority), default=False)

    def new_stream(self, priority: int, *, default: bool, adopt: int | None = None) -> Stream:
        driver = self._driver
        handle: DriverStream
        handle = driver.stream_create(priority) if adopt is None else driver.stream_adopt(adopt)
        state = self._state
        stream_state = StreamState(
            driver, f"{state.name}-{id(handle):x}", state.orphans, state.waiter_registrar()
        )
        hazards = state.hazards
        return Stream(
            self._owner,
            state.resources,
            driver,
            handle,
            priority,
            stream_state,
            self._policy,
            state.after_queued_work,
            default=default,
            foreign=adopt is not None,
            hazards=hazards,
            hazard_id=0 if hazards is None else hazards.add_stream(driver, handle, default),
        )

    def default_stream(self) -> Stream:
        state = self._state
        state.check_open("default_stream")
        with state.lock:
            if state.default is None:
                state.default = self.new_stream(0, default=True)
            return state.default

    # -- events ------------------------------------------------------------------------------
    def check_event(self, event: object, fn: str) -> Event:
        if not isinstance(event, Event):
            raise TypeError(f"{fn}: expected an Event, got {type(event).__name__}")
        return self._ours(event, fn, "event")

    def create_event(self, timing: bool) -> Event:
        fn = "create_event"
        self._state.check_open(fn)
        if not isinstance(timing, bool):
            raise TypeError(f"{fn}: timing must be a bool, got {type(timing).__name__}")
        state = self._state
        handle = self._driver.event_create(timing)
        return Event(
            self._owner,
            state.resources,
            self._driver,
            handle,
            timing,
            state.after_queued_work,
            state.wait_out_submits,
            state.add_peer_user,
        )

    def record_event(self, event: Event, stream: Stream | None) -> None:
        fn = "record_event"
        self._state.check_open(fn)
        self.check_event(event, fn)
        st = self.resolve(stream, fn)
        if st.state.capturing:
            raise CaptureError(f"{fn}: recording events inside a capture is not supported")
        with st.state.lock:
            st.check_accepting(fn)
            event.check_open(fn)  # closed by another thread since its check (Event.close)
            st.state.flush_tail()  # the event stands behind an op it can name (order_point)
            self._driver.event_record(event.handle, st.handle)
            event.note_recorded(st)
            if self._state.hazards is not None:
                self._state.hazards.record_event(event, st)

    def stream_wait_event(self, stream: Stream, event: Event) -> None:
        fn = "stream_wait_event"
        self._state.check_open(fn)
        st = self.resolve(stream, fn)
        if isinstance(event, Event) and event.backend is not self._owner:
            # Another device's event: legal between devices of one driver.
            peer = peer_driver(self._owner, event.backend, fn, "the event")
            event.check_open(fn)
            event.note_peer_user(self._state)  # its close must wait out this wait too
        else:
            peer = None
            self.check_event(event, fn)
        if st.state.capturing:
            raise CaptureError(f"{fn}: cross-stream waits inside a capture are not supported")
        with st.state.lock:
            st.check_accepting(fn)
            event.check_open(fn)  # closed by another thread since its check (Event.close)
            st.state.flush_tail()  # its marker must not wait for the other stream too
            if peer is None:
                self._driver.stream_wait_event(st.handle, event.handle)
            else:
                self._driver.peer_wait_event(st.handle, event.handle, peer)
            before = event.order_point
            if before is not None and not (before.finished and before.error is None):
                st.state.waits_for(before)
            if self._state.hazards is not None:
                self._state.hazards.stream_wait_event(st, event)

    def event_query(self, event: Event) -> bool:
        fn = "event_query"
        self._state.check_open(fn)
        self.check_event(event, fn)
        with event.host_lock:  # Event.close waits for it: the handle lives till the query
            event.check_open(fn)  # closed since the check: its handle may be gone
            reached = self._driver.event_query(event.handle)
        if self._state.hazards is not None:
            self._state.hazards.event_query(event, reached)
        return reached

    def elapsed_ms(self, start: Event, end: Event) -> float:
        fn = "elapsed_ms"
        self._state.check_open(fn)
        for what, ev in (("start", start), ("end", end)):
            self.check_event(ev, fn)
            if not ev.timing:
                raise InvalidArgumentError(f"{fn}: {what} event was created without timing=True")
            if not ev.recorded:
                raise InvalidArgumentError(f"{fn}: {what} event was never recorded")
        # Both handles must outlive the calls: hold both events' host locks, in one
        # order for every thread (by id), so two elapsed_ms calls cannot deadlock.
        events = [start] if start is end else sorted((start, end), key=id)
        with contextlib.ExitStack() as held:
            for ev in events:
                held.enter_context(ev.host_lock)
                ev.check_open(fn)  # closed since the check: its handle may be gone
            for what, ev in (("start", start), ("end", end)):
                if not self._driver.event_query(ev.handle):
                    raise InvalidArgumentError(
                        f"{fn}: {what} event has not completed yet; await it first"
                    )
            return self._driver.event_elapsed_ms(start.handle, end.handle)

    def destroy_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"destroy_event: expected an Event, got {type(event).__name__}")
        if event.backend is not self._owner:
            raise InvalidArgumentError("destroy_event: the event belongs to another backend")
        event.close()

    # -- modules -----------------------------------------------------------------------------
    def load_module(self, name: str, image: Any) -> Module:
        fn = "load_module"
        state = self._state
        state.check_open(fn)
        if not isinstance(name, str):
            raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
        if not name:
            raise InvalidArgumentError(f"{fn}: name must not be empty")
        accepted = self._driver.module_image_types()
        if not isinstance(image, accepted):
            kinds = ", ".join(t.__name__ for t in accepted)
            raise TypeError(
                f"{fn}: a {state.name} module image must be one of ({kinds}), "
                f"got {type(image).__name__}"
            )
        with state.lock:
            if name in state.modules:
                raise InvalidArgumentError(f"{fn}: a module named {name!r} is already loaded")
            module = self._new_module(name, self._driver.module_load(image))
        return module

    def builtin_module(self, name: str) -> Module:
        fn = "builtin_module"
        state = self._state
        state.check_open(fn)
        if not isinstance(name, str):
            raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
        key = f"aruntime.{name}"
        with state.lock:
            module = state.modules.get(key)
            if module is None:
                handle = self._driver.module_load(self._driver.builtin_module_image(name))
                module = self._new_module(key, handle)
        return module

    def _new_module(self, name: str, handle: Any) -> Module:
        """A Module for a loaded ``handle``, listed under ``name`` (call with the lock held)."""
        state = self._state
        module = Module(self._owner, state.resources, self._driver, name, handle)
        state.modules[name] = module
        return module

    def kernel(self, module: Module | str, func_name: str) -> Kernel:
        fn = "kernel"
        self._state.check_open(fn)
        if isinstance(module, str):
            found = self._state.modules.get(module)
            if found is None:
                raise InvalidArgumentError(no_module_message(fn, module, self._state.modules))
            module = found
        elif not isinstance(module, Module):
            raise TypeError(
                f"{fn}: module must be a Module or its name, got {type(module).__name__}"
            )
        elif module.backend is not self._owner:
            raise InvalidArgumentError(f"{fn}: {module!r} belongs to another backend")
        if not isinstance(func_name, str):
            raise TypeError(f"{fn}: func_name must be a str, got {type(func_name).__name__}")
        module.check_open(fn)
        return Kernel(module, func_name, self._driver.module_function(module.handle, func_name))
