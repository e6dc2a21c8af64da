"""The stream-race checker's happens-before rules, on their own (no backend).

Each happens-before rule is one test here: what orders two ops (stream order,
an event, a host wait), what does not, and that a race's message names both
ops, both streams, the overlapping bytes and both call sites.
"""

from __future__ import annotations

import pytest

from aruntime._exceptions import HazardError
from aruntime._hazards import Access, HazardChecker, Space


def dev(lo: int, hi: int, *, write: bool) -> Access:
    return Access(Space.DEVICE, lo, hi, write, "device allocation 0x1000 (4096 bytes)")


def host(lo: int, hi: int, *, write: bool) -> Access:
    return Access(Space.HOST, lo, hi, write, "a host buffer")


@pytest.fixture
def checker() -> HazardChecker:
    return HazardChecker()


def test_a_write_then_an_unordered_read_on_another_stream_is_a_race(
    checker: HazardChecker,
) -> None:
    s1, s2 = checker.add_stream("stream 1"), checker.add_stream("stream 2")
    checker.submit(s1, "copy_h2d_async", [dev(0x1000, 0x2000, write=True)], "app.py:10")
    with pytest.raises(HazardError) as info:
        checker.submit(s2, "launch 'scale'", [dev(0x1800, 0x1900, write=False)], "app.py:12")
    message = str(info.value)
    for part in (
        "launch 'scale' on stream 2 (at app.py:12) reads",
        "0x1800..0x1900 (256 bytes)",
        "copy_h2d_async on stream 1 (at app.py:10) writes",
        "device allocation 0x1000",
    ):
        assert part in message, message


def test_a_raced_op_is_not_recorded(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "a", [dev(0, 8, write=True)], "x:1")
    before = checker.record_count()
    with pytest.raises(HazardError):
        checker.submit(s2, "b", [dev(0, 8, write=True)], "x:2")
    assert checker.record_count() == before


def test_the_same_stream_is_ordered(checker: HazardChecker) -> None:
    s1 = checker.add_stream("s1")
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.submit(s1, "b", [dev(0, 64, write=True)], "x:2")
    checker.submit(s1, "c", [dev(0, 64, write=False)], "x:3")


def test_reads_never_race_with_reads(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "a", [dev(0, 64, write=False)], "x:1")
    checker.submit(s2, "b", [dev(0, 64, write=False)], "x:2")


def test_disjoint_ranges_never_race(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.submit(s2, "b", [dev(64, 128, write=True)], "x:2")
    checker.submit(s2, "c", [host(0, 64, write=True)], "x:3")  # another address space


def test_an_event_orders_two_streams(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.record_event(7, s1)
    checker.wait_event(s2, 7)
    checker.submit(s2, "b", [dev(0, 64, write=False)], "x:2")


def test_an_event_recorded_before_the_write_does_not_order_it(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.record_event(7, s1)
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.wait_event(s2, 7)
    with pytest.raises(HazardError):
        checker.submit(s2, "b", [dev(0, 64, write=False)], "x:2")


def test_ordering_is_transitive_through_a_third_stream(checker: HazardChecker) -> None:
    s1, s2, s3 = (checker.add_stream(f"s{i}") for i in (1, 2, 3))
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.record_event(1, s1)
    checker.wait_event(s2, 1)
    checker.record_event(2, s2)
    checker.wait_event(s3, 2)
    checker.submit(s3, "b", [dev(0, 64, write=True)], "x:2")


@pytest.mark.parametrize("wait", ["op", "stream", "event", "all"])
def test_a_host_wait_orders_everything_submitted_after_it(
    checker: HazardChecker, wait: str
) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    place = checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    if wait == "op":
        checker.host_waited_op(*place)
    elif wait == "stream":
        checker.host_waited_stream(s1)
    elif wait == "event":
        checker.record_event(3, s1)
        checker.host_waited_event(3)
    else:
        checker.host_waited_all()
    checker.submit(s2, "b", [dev(0, 64, write=True)], "x:2")
    assert checker.record_count() == 1  # the host saw `a` finish: only `b` is kept


def test_a_host_wait_for_an_earlier_op_does_not_order_a_later_one(
    checker: HazardChecker,
) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    first = checker.submit(s1, "a", [dev(0, 8, write=False)], "x:1")
    checker.submit(s1, "b", [dev(0, 64, write=True)], "x:2")
    checker.host_waited_op(*first)
    with pytest.raises(HazardError, match="b on s1"):
        checker.submit(s2, "c", [dev(32, 40, write=False)], "x:3")


def test_a_host_buffer_written_by_a_download_and_read_by_an_upload(
    checker: HazardChecker,
) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "copy_d2h_async", [host(0x5000, 0x6000, write=True)], "x:1")
    with pytest.raises(HazardError, match="a host buffer"):
        checker.submit(s2, "copy_h2d_async", [host(0x5000, 0x5004, write=False)], "x:2")


def test_records_stay_few_on_one_stream(checker: HazardChecker) -> None:
    s1 = checker.add_stream("s1")
    for i in range(1000):
        checker.submit(s1, "op", [dev(0, 64, write=i % 2 == 0), dev(64, 128, write=False)], "x")
    assert checker.record_count() <= 4


def test_forgetting_a_freed_range(checker: HazardChecker) -> None:
    s1, s2 = checker.add_stream("s1"), checker.add_stream("s2")
    checker.submit(s1, "a", [dev(0, 64, write=True)], "x:1")
    checker.forget_range(Space.DEVICE, 0, 64)
    checker.submit(s2, "b", [dev(0, 64, write=True)], "x:2")


def test_an_unknown_stream_number_is_refused(checker: HazardChecker) -> None:
    with pytest.raises(ValueError, match="no stream numbered 99"):
        checker.submit(99, "a", [], "x:1")
