"""aruntime/_loop.py: the checkpoints an ``__await__`` makes, on asyncio and trio."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import anyio
import pytest

from aruntime import _loop
from aruntime._loop import checkpoint, stepper

pytestmark = pytest.mark.anyio


class _Steps:
    """Awaits ``count`` steps of the loop, as Completion._await_tail takes them."""

    def __init__(self, count: int, *, looked_up_once: bool = True) -> None:
        self.count, self.looked_up_once = count, looked_up_once
        self.taken = 0

    def __await__(self) -> Generator[Any, None, None]:
        step = stepper() if self.looked_up_once else checkpoint
        for _ in range(self.count):
            yield from step()
            self.taken += 1


@pytest.mark.parametrize("looked_up_once", [True, False])
async def test_each_step_lets_the_other_tasks_run(anyio_backend: str, looked_up_once: bool) -> None:
    """A step is a schedule point: a task started beside it runs between two steps."""
    seen: list[int] = []
    steps = _Steps(20, looked_up_once=looked_up_once)

    async def beside() -> None:
        seen.append(steps.taken)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(beside)
        await steps
    assert steps.taken == 20
    assert seen and seen[0] < 20  # it ran before the last step, not after


@pytest.mark.parametrize("looked_up_once", [True, False])
async def test_each_step_is_a_cancel_point(anyio_backend: str, looked_up_once: bool) -> None:
    steps = _Steps(5, looked_up_once=looked_up_once)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await steps
    assert scope.cancelled_caught
    assert steps.taken == 0  # cancelled at the first step


async def test_the_step_is_the_running_loops(anyio_backend_name: str) -> None:
    """Asyncio's step is a bare yield; trio's is trio's checkpoint (a bare yield crashes it)."""
    assert (stepper() is _loop._asyncio_step) == (anyio_backend_name == "asyncio")
