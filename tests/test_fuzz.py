"""Hypothesis: bad arguments to every public entry point.

Each call must either succeed or raise ``TypeError`` or an ``AruntimeError``
(``InvalidArgumentError`` is a ``ValueError`` too); nothing else may escape.
Whatever happens, a canary allocation keeps its bytes, its guard bands stay
intact (redzones are on), and once the example's own objects are released
the ledger and the handle counts are back where they started.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aruntime as ar
from aruntime._ledger import AllocKind
from aruntime.testing import open_test_backend

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

ALLOWED = (TypeError, ar.AruntimeError)
CANARY = (np.arange(4096) * 7 % 251).astype(np.uint8)

#: Every public Backend entry point that takes arguments, with how many
#: positional arguments it takes and which keyword arguments it has.
ENTRY_POINTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "alloc": (1, ()),
    "alloc_managed": (1, ()),
    "alloc_arena": (1, ()),
    "free": (1, ()),
    "free_arena": (1, ()),
    "alloc_async": (1, ("stream",)),
    "free_async": (1, ("stream",)),
    "alloc_host_pinned": (1, ()),
    "free_host_pinned": (1, ()),
    "host_ptr_to_device": (1, ()),
    "alloc_report": (2, ()),
    "poison_redzones": (2, ()),
    "copy_h2d": (2, ()),
    "copy_d2h": (2, ()),
    "copy_d2d": (3, ()),
    "memset": (3, ()),
    "copy_h2d_async": (2, ("stream",)),
    "copy_d2h_async": (2, ("stream",)),
    "copy_d2d_async": (3, ("stream",)),
    "copy_d2d_2d_async": (6, ("stream",)),
    "memset_async": (3, ("stream",)),
    "launch": (4, ("shared_mem", "stream")),
    "launch_graph": (1, ("stream",)),
    "synchronize": (0, ("stream",)),
    "event_synchronize": (1, ()),
    "create_stream": (0, ("priority",)),
    "stream_is_capturing": (1, ()),
    "create_event": (0, ("timing",)),
    "record_event": (1, ("stream",)),
    "stream_wait_event": (2, ()),
    "can_access_peer": (1, ()),
    "event_query": (1, ()),
    "elapsed_ms": (2, ()),
    "destroy_event": (1, ()),
    "load_module": (2, ()),
    "builtin_module": (1, ()),
    "has_module": (1, ()),
    "kernel": (2, ()),
    "begin_capture": (1, ()),
    "end_capture": (1, ()),
    "abort_capture_if_active": (1, ()),
    "capture": (1, ()),
    "destroy_graph": (1, ()),
    "array": (3, ("strides", "stream")),
    "array_from_numpy": (1, ("stream",)),
    # Compute operations.
    "gemm": (
        6,
        ("lda", "ldb", "ldc", "trans_a", "trans_b", "alpha", "beta", "dtype", "stream"),
    ),
    "conv2d_forward": (6, ("stride", "padding", "dtype", "stream")),
    "attention": (9, ("scale", "causal", "dtype", "stream")),
    "reduce": (5, ("dtype", "stream")),
    "unary": (4, ("dtype", "stream")),
    "binary": (5, ("dtype", "stream")),
}
NO_ARGS = (
    "total_memory",
    "free_memory",
    "device_free_memory",
    "sm_count",
    "bind_to_thread",
    "live_bytes",
    "live_alloc_count",
    "live_allocations",
    "scan_redzones",
    "default_stream",
    "statistics",
)


@dataclass(frozen=True)
class Ref:
    """A placeholder for one object of the per-example pool."""

    key: str


#: A valid call of each entry point, as pool keys or plain values.
VALID: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "alloc": ((64,), {}),
    "alloc_managed": ((64,), {}),
    "alloc_arena": ((64,), {}),
    "free": ((Ref("managed"),), {}),
    "free_arena": ((Ref("arena"),), {}),
    "alloc_async": ((64,), {"stream": Ref("stream")}),
    "free_async": ((Ref("async"),), {"stream": Ref("stream")}),
    "alloc_host_pinned": ((64,), {}),
    # A buffer with no view: free_host_pinned refuses "host", whose view the pool holds.
    "free_host_pinned": ((Ref("host_alone"),), {}),
    "host_ptr_to_device": ((Ref("host"),), {}),
    "alloc_report": ((5, 0.0), {}),
    "poison_redzones": ((0xA5, 0x5A), {}),
    "copy_h2d": ((Ref("np_u8"), Ref("ptr")), {}),
    "copy_d2h": ((Ref("ptr"), Ref("bytearray")), {}),
    "copy_d2d": ((Ref("ptr"), Ref("managed"), 64), {}),
    "memset": ((Ref("view"), 3, 64), {}),
    "copy_h2d_async": ((Ref("np_f32"), Ref("view")), {"stream": Ref("stream")}),
    "copy_d2h_async": ((Ref("view"), Ref("np_u8")), {"stream": Ref("stream")}),
    "copy_d2d_async": ((Ref("ptr"), Ref("arena"), 16), {"stream": Ref("stream")}),
    "copy_d2d_2d_async": (
        (Ref("ptr"), 32, Ref("arena"), 16, 16, 4),
        {"stream": Ref("stream")},
    ),
    "memset_async": ((Ref("ptr"), 1, 16), {"stream": Ref("stream")}),
    "launch": (
        (Ref("kernel"), 1, 4, [np.uint32(4), np.float32(2), Ref("view"), Ref("ptr")]),
        {"shared_mem": 0, "stream": Ref("stream")},
    ),
    "launch_graph": ((Ref("graph"),), {"stream": Ref("stream")}),
    "synchronize": ((), {"stream": Ref("stream")}),
    "event_synchronize": ((Ref("timing_event"),), {}),
    "create_stream": ((), {"priority": 1}),
    "stream_is_capturing": ((Ref("stream"),), {}),
    "create_event": ((), {"timing": True}),
    "record_event": ((Ref("event"),), {"stream": Ref("stream")}),
    "stream_wait_event": ((Ref("stream"), Ref("timing_event")), {}),
    "can_access_peer": ((Ref("foreign_backend"),), {}),
    "event_query": ((Ref("timing_event"),), {}),
    "elapsed_ms": ((Ref("timing_event"), Ref("timing_event")), {}),
    "destroy_event": ((Ref("event"),), {}),
    "load_module": (("fuzzed", Ref("mock_image")), {}),
    "builtin_module": (("vector_ops",), {}),
    "has_module": (("aruntime.vector_ops",), {}),
    "kernel": ((Ref("module"), "fill_f32"), {}),
    "begin_capture": ((Ref("stream"),), {}),
    "end_capture": ((Ref("capturing_stream"),), {}),
    "abort_capture_if_active": ((Ref("capturing_stream"),), {}),
    "capture": ((Ref("stream"),), {}),
    "destroy_graph": ((Ref("graph"),), {}),
    "array": ((Ref("ptr"), (4, 4), "float32"), {"strides": (16, 4), "stream": Ref("stream")}),
    "array_from_numpy": ((Ref("np_f32"),), {"stream": Ref("stream")}),
    "gemm": (
        (Ref("view"), Ref("managed"), Ref("arena"), 4, 4, 4),
        {"alpha": 2.0, "beta": 0.0, "dtype": "float32", "stream": Ref("stream")},
    ),
    "conv2d_forward": (
        (Ref("ptr"), Ref("managed"), Ref("arena"), (1, 1, 4, 4), (1, 1, 2, 2), (1, 1, 3, 3)),
        {"stride": (1, 1), "padding": (0, 0), "stream": Ref("stream")},
    ),
    "attention": (
        (Ref("view"), Ref("managed"), Ref("managed"), Ref("arena"), 1, 1, 2, 2, 2),
        {"scale": 0.5, "causal": True, "stream": Ref("stream")},
    ),
    "reduce": ((Ref("ptr"), Ref("arena"), (4, 4), 1, "sum"), {"stream": Ref("stream")}),
    "unary": ((Ref("ptr"), Ref("arena"), 16, "relu"), {"stream": Ref("stream")}),
    "binary": (
        (Ref("ptr"), Ref("managed"), Ref("arena"), 16, "add"),
        {"stream": Ref("stream")},
    ),
}

#: Plain bad values tried in every argument slot by the systematic pass.
JUNK_SAMPLES: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    1,
    255,
    256,
    2**63,
    2**80,
    -(2**63),
    0.5,
    float("nan"),
    float("inf"),
    "x",
    "",
    b"",
    [],
    [1, 2, 3, 4],
    (0, 0),
    (70000, 70000, 70000),
    {"k": 1},
    object(),
    np.uint32(7),
    np.int64(-5),
    np.uint64(2**64 - 1),
    np.float32("nan"),
    np.bool_(False),
    np.str_("s"),
    np.datetime64("2020-01-01"),
)


def test_entry_point_table_covers_the_backend() -> None:
    public = {
        n for n in dir(ar.Backend) if not n.startswith("_") and callable(getattr(ar.Backend, n))
    }
    # sweep_unreleased frees everything by design (the canary too): tested in test_ledger.
    # trace writes files wherever a fuzzed string points, and wrap_stream has no
    # valid call on the mock: both are tested in test_trace and test_interop.
    untested = {"close", "sweep_unreleased", "trace", "wrap_stream"}
    assert public - untested == set(ENTRY_POINTS) | set(NO_ARGS)
    assert set(VALID) == set(ENTRY_POINTS)
    for name, (args, kwargs) in VALID.items():
        assert len(args) == ENTRY_POINTS[name][0] and set(kwargs) <= set(ENTRY_POINTS[name][1])


POOL_KEYS = (
    "ptr",
    "view",
    "empty_view",
    "freed",
    "foreign_ptr",
    "arena",
    "managed",
    "host",
    "host_view",
    "host_alone",
    "host_freed",
    "mapped",
    "np_u8",
    "np_f32",
    "np_strided",
    "np_readonly",
    "np_object",
    "np_0d",
    "np_structured",
    "bytes",
    "bytearray",
    "memoryview",
    "released_memoryview",
    "stream",
    "closed_stream",
    "capturing_stream",
    "foreign_stream",
    "default_stream",
    "event",
    "timing_event",
    "unrecorded_timing_event",
    "closed_event",
    "foreign_event",
    "graph",
    "destroyed_graph",
    "foreign_graph",
    "kernel",
    "foreign_kernel",
    "foreign_backend",
    "module",
    "module_name",
    "mock_image",
    "bad_image",
    "completion",
)

numpy_scalars = st.sampled_from(
    [
        np.uint32(5),
        np.uint32(0),
        np.float32(2.0),
        np.int64(-1),
        np.uint64(2**64 - 1),
        np.float64("nan"),
        np.bool_(True),
        np.int8(3),
        np.str_("x"),
        np.datetime64("2020-01-01"),
        np.complex64(1j),
        np.void(b"ab"),
    ]
)
junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**80),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=16),
    numpy_scalars,
    st.lists(st.integers(min_value=-2, max_value=70000), max_size=4),
    st.tuples(st.integers(min_value=-1, max_value=2000), st.integers(min_value=-1, max_value=5)),
    st.sampled_from([object(), slice(1, 2), {"k": 1}, Ellipsis, float("inf")]),
)
arg = st.one_of(st.sampled_from(POOL_KEYS).map(Ref), junk)


class Pool:
    """Objects of every kind, good and bad, made fresh for each example."""

    def __init__(self, gpu: ar.Backend, other: ar.Backend, other_objs: dict[str, Any]) -> None:
        self.gpu = gpu
        self.objs: dict[str, Any] = dict(other_objs)
        o = self.objs
        o["ptr"] = gpu.alloc(256)
        o["view"] = o["ptr"][32:96]
        o["empty_view"] = o["ptr"][256:]
        o["freed"] = gpu.alloc(64)
        gpu.free(o["freed"])
        o["arena"] = gpu.alloc_arena(512)
        o["managed"] = gpu.alloc_managed(128)
        o["host"] = gpu.alloc_host_pinned(128)
        o["host_view"] = o["host"][8:40]
        o["host_alone"] = gpu.alloc_host_pinned(64)
        o["host_freed"] = gpu.alloc_host_pinned(64)
        gpu.free_host_pinned(o["host_freed"])
        o["mapped"] = gpu.host_ptr_to_device(o["host"])
        o["np_u8"] = np.zeros(64, np.uint8)
        o["np_f32"] = np.zeros(16, np.float32)
        o["np_strided"] = np.zeros((8, 8), np.uint8)[:, ::2]
        ro = np.zeros(32, np.uint8)
        ro.flags.writeable = False
        o["np_readonly"] = ro
        o["np_object"] = np.array([None, 1, "x", 2.0], dtype=object)
        o["np_0d"] = np.array(3.0)
        o["np_structured"] = np.zeros(3, dtype=[("a", "i4"), ("b", "f8")])
        o["bytes"] = b"0123456789abcdef"
        o["bytearray"] = bytearray(48)
        o["memoryview"] = memoryview(bytearray(24))
        released = memoryview(bytearray(8))
        released.release()
        o["released_memoryview"] = released
        o["stream"] = gpu.create_stream()
        o["closed_stream"] = gpu.create_stream()
        o["closed_stream"].close()
        o["default_stream"] = gpu.default_stream()
        o["async"] = gpu.alloc_async(128, o["stream"])
        o["capturing_stream"] = gpu.create_stream()
        gpu.begin_capture(o["capturing_stream"])
        o["event"] = gpu.create_event()
        o["timing_event"] = gpu.create_event(timing=True)
        gpu.record_event(o["timing_event"])
        gpu.event_synchronize(o["timing_event"]).wait(30)
        o["unrecorded_timing_event"] = gpu.create_event(timing=True)
        o["closed_event"] = gpu.create_event()
        o["closed_event"].close()
        with gpu.capture(o["stream"]) as graph:
            gpu.memset_async(o["ptr"], 1, 8, stream=o["stream"])
        o["graph"] = graph
        with gpu.capture(o["stream"]) as destroyed:
            pass
        destroyed.close()
        o["destroyed_graph"] = destroyed
        o["module"] = gpu.builtin_module()
        o["module_name"] = "aruntime.vector_ops"
        o["kernel"] = gpu.kernel(o["module"], "saxpy")
        o["mock_image"] = {"noop": lambda launch, *a: None}
        o["bad_image"] = {1: "not callable"}
        o["completion"] = gpu.memset_async(o["ptr"], 0, 4)
        # Valid calls on other streams use `ptr`: a host wait orders them after it.
        gpu.synchronize().wait(30)

    def resolve(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self.objs[value.key]
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def release(self, extra: list[Any]) -> None:
        """Everything released; pinned buffers last, once the pool and ``extra`` hold
        none of their views (free_host_pinned refuses while one is alive)."""
        gpu = self.gpu
        objs = [*extra, *self.objs.values()]
        extra.clear()
        self.objs.clear()
        pinned = [o for o in objs if isinstance(o, ar.HostBuffer) and _allocated(o)]
        for obj in objs:
            if not isinstance(obj, ar.HostBuffer):
                release_one(gpu, obj)
        del objs, obj
        for buf in pinned:
            release_one(gpu, buf)


def _allocated(buf: ar.HostBuffer) -> bool:
    """Whether ``buf`` is the buffer alloc_host_pinned returned (not a view of it)."""
    record = buf._record
    return record is not None and buf.address == record.address and buf.nbytes == record.nbytes


def release_one(gpu: ar.Backend, obj: Any) -> None:
    with contextlib.suppress(ar.AruntimeError, TypeError):
        if isinstance(obj, ar.Completion):
            with contextlib.suppress(ar.AruntimeError):
                obj.wait(30)
        elif isinstance(obj, ar.DevicePtr) and obj.backend is gpu:
            entry = gpu._ledger.get(obj._alloc_id)
            if entry is not None and entry.address == obj.address:
                if entry.kind is AllocKind.ARENA:
                    gpu.free_arena(obj)
                elif entry.kind in (AllocKind.DEVICE, AllocKind.MANAGED):
                    gpu.free(obj)
                elif entry.kind is AllocKind.ASYNC:
                    gpu.free_async(obj)
                elif entry.kind is not AllocKind.MAPPED:  # a mapping goes with its host buffer
                    raise AssertionError(f"release_one: no way to free a {entry.kind!r}")
        elif isinstance(obj, ar.HostBuffer) and obj.backend is gpu and not obj.freed:
            if _allocated(obj):
                gpu.free_host_pinned(obj)
        elif isinstance(obj, (ar.Stream, ar.Event, ar.Graph)) and obj.backend is gpu:
            if isinstance(obj, ar.Stream):
                gpu.abort_capture_if_active(obj)
            obj.close()


@pytest.fixture(params=["mock", "mock-async"])
def fuzz_backends(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ar.Backend, ar.Backend, dict[str, Any]]]:
    monkeypatch.setenv("ARUNTIME_REDZONE", "1")
    options: dict[str, Any] = {"total_memory": 64 << 20}
    if request.param == "mock-async":
        options["latency"] = 0.0
    gpu = ar.open_backend("mock", **options)
    other = ar.open_backend("mock")
    foreign_stream = other.create_stream()
    foreign_event = other.create_event()
    with other.capture(foreign_stream) as foreign_graph:
        pass
    objs = {
        "foreign_ptr": other.alloc(64),
        "foreign_stream": foreign_stream,
        "foreign_event": foreign_event,
        "foreign_graph": foreign_graph,
        "foreign_kernel": other.kernel(other.builtin_module(), "saxpy"),
        "foreign_backend": other,
    }
    try:
        yield gpu, other, objs
    finally:
        foreign_graph.close()
        foreign_event.close()
        foreign_stream.close()
        other.free(objs["foreign_ptr"])
        other.close()
        with contextlib.suppress(ar.AruntimeError):
            gpu.sweep_unreleased()  # the canary and whatever the fuzzed calls made
        with contextlib.suppress(ar.AruntimeError):
            gpu.close()


class Invariants:
    """The canary's bytes and guards, the ledger and the handle counts."""

    def __init__(self, gpu: ar.Backend) -> None:
        self.gpu = gpu
        self.canary = gpu.alloc(CANARY.nbytes)
        gpu.copy_h2d(CANARY, self.canary)
        gpu.synchronize().wait(30)
        self.stats = gpu.statistics()
        self.patterns = (gpu._ledger.low_pattern, gpu._ledger.high_pattern)

    def check(self) -> None:
        gpu = self.gpu
        with contextlib.suppress(ar.AruntimeError):
            gpu.synchronize().wait(30)  # a fuzzed op may have failed unobserved
        for s in gpu._state.open_streams():
            s.state.take_failures()
        out = np.empty_like(CANARY)
        gpu.copy_d2h(self.canary, out)
        np.testing.assert_array_equal(out, CANARY)
        assert gpu.scan_redzones() == 0
        now = gpu.statistics()
        assert now.live_allocations == self.stats.live_allocations
        assert now.live_bytes == self.stats.live_bytes
        assert now.open_streams == self.stats.open_streams
        assert now.open_events == self.stats.open_events
        assert now.open_graphs == self.stats.open_graphs
        assert now.pending_ops == 0


