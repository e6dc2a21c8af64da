"""A forked child: its parent's backends, and the sims, fail at once instead of hanging.

Each test forks this process.  The child tries what the issue found hanging
(an inherited op's ``wait()`` and ``await``, a blocking call on an inherited
backend, a new backend's blocking memset), writes one line per attempt to a
pipe and exits; the parent gives it a generous deadline and kills it if it
is still running, which is how a hang shows here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

import aruntime as ar
from aruntime.backends._sim_faults import _sim_function

_DEADLINE_S = 60.0  # a child that has not exited by then is hung
ROOT = Path(__file__).resolve().parent.parent


def _fork(child: Callable[[], list[str]]) -> list[str]:
    """Run ``child`` in a forked child; the lines it returned (fails if it hangs)."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a threaded process may deadlock:
        # exactly the case under test.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 0
        try:
            os.close(read)
            os.write(write, "\n".join(child()).encode())
        except BaseException as exc:  # reported through the exit code
            with contextlib.suppress(OSError):
                os.write(write, f"child raised {exc!r}".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    os.set_blocking(read, False)
    data = b""
    deadline = time.monotonic() + _DEADLINE_S
    status: int | None = None
    while status is None:
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read, 65536):
                data += chunk
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            raise AssertionError(f"the forked child hung; it had reported: {data.decode()!r}")
        else:
            time.sleep(0.05)
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read, 65536):
            data += chunk
    os.close(read)
    lines = data.decode().splitlines()
    assert os.waitstatus_to_exitcode(status) == 0, lines
    return lines


def _attempt(name: str, fn: Callable[[], Any]) -> str:
    try:
        fn()
    except ar.AruntimeError as exc:
        return f"{name}: {type(exc).__name__}: {exc}"
    return f"{name}: ok"


def _await_on(backend: str, completion: ar.Completion) -> None:
    async def wait() -> None:
        await completion

    anyio.run(wait, backend=backend)


@contextlib.contextmanager
def _slow_ops(kind: str) -> Iterator[None]:
    """On a sim, every op takes 2 s of device time: one is pending at the fork."""
    if kind == "mock":
        yield
        return
    set_timing = _sim_function(kind, "arsim_set_timing")
    set_timing.argtypes = [ctypes.c_double, ctypes.c_double]
    set_timing(0.0, 2e6)
    try:
        yield
    finally:
        set_timing(0.0, 0.0)


def _alone(scenario: str, *args: str) -> None:
    """Run ``scenario(*args)`` of this module in a fresh interpreter, which forks.

    Never in the test process itself: forking it would copy every earlier
    test's threads and backends into the child.
    """
    code = f"import tests.test_fork as t; t.{scenario}(*{args!r})"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, f"{scenario}{args} failed alone:\n{run.stdout}{run.stderr}"


@pytest.mark.parametrize("kind", ["mock", "cuda-sim", "levelzero-sim"])
def test_a_forked_child_cannot_use_its_parents_backend(kind: str) -> None:
    _alone("inherited_scenario", kind)


@pytest.mark.parametrize("kind", ["cuda-sim", "levelzero-sim"])
def test_a_sim_refuses_a_new_backend_in_a_forked_child(kind: str) -> None:
    _alone("new_sim_scenario", kind)


def test_a_new_mock_in_a_forked_child_works() -> None:
    _alone("new_mock_scenario")


def inherited_scenario(kind: str) -> None:
    gpu = ar.open_backend(kind)
    buf = gpu.alloc(4096)
    stream = gpu.create_stream()
    try:
        with _slow_ops(kind):
            pending = gpu.memset_async(buf, 1, 4096)

            def child() -> list[str]:
                return [
                    _attempt("alloc", lambda: gpu.alloc(16)),
                    _attempt("memset", lambda: gpu.memset(buf, 0, 16)),
                    _attempt("wait", pending.wait),
                    _attempt("await-asyncio", lambda: _await_on("asyncio", pending)),
                    _attempt("await-trio", lambda: _await_on("trio", pending)),
                    _attempt("stream-close", stream.close),
                    _attempt("close", gpu.close),
                ]

            lines = _fork(child)
        pending.wait()  # the parent's backend is untouched by the child
        assert gpu.copy_d2h(buf, np.empty(4096, np.uint8)).tolist() == [1] * 4096
    finally:
        stream.close()
        gpu.free(buf)
        gpu.close()
    outcome = dict(line.split(": ", 1) for line in lines)
    for call in ("alloc", "memset"):
        assert outcome[call].startswith("BackendUnavailableError"), lines
        assert "is a fork of it" in outcome[call] and str(os.getpid()) in outcome[call], lines
    # The mock's op had finished before the fork; a sim's was still running.
    waits = ("wait", "await-asyncio", "await-trio")
    for call in waits:
        if kind == "mock":
            assert outcome[call] == "ok", lines
        else:
            assert outcome[call].startswith("BackendUnavailableError: memset_async:"), lines
            assert "fork" in outcome[call], lines
    assert outcome["close"] == "ok", lines  # a no-op: the parent's device state is the parent's
    assert outcome["stream-close"] == "ok", lines  # likewise (it raised a DriverError before)


def new_sim_scenario(kind: str) -> None:
    # The parent initialized the driver (and closed its backend) before forking.
    ar.open_backend(kind).close()

    def child() -> list[str]:
        def blocking_memset() -> None:
            gpu = ar.open_backend(kind)
            buf = gpu.alloc(16)
            gpu.memset(buf, 0, 16)

        return [_attempt("new", blocking_memset)]

    (line,) = _fork(child)
    assert line.startswith("new: BackendUnavailableError: open_backend"), line
    assert f"a fork of process {os.getpid()}" in line and "spawn" in line, line


def new_mock_scenario() -> None:
    ar.open_backend("mock").close()

    def child() -> list[str]:
        def use() -> None:
            with ar.open_backend("mock") as gpu:
                buf = gpu.alloc(16)
                gpu.memset(buf, 7, 16)
                assert gpu.copy_d2h(buf, np.empty(16, np.uint8)).tolist() == [7] * 16
                gpu.free(buf)

        return [_attempt("new", use)]

    assert _fork(child) == ["new: ok"]
