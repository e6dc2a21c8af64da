"""The compiled enqueue: ``Stream.enqueue`` in C, where it was built.

Every copy, memset and launch passes through ``Stream.enqueue`` and its
policy's ``queue`` (``_submit.py``).  In Python their two frames, the lock
calls and the Completion's constructor cost more than the driver call they
wrap (docs/performance.md, "The compiled enqueue").  ``ffi/core/enqueue.c``
is the same path as one C call: an ``Enqueuer`` per stream keeps the
stream's state, handle, lock and policy hooks, and becomes that stream's
``enqueue``.

Why a plain CPython extension and not cffi's API mode: the path handles
Python objects (the Completion, the stream's bookkeeping), which cffi cannot
pass to C.  The C decides nothing of its own.  It hands every case but the
plain one back to the Python path (a refusing or capturing stream, a freed
operand, a recorded call site, a trace), and every outcome but success to
the policy's Python methods (a failed call, a marker right behind the op,
the mock's ordered errors).  On a stream with race checking on, it builds
the :class:`Op` the checker reads and hands it to the checker, as the
Python path does.  So the rules stay written once, in Python, and
``tests/test_enqueue.py`` runs the same ops both ways.

The same extension gives the op path's other hot pieces, each with the same
rule (C takes the plain case, Python keeps every other one and every
message): a stream's lock (:func:`stream_lock`), the CUDA driver's direct
calls (:func:`direct_call`), the ledger's range check
(:func:`range_checker`), a host copy's view (:func:`host_viewer`), the
sims' launch-site note (:func:`launch_site`), the mock's host copies
(:func:`mock_copy`), the race checker's ``watched`` (:func:`watcher`),
and the Backend's memset and host copies themselves, in front of all that
(:func:`op_front`).

``ARUNTIME_COMPILED_ENQUEUE=0`` keeps every stream made from then on on the
Python path; so does an install without Python's headers (the extension is
not built).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from . import _sites
from ._completion import (
    _DONE,
    _NO_CALLBACKS,
    _NO_LOCK,
    _PENDING,
    Completion,
    next_seq,
    release_views,
    run_wakeups,
    watched,
)
from ._exceptions import DriverError
from ._memory import DevicePtr, HostBuffer
from ._native import load_core_extension
from ._op import Op

__all__ = [
    "compiled_enqueuer",
    "direct_call",
    "enabled",
    "host_viewer",
    "launch_site",
    "mock_copy",
    "op_front",
    "range_checker",
    "stream_lock",
    "watcher",
    "ze_append",
]

_MODULE = "_aruntime_enqueue"
_log = logging.getLogger("aruntime")
_lock = threading.Lock()
_loaded: list[ModuleType | None] = []


#: What a stream's tail holds once it holds nothing (the policies' own value).
NOTHING_HELD: tuple[tuple[Any, ...], tuple[memoryview, ...]] = ((), ())

#: How many buffers of unmarked ops a stream holds before its next op gets a
#: marker anyway, so that they are let go (a long run of copies nobody awaits).
STRANDED_KEPT = 256


def enabled() -> bool:
    """Whether new streams get the compiled enqueue (built, and not switched off)."""
    return _module() is not None


def _module() -> ModuleType | None:
    if os.environ.get("ARUNTIME_COMPILED_ENQUEUE") == "0":
        return None
    if not _loaded:
        with _lock:
            if not _loaded:
                _loaded.append(_configured())
    return _loaded[0]


def _configured() -> ModuleType | None:
    module = load_core_extension(_MODULE)
    if module is None:
        return None
    try:
        module.configure(
            Completion,
            Completion.__slots__,
            _PENDING,
            threading.Lock,
            next_seq,
            NOTHING_HELD,
            DriverError,
            _sites,
            STRANDED_KEPT,
            Op,
            Op.__slots__,
        )
        module.configure_watched(_NO_LOCK)
        module.configure_settle(
            Completion, _PENDING, _DONE, _NO_CALLBACKS, release_views, run_wakeups
        )
    except (TypeError, AttributeError) as exc:
        # It builds and finishes Completions and Ops without their methods, so it
        # refuses a slot it would leave unset; an extension older than this
        # Python code lacks what it is configured through.
        _log.warning("the compiled enqueue is off: %s", exc)
        return None
    return module


def stream_lock() -> Any:
    """A new stream lock: the extension's StreamLock (reentrant, as an RLock, and
    taken by the compiled enqueue without a Python call), else a threading.RLock."""
    module = _module()
    return threading.RLock() if module is None else module.StreamLock()


def watcher() -> Callable[[Completion, Callable[[], None]], Completion]:
    """``watched`` (``aruntime/_completion.py``), in C where the extension is built.

    The race checker calls it for every op it checks, and on the mock each
    of those copies a shared finished Completion.  The same slots are set
    either way; ``tests/test_enqueue.py`` compares the two.
    """
    module = _module()
    made: Callable[[Completion, Callable[[], None]], Completion] = (
        watched if module is None else module.watched
    )
    return made


def _no_view(obj: object, writable: bool) -> None:
    return None


def host_viewer() -> Callable[[object, bool], memoryview | None]:
    """``host_view(obj, writable)``: the common case of ``_validate.as_host_view`` in C.

    A flat unsigned-byte view of a numpy array, bytearray, bytes or
    memoryview, or of a pinned HostBuffer that is not freed, when the view
    is C-contiguous (and writable where asked): as it is if it is flat
    bytes, else cast to bytes as ``as_host_view`` casts it; None for
    everything else, which ``as_host_view`` checks and words.  Without the
    extension, always None.
    """
    module = _module()
    if module is None:
        return _no_view
    module.configure_host_view(
        (np.ndarray, bytearray, bytes, memoryview), HostBuffer, "_record", "freed", "entry"
    )
    viewer: Callable[[object, bool], memoryview | None] = module.host_view
    return viewer


def _no_entry(ptr: object, nbytes: int) -> None:
    return None


def range_checker(owner: object, entries: dict[int, Any]) -> Callable[[object, int], Any]:
    """``check(ptr, nbytes)``: the common case of ``Ledger.check_range`` in C.

    The entry in ``entries`` (a ledger's own dict, by allocation id) of a
    DevicePtr of ``owner`` whose view holds ``nbytes``; None for anything
    else, which ``check_range`` checks and words.  Without the extension,
    always None.
    """
    module = _module()
    if module is None:
        return _no_entry
    check: Callable[[object, int], Any] = module.RangeCheck(
        owner=owner, entries=entries, pointer=DevicePtr
    )
    return check


def op_front(
    op: str,
    owner: object,
    method: Callable[..., Any],
    *,
    state: Any,
    in_range: Callable[[object, int], Any],
    driver: object,
    call: str,
    kind: object,
    stream_type: type,
    kernel_type: type | None = None,
    configs: dict[Any, Any] | None = None,
    graph_type: type | None = None,
) -> Callable[..., Any] | None:
    """A Backend method's common case in C (``op``: memset, copy_h2d, copy_d2h, launch or
    graph), or None.

    ``ffi/core/front.c`` says what the common case is; every other call is
    ``method`` (the Python Backend method, unbound) bound to ``owner``,
    with the caller's own arguments.  The op goes to the stream's
    ``enqueue`` with ``kind`` and the driver's method named ``call``, as
    the Python method (``Ops``) passes them; ``in_range`` is the ledger's
    range check and ``state`` the backend's state (``closed``, ``default``).
    A launch also reads the kernel's slots (``kernel_type``) and the
    geometries already checked (``configs``, Ops' own dict); a replay, the
    graph's (``graph_type``).
    """
    module = _module()
    if module is None:
        return None
    host_viewer()  # configures the host_view a copy's front calls
    front: Callable[..., Any] = module.OpFront(
        op=op,
        owner=owner,
        method=method,
        state=state,
        in_range=in_range,
        driver=driver,
        call=call,
        kind=kind,
        pointer=DevicePtr,
        stream_type=stream_type,
        kernel_type=kernel_type,
        configs=configs,
        graph_type=graph_type,
    )
    return front


def launch_site(
    hook: Callable[[], None], *, inside: dict[str, bool], sites: dict[Any, Any], setter: int
) -> Any:
    """A sim's launch-site note made in C where its caches allow, else ``hook`` itself.

    ``ffi/core/site.c`` says when: a few frames up at most, past files
    ``inside`` says are aruntime's, the first frame is in a file it says is
    outside (the user's), and ``sites`` already has the bytes of its
    instruction; ``setter`` is the address of the sim's
    ``void (*)(const char *)``.  Every other note is ``hook()``.
    """
    module = _module()
    if module is None:
        return hook
    return module.LaunchSite(inside=inside, sites=sites, hook=hook, setter=setter)


def compiled_enqueuer(
    stream: Any,
    slow: Callable[..., Any],
    *,
    tracing: Any,
    failed: Callable[..., Any],
    mark: Callable[..., Any] | None,
    mark_now: Callable[..., Any],
    done: dict[Any, Any] | None,
    run: Callable[..., Any],
) -> Callable[..., Any] | None:
    """``stream``'s compiled ``enqueue``, or None where there is none.

    ``slow`` is the Python ``Stream.enqueue`` (unbound), which every case
    but the plain one goes to; the rest are the policy's: ``mark`` marks a
    kept tail (None: the policy finishes every op at its call, as the
    mock's does), ``failed`` makes a failed call's Completion, ``mark_now``
    the Completion of an op that is not left as the stream's tail, and
    ``done`` holds the synchronous policy's shared finished Completions.
    On a stream with race checking on, every op goes to the checker as an
    :class:`Op`, with the policy's ``run``.
    """
    module = _module()
    if module is None:
        return None
    state = stream.state
    enqueuer: Callable[..., Any] = module.Enqueuer(
        stream=stream,
        slow=slow,
        state=state,
        handle=stream.handle,
        lock=state.lock,
        tracing=tracing,
        failed=failed,
        mark=mark,
        mark_now=mark_now,
        done=done,
        hazards=None if stream.hazards is None else stream.hazards.run,
        run=run,
        synchronous=mark is None,
        address=getattr(stream.handle, "address", 0),
    )
    return enqueuer


def direct_call(
    owner: object,
    method: Callable[..., Any],
    fail: Callable[..., Any],
    *,
    shape: str,
    function: int,
    name: str,
    get_current: int,
    context: int,
    host_limit: int = 0,
    note: Callable[[], None] | None = None,
    settle: int = 0,
    settle_name: str | None = None,
) -> Callable[..., Any] | None:
    """A driver method whose plain case the compiled enqueue calls in C, or None.

    ``ffi/core/direct.c`` says what the plain case is.  ``owner`` is the
    driver (held weakly), ``method`` its Python method and ``fail`` its
    error namer, both unbound; ``function`` is the address of the C
    function of ``name``, whose arguments follow ``shape`` (``memset_d8``,
    ``memcpy_d2d``, ``memcpy_h2d``, ``launch``, ``graph_launch`` or
    ``stream_finished``, the driver methods of those names; ``note`` is
    called right before a launch; ``stream_finished`` calls ``settle``, the
    function of ``settle_name``, once the stream is found done);
    the call is made only on a thread whose current context (from
    ``get_current``, ``cuCtxGetCurrent``) is ``context``.  Called from
    Python it is the method, with the same plain case in C.
    """
    module = _module()
    if module is None:
        return None
    made: Callable[..., Any] = module.DirectCall(
        owner=owner,
        method=method,
        fail=fail,
        shape=shape,
        function=function,
        name=name,
        get_current=get_current,
        context=context,
        host_limit=host_limit,
        note=note,
        settle=settle,
        settle_name=settle_name,
    )
    return made


def tail_probe(
    state: object,
    finished: object,
    settle: Callable[[Any, BaseException | None], None],
    handle: object,
) -> Callable[[Any], bool] | None:
    """``state``'s stream asked after its awaited last op in C, and the op settled there; or None.

    It answers as ``StreamState.probe_tail`` does, and ``ffi/core/tailprobe.c``
    says which cases it takes in C: the op still the stream's unmarked tail,
    nothing handed to its waiter pending, and the driver's ``finished`` (its
    ``stream_finished``, a DirectCall) saying the stream still runs, or is
    done (then ``settle(op, error)`` finishes the op, under the stream's
    lock).  It calls ``probe_tail`` for the rest.  None where the compiled enqueue is off,
    ``finished`` is not a DirectCall, the stream has no raw handle, or the
    stream's lock is not the compiled one.
    """
    module = _module()
    address = getattr(handle, "address", 0)
    if module is None or type(finished) is not module.DirectCall or not address:
        return None
    if type(getattr(state, "lock", None)) is not module.StreamLock:
        return None
    made: Callable[[Any], bool] = module.TailProbe(
        state=state, finished=finished, settle=settle, nothing_held=NOTHING_HELD, address=address
    )
    return made


def mock_copy(
    owner: object, method: Callable[..., Any], *, to_device: bool
) -> Callable[..., Any] | None:
    """The mock driver's ``memcpy_h2d`` (``to_device``) or ``memcpy_d2h``, its quiet case in C.

    ``ffi/core/mockcopy.c`` says what that case is: it logs and copies as
    ``method`` (the unbound Python method) does once the method has cached
    the log entry and the device range's view; every other call is
    ``method`` with ``owner`` (the driver, held weakly).  None where the
    compiled enqueue is off.
    """
    module = _module()
    if module is None:
        return None
    made: Callable[..., Any] = module.MockCopy(owner=owner, method=method, to_device=to_device)
    return made


def ze_append(
    owner: object,
    method: Callable[..., Any],
    fail: Callable[..., Any],
    *,
    shape: str,
    name: str,
    function: int,
    barrier: int,
    table: object,
    host_limit: int,
    launch: dict[str, Any] | None = None,
) -> Callable[..., Any] | None:
    """A Level Zero driver's fill or copy appended in C in its plain case, or None.

    ``ffi/core/zeappend.c`` says what the plain case is.  ``owner`` is the
    driver (held weakly), ``method`` its Python method of the name ``shape``
    (``memset_d8``, ``memcpy_h2d``, ``memcpy_d2h`` or ``memcpy_d2d``) and
    ``fail`` its namer of a failed compiled append, both unbound; ``function``
    and ``barrier`` are the addresses of the compiled calls' table slots that
    hold the op's Level Zero function (``name``) and
    ``zeCommandListAppendBarrier``, read at each call, in ``table``, kept
    alive as long as the ZeAppend; a host copy of more
    than ``host_limit`` bytes is the method's.  For the shape ``launch``,
    ``launch`` holds ``set_arg`` (the slot of ``zeKernelSetArgumentValue``),
    ``set_again`` (the method that sets a failed argument again and names
    it), ``append_other`` (the method that appends to any other list),
    ``note`` (a sim's launch-site note, or None), ``scalars`` (numpy's
    scalar class) and ``pointers`` (DevicePtr).  None where the compiled
    enqueue is off.
    """
    module = _module()
    if module is None:
        return None
    made: Callable[..., Any] = module.ZeAppend(
        owner=owner,
        method=method,
        fail=fail,
        shape=shape,
        name=name,
        function=function,
        barrier=barrier,
        table=table,
        host_limit=host_limit,
        **(launch or _NOT_A_LAUNCH),
    )
    return made


#: ``ze_append``'s launch parts for a fill or a copy: none (the classes are any two).
_NOT_A_LAUNCH: dict[str, Any] = {
    "set_arg": 0,
    "set_again": None,
    "append_other": None,
    "note": None,
    "scalars": bytes,
    "pointers": bytes,
}