def call_checked(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """Call ``fn``; return what it made (to release), or [] if it refused."""
    try:
        result = fn(*args, **kwargs)
    except ALLOWED:
        return []
    if isinstance(result, contextlib.AbstractContextManager):
        try:
            with result as graph:
                pass
        except ALLOWED:
            return []
        return [graph]
    return [result]


def test_random_bad_calls(fuzz_backends: tuple[ar.Backend, ar.Backend, dict[str, Any]]) -> None:
    """Hypothesis picks an entry point and fills every slot with anything at all."""
    gpu, other, other_objs = fuzz_backends
    inv = Invariants(gpu)

    @settings(SETTINGS, max_examples=120)
    @given(method=st.sampled_from(sorted(ENTRY_POINTS)), data=st.data())
    def run(method: str, data: st.DataObject) -> None:
        npos, kwnames = ENTRY_POINTS[method]
        args = data.draw(st.lists(arg, min_size=npos, max_size=npos), label="args")
        kwargs = data.draw(
            st.fixed_dictionaries({}, optional={k: arg for k in kwnames}), label="kwargs"
        )
        pool = Pool(gpu, other, other_objs)
        made: list[Any] = []
        try:
            made = call_checked(
                getattr(gpu, method),
                [pool.resolve(a) for a in args],
                {k: pool.resolve(v) for k, v in kwargs.items()},
            )
        finally:
            pool.release(made)
            inv.check()

    run()
    for name in NO_ARGS:
        getattr(gpu, name)()
    inv.check()
    gpu.free(inv.canary)


def test_every_bad_value_in_every_slot(
    fuzz_backends: tuple[ar.Backend, ar.Backend, dict[str, Any]],
) -> None:
    """Systematic pass: each slot of each entry point gets every pool object and junk value,
    the other slots holding valid values."""
    gpu, other, other_objs = fuzz_backends
    inv = Invariants(gpu)
    candidates: list[Any] = [*(Ref(k) for k in POOL_KEYS), *JUNK_SAMPLES]
    calls = 0
    for method in sorted(ENTRY_POINTS):
        good_args, good_kwargs = VALID[method]
        slots: list[tuple[int | str]] = [(i,) for i in range(len(good_args))]
        slots += [(k,) for k in ENTRY_POINTS[method][1]]
        # One valid call first: the table above must really be valid.
        pool = Pool(gpu, other, other_objs)
        made: list[Any] = []
        try:
            fn = getattr(gpu, method)
            kwargs = {k: pool.resolve(v) for k, v in good_kwargs.items()}
            made = [fn(*pool.resolve(list(good_args)), **kwargs)]
            if isinstance(made[0], contextlib.AbstractContextManager):
                with made[0] as graph:
                    pass
                made = [graph]
        finally:
            pool.release(made)
        for (slot,) in slots:
            pool = Pool(gpu, other, other_objs)
            made = []
            try:
                for candidate in candidates:
                    args = pool.resolve(list(good_args))
                    kwargs = {k: pool.resolve(v) for k, v in good_kwargs.items()}
                    if isinstance(slot, int):
                        args[slot] = pool.resolve(candidate)
                    else:
                        kwargs[slot] = pool.resolve(candidate)
                    made += call_checked(fn, args, kwargs)
                    calls += 1
            finally:
                args = kwargs = {}  # no view of the pool's pinned buffers left here
                pool.release(made)
            inv.check()
    assert calls > 3000
    gpu.free(inv.canary)


def test_devptr_offset_and_slicing_stay_in_bounds() -> None:
    with ar.open_backend("mock") as gpu:
        base = gpu.alloc(1000)

        def inside(p: ar.DevicePtr) -> None:
            assert base.address <= p.address <= base.address + 1000
            assert p.address + p.nbytes <= base.address + 1000
            assert p.nbytes >= 0 and len(p) == p.nbytes

        index = st.one_of(st.none(), st.integers(), st.integers(-1100, 1100), junk)

        @SETTINGS
        @given(view=st.tuples(st.integers(0, 1000), st.integers(0, 1000)), start=index, stop=index)
        def slices(view: tuple[int, int], start: Any, stop: Any) -> None:
            a, b = sorted(view)
            v = base[a:b]
            inside(v)
            for key in (slice(start, stop), slice(start, stop, start), start):
                with contextlib.suppress(ALLOWED):
                    inside(v[key])
            with contextlib.suppress(ALLOWED):
                inside(v.offset(start))

        slices()
        gpu.free(base)


def test_completion_wait_rejects_junk_timeouts() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        ptr = gpu.alloc(8)

        @SETTINGS
        @given(timeout=st.one_of(junk, st.floats(min_value=0, max_value=0.01)))
        def waits(timeout: Any) -> None:
            for c in (gpu.memset_async(ptr, 1, 8), gpu.synchronize()):
                try:
                    c.wait(timeout)
                except ALLOWED:
                    pass
                except TimeoutError:
                    assert isinstance(timeout, numbers.Real) and math.isfinite(timeout)
                c.wait()

        waits()
        gpu.free(ptr)
    finally:
        gpu.close()


#: Argument values for :func:`test_launch_argument_lists`: scalars of every
#: width but 8 (an 8-byte scalar in a pointer slot is a wild address, which no
#: driver can tell from a real one), raw bytes likewise, and real pointers.
_LAUNCH_DTYPES = ("u1", "i1", "u2", "f2", "u4", "i4", "f4")
_launch_arg = st.one_of(
    st.builds(lambda d, v: np.dtype(d).type(v), st.sampled_from(_LAUNCH_DTYPES), st.integers(0, 8)),
    st.binary(max_size=16).filter(lambda b: len(b) != 8),
    st.sampled_from(["x", "y"]),
)


@pytest.mark.parametrize("variant", ["mock", "cuda-sim", "levelzero-sim"])
def test_launch_argument_lists(variant: str) -> None:
    """Random argument lists for saxpy: refused with InvalidArgumentError unless they fit,
    nothing else corrupted, and the backend still computes right afterwards."""
    try:
        gpu = open_test_backend(variant)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{variant}: {exc}")
    try:
        saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
        ptrs = {"x": gpu.alloc(64), "y": gpu.alloc(64)}
        inv = Invariants(gpu)

        @settings(SETTINGS, max_examples=40)
        @given(args=st.lists(_launch_arg, max_size=6))
        def run(args: list[Any]) -> None:
            resolved = [ptrs[a] if isinstance(a, str) else a for a in args]
            try:
                gpu.launch(saxpy, 1, 4, resolved).wait(30)
            except ar.InvalidArgumentError:
                return
            except ar.DriverError:  # a mock kernel fed odd scalars may raise
                assert variant == "mock"
            sizes = [
                8 if isinstance(a, str) else len(a) if isinstance(a, bytes) else a.itemsize
                for a in args
            ]
            assert sizes == [4, 4, 8, 8], f"{args} was accepted"

        run()
        inv.check()
        x = np.arange(16, dtype=np.float32)
        gpu.copy_h2d(x, ptrs["x"])
        gpu.memset(ptrs["y"], 0, 64)
        gpu.launch(saxpy, 1, 16, [np.uint32(16), np.float32(2), ptrs["x"], ptrs["y"]]).wait(30)
        out = np.empty(16, np.float32)
        gpu.copy_d2h(ptrs["y"], out)
        np.testing.assert_array_equal(out, 2 * x)
        for p in ptrs.values():
            gpu.free(p)
        gpu.free(inv.canary)
    finally:
        gpu.close()
