"""The allocation ledger: caller sites, reports, sweeping, deferred frees."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar

from .helpers import Gate


def _line() -> int:
    return sys._getframe(1).f_lineno


def test_sites_are_the_callers_file_and_line(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    a, line_a = gpu.alloc(10), _line()
    b, line_b = gpu.alloc_host_pinned(20), _line()
    c, line_c = gpu.alloc_arena(30), _line()
    d, line_d = gpu.alloc_managed(40), _line()
    allocs = gpu.live_allocations()
    assert [x.site for x in allocs] == [
        f"{__file__}:{line_a}",
        f"{__file__}:{line_b}",
        f"{__file__}:{line_c}",
        f"{__file__}:{line_d}",
    ]
    assert [x.kind for x in allocs] == ["device", "host", "arena", "managed"]
    assert [x.nbytes for x in allocs] == [10, 20, 30, 40]
    assert allocs[0].ptr is a and allocs[1].ptr is b
    gpu.free(a)
    gpu.free_host_pinned(b)
    gpu.free_arena(c)
    gpu.free(d)
    assert gpu.live_allocations() == []


def _user_helper(gpu: ar.Backend) -> ar.DevicePtr:
    return gpu.alloc(8)  # the site is this line: the first frame outside aruntime


def test_site_is_first_frame_outside_the_package(mock_backend: ar.Backend) -> None:
    ptr = _user_helper(mock_backend)
    site = mock_backend.live_allocations()[0].site
    assert site.startswith(__file__ + ":")
    assert "aruntime/" not in site.replace(__file__, "")
    line = int(site.rsplit(":", 1)[1])
    src = Path(__file__).read_text().splitlines()[line - 1]
    assert "the site is this line" in src
    mock_backend.free(ptr)


def test_counts_bytes_and_free_memory(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    total = gpu.total_memory()
    ptrs = [gpu.alloc(1000 * (i + 1)) for i in range(4)]
    host = gpu.alloc_host_pinned(500)
    mapped = gpu.host_ptr_to_device(host)  # an alias, not new memory
    assert gpu.live_alloc_count() == 5
    assert gpu.live_bytes() == 10000 + 500
    assert gpu.free_memory() == total - 10500
    assert mapped.nbytes == 500
    gpu.free(ptrs[0])
    assert gpu.live_bytes() == 9500 and gpu.live_alloc_count() == 4
    for p in ptrs[1:]:
        gpu.free(p)
    gpu.free_host_pinned(host)
    assert gpu.live_bytes() == 0 and gpu.free_memory() == total


def test_alloc_report(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    big = [gpu.alloc(1 << 20) for _ in range(3)]
    line_big = _line() - 1
    small = gpu.alloc(100)
    report = gpu.alloc_report()
    lines = report.splitlines()
    assert lines[0] == "mock: 4 live allocations, 3.00 MiB"
    assert lines[1].split() == ["site", "count", "MiB"]
    assert lines[2].split() == [f"{__file__}:{line_big}", "3", "3.00"]  # largest first
    assert lines[3].split()[1:] == ["1", "0.00"]
    assert len(gpu.alloc_report(top_n=1).splitlines()) == 3
    assert len(gpu.alloc_report(min_mb=1).splitlines()) == 3  # the 100-byte site is dropped
    assert len(gpu.alloc_report(min_mb=4).splitlines()) == 1  # only the summary
    with pytest.raises(ar.InvalidArgumentError):
        gpu.alloc_report(top_n=0)
    with pytest.raises(ar.InvalidArgumentError):
        gpu.alloc_report(min_mb=-1)
    with pytest.raises(ar.InvalidArgumentError):
        gpu.alloc_report(min_mb=float("nan"))
    with pytest.raises(TypeError):
        gpu.alloc_report(min_mb="1")  # type: ignore[arg-type]
    for p in [*big, small]:
        gpu.free(p)
    assert gpu.alloc_report() == "mock: 0 live allocations, 0.00 MiB"


def test_sweep_unreleased() -> None:
    with ar.open_backend("mock") as gpu:
        a = gpu.alloc(64)
        gpu.alloc_managed(64)
        gpu.alloc_arena(64)
        host = gpu.alloc_host_pinned(64)
        mapped = gpu.host_ptr_to_device(host)
        kept = gpu.alloc(8)
        gpu.free(kept)
        assert gpu.sweep_unreleased() == 4
        assert gpu.live_alloc_count() == 0 and gpu.live_bytes() == 0
        assert gpu.live_allocations() == []
        assert host.freed
        for p in (a, mapped):
            with pytest.raises(ar.InvalidArgumentError, match="freed"):
                gpu.memset_async(p, 0, 8)
        assert gpu.sweep_unreleased() == 0
        assert len(gpu.driver.calls("free")) == 4  # kept + 3 device-side sweeps


def test_free_is_deferred_until_queued_work_is_done() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        gate = Gate(gpu)
        gate.launch()
        ptr = gpu.alloc(64)
        host = gpu.alloc_host_pinned(64)
        gpu.copy_h2d_async(host, ptr)
        gpu.free(ptr)
        gpu.free_host_pinned(host)
        assert gpu.live_alloc_count() == 0  # gone from the ledger at once...
        with pytest.raises(ar.InvalidArgumentError, match="freed"):
            gpu.memset_async(ptr, 0, 1)
        assert gpu.driver.calls("free") == [] and gpu.driver.calls("free_host") == []
        gate.open()  # ...released by the driver only once the device is done
        gpu.synchronize().wait(30)
        assert len(gpu.driver.calls("free")) == 1
        assert len(gpu.driver.calls("free_host")) == 1
    finally:
        gpu.close()


def test_ledger_is_thread_safe() -> None:
    gpu = ar.open_backend("mock")
    errors: list[BaseException] = []

    def churn(seed: int) -> None:
        rng = np.random.default_rng(seed)
        live: list[ar.DevicePtr] = []
        try:
            for _ in range(300):
                if live and rng.random() < 0.5:
                    gpu.free(live.pop(int(rng.integers(len(live)))))
                else:
                    live.append(gpu.alloc(int(rng.integers(1, 4096))))
            for p in live:
                gpu.free(p)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert gpu.live_alloc_count() == 0 and gpu.live_bytes() == 0
    gpu.close()


def test_close_releases_everything_left() -> None:
    gpu = ar.open_backend("mock")
    gpu.alloc(10)
    host = gpu.alloc_host_pinned(10)
    with pytest.warns(ResourceWarning, match="freed 2 allocations") as record:
        gpu.close()
    assert gpu.live_alloc_count() == 0
    assert host.freed
    assert record[0].filename == __file__  # at the line that closed the backend
    assert str(record[0].message).count("test_ledger.py:") == 2  # each allocation's site


@pytest.mark.parametrize("what", ["device", "host", "event", "graph"])
def test_release_waits_for_streams_closed_with_work_queued(what: str) -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        gate = Gate(gpu)
        s = gpu.create_stream()
        gate.launch(stream=s)
        ptr = gpu.alloc(64)
        host = gpu.alloc_host_pinned(64)
        ev = gpu.create_event()
        with gpu.capture(gpu.default_stream()) as graph:
            pass
        done = gpu.copy_d2h_async(ptr, host, stream=s)
        s.close()  # never blocks: the queued copy still runs
        destroyed: list[str] = []
        if what == "device":
            gpu.free(ptr)
        elif what == "host":
            gpu.free_host_pinned(host)
        elif what == "event":
            gpu.driver.event_destroy = lambda e: destroyed.append("event")  # type: ignore[method-assign]
            gpu.destroy_event(ev)
        else:
            gpu.driver.graph_destroy = lambda g: destroyed.append("graph")  # type: ignore[method-assign]
            gpu.destroy_graph(graph)
        assert gpu.driver.calls("free") == [] and gpu.driver.calls("free_host") == []
        assert destroyed == []
        gate.open()
        done.wait(30)  # the copy did not run into freed memory
        gpu.synchronize().wait(30)
        freed = len(gpu.driver.calls("free")) + len(gpu.driver.calls("free_host"))
        assert freed + len(destroyed) == 1
    finally:
        with pytest.warns(ResourceWarning, match="still live"):
            gpu.close()  # frees what the test kept


def test_mapping_a_host_buffer_repeatedly_adds_one_entry(mock_backend: ar.Backend) -> None:
    gpu = mock_backend
    host = gpu.alloc_host_pinned(64)
    first = gpu.host_ptr_to_device(host)
    for _ in range(100):
        again = gpu.host_ptr_to_device(host)
        assert again == first
    assert gpu.host_ptr_to_device(host[16:32]).address == first.address + 16
    assert len(gpu._ledger.entries()) == 2  # the host buffer and its one mapping
    gpu.free_host_pinned(host)
    assert gpu._ledger.entries() == []


def test_ledger_does_not_grow_with_frees(mock_backend: ar.Backend) -> None:
    import tracemalloc

    gpu = mock_backend
    for _ in range(200):  # warm up caches
        gpu.free(gpu.alloc(8))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3000):
            gpu.free(gpu.alloc(8))
            gpu.driver.call_log.clear()  # the mock's log grows by design
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 3000 * 16, grown  # no per-free bookkeeping left behind


def test_in_range_is_check_ranges_common_case(mock_backend: ar.Backend) -> None:
    """The entry exactly where check_range passes with it; None wherever check_range
    must look (and then raises, naming why)."""
    gpu = mock_backend
    ledger = gpu._state.ledger
    ptr = gpu.alloc(64)
    entry = ledger.check_range(ptr, 64, "test")
    assert ledger.in_range(ptr, 64) is entry
    assert ledger.in_range(ptr, 0) is entry
    assert ledger.in_range(ptr[16:32], 16) is entry  # a view, within its bytes
    with ar.open_backend("mock") as other:
        theirs = other.alloc(64)
        refused: dict[str, tuple[object, object]] = {
            "past the view": (ptr[16:32], 17),
            "past the allocation": (ptr, 65),
            "another backend's": (theirs, 8),
            "not a pointer": (int(ptr), 8),
            "a bool count": (ptr, True),
        }
        for what, (operand, nbytes) in refused.items():
            assert ledger.in_range(operand, nbytes) is None, what
            if what != "a bool count":  # check_range itself takes any int
                with pytest.raises((ar.InvalidArgumentError, TypeError)):
                    ledger.check_range(operand, nbytes, "test")
        other.free(theirs)
    gpu.free(ptr)
    assert ledger.in_range(ptr, 8) is None  # freed
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        ledger.check_range(ptr, 8, "test")


def test_a_range_check_needs_the_pointers_slots() -> None:
    from aruntime import _enqueue

    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")

    class Loose:
        pass

    with pytest.raises(TypeError, match=r"Loose\._backend is not a slot"):
        module.RangeCheck(owner=None, entries={}, pointer=Loose)
    check = module.RangeCheck(owner=None, entries={}, pointer=ar.DevicePtr)
    with pytest.raises(TypeError, match=r"\(ptr, nbytes\)"):
        check(1)
