"""aruntime.testing: the fixtures users put in their own suites, and the leak check."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import aruntime as ar
from aruntime import testing

from .helpers import Gate

ROOT = Path(__file__).resolve().parent.parent


def test_assert_no_leaks_passes_on_a_clean_backend() -> None:
    with ar.open_backend("mock") as gpu:
        testing.assert_no_leaks(gpu)
        s = gpu.create_stream()
        e = gpu.create_event()
        p = gpu.alloc(8)
        s.close()
        e.close()
        gpu.free(p)
        gpu.default_stream()  # the backend's own stream is not a leak
        testing.assert_no_leaks(gpu)


@pytest.mark.parametrize(
    ("leak", "message"),
    [
        ("alloc", r"1 live allocations \(100 bytes\)"),
        ("host", r"1 live allocations \(16 bytes\)"),
        ("stream", "1 open streams"),
        ("event", "1 open events"),
        ("graph", "1 open graphs"),
    ],
)
def test_assert_no_leaks_names_what_leaked(leak: str, message: str) -> None:
    gpu = ar.open_backend("mock")
    keep: list[object] = []
    if leak == "alloc":
        keep.append(gpu.alloc(100))
    elif leak == "host":
        keep.append(gpu.alloc_host_pinned(16))
    elif leak == "stream":
        keep.append(gpu.create_stream())
    elif leak == "event":
        keep.append(gpu.create_event())
    else:
        with gpu.capture(gpu.default_stream()) as graph:
            pass
        keep.append(graph)
    with pytest.raises(testing.LeakError, match=message) as info:
        testing.assert_no_leaks(gpu)
    assert isinstance(info.value, AssertionError)
    if leak in ("alloc", "host"):
        assert "test_testing_fixtures.py" in str(info.value)  # the report names the site
    if leak in ("alloc", "host"):
        with pytest.warns(ResourceWarning, match="still live"):
            gpu.close()  # the backend releases what the test leaked, and says so
    else:
        gpu.close()


def test_assert_no_leaks_catches_pending_ops() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    gate = Gate(gpu)
    gate.launch()
    with pytest.raises(testing.LeakError, match="ops still pending"):
        testing.assert_no_leaks(gpu)
    gate.open()
    gpu.synchronize().wait(30)
    testing.assert_no_leaks(gpu)
    gpu.close()


def test_the_fixture_teardown_fails_a_leaky_test() -> None:
    gen = testing._checked(ar.open_backend("mock"))
    gpu = next(gen)
    gpu.alloc(10)
    with pytest.raises(testing.LeakError, match="live allocations"):
        next(gen)
    assert gpu.closed  # closed even though the check failed


def test_the_fixture_teardown_waits_for_queued_work() -> None:
    gen = testing._checked(testing.open_test_backend("mock-async"))
    gpu = next(gen)
    p = gpu.alloc(10)
    gpu.memset_async(p, 1, 10)
    gpu.free(p)  # freed with the op still queued: not a leak once it has run
    with pytest.raises(StopIteration):
        next(gen)
    assert gpu.closed


def test_leak_check_fixture_is_the_function(leak_check: object) -> None:
    assert leak_check is testing.assert_no_leaks


def test_async_mock_backend_really_waits(async_mock_backend: ar.Backend) -> None:
    assert not async_mock_backend.driver.synchronous
    p = async_mock_backend.alloc(8)
    c = async_mock_backend.memset_async(p, 1, 8)
    c.wait(30)
    async_mock_backend.free(p)


def test_fixtures_in_a_users_suite(tmp_path: Path) -> None:
    """The plugin as a user enables it: a leak fails, skips say why, REQUIRE fails them."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["aruntime.testing"]\n')
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            import pytest

            pytestmark = pytest.mark.anyio

            @pytest.fixture(params=["asyncio", "trio"])
            def anyio_backend(request):
                return request.param

            async def test_clean(mock_backend):
                p = mock_backend.alloc(16)
                await mock_backend.copy_h2d_async(np.ones(16, np.uint8), p)
                mock_backend.free(p)

            def test_leaky(mock_backend):
                mock_backend.alloc(16)

            def test_every_backend(backend):
                backend.free(backend.alloc(8))
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ARUNTIME_REQUIRE_BACKENDS", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", str(tmp_path)]
    cmd[3:3] = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]  # start faster
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    assert "ERROR at teardown of test_leaky" in out, out  # a leak fails the teardown
    assert "LeakError: mock leaked: 1 live allocations (16 bytes)" in out, out
    assert "1 error" in out and " passed" in out and "failed" not in out, out
    assert "unavailable" in out  # skipped backends give the reason


def test_required_backends_fail_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(variant: str, **options: object) -> ar.Backend:
        raise ar.BackendUnavailableError(f"{variant}: simulated")

    monkeypatch.setattr(testing, "open_test_backend", unavailable)
    monkeypatch.delenv("ARUNTIME_REQUIRE_BACKENDS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cuda-sim unavailable: cuda-sim: simulated"):
        testing._open_or_skip("cuda-sim")
    monkeypatch.setenv("ARUNTIME_REQUIRE_BACKENDS", "mock, cuda-sim")
    with pytest.raises(pytest.fail.Exception, match="cuda-sim is required here"):
        testing._open_or_skip("cuda-sim")
    with pytest.raises(pytest.skip.Exception):
        testing._open_or_skip("levelzero-sim")


# ------------------------------------------------------------------ faults a GPU would show
# Each runs an inner pytest session with pytester, so the failures are real ones.

_CONFTEST = 'pytest_plugins = ["aruntime.testing"]\n'

_FAULTING = """
import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


def _oob_scale(gpu, ptr):
    k = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    n = 1 << 20  # a million floats into a 16-byte buffer: an illegal address on a GPU
    return gpu.launch(k, n // 256, 256, [np.uint32(n), np.float32(2), ptr])  # LAUNCHED_HERE


def test_unawaited_failure(mock_backend):
    ptr = mock_backend.alloc(16)
    mock_backend.driver.inject_fault("memset", ar.DriverError)
    mock_backend.memset_async(ptr, 0, 16)  # FAILS_HERE
    mock_backend.free(ptr)


def test_unawaited_failure_on_a_worker(async_mock_backend):
    ptr = async_mock_backend.alloc(16)
    async_mock_backend.driver.inject_fault("memset", ar.DriverError)
    async_mock_backend.memset_async(ptr, 0, 16)  # FAILS_LATER
    async_mock_backend.free(ptr)


async def test_awaited_failure_passes(mock_backend):
    ptr = mock_backend.alloc(16)
    mock_backend.driver.inject_fault("memset", ar.DriverError)
    with pytest.raises(ar.DriverError):
        await mock_backend.memset_async(ptr, 0, 16)
    mock_backend.free(ptr)


async def test_faults_but_awaits_only_its_download(mock_backend):
    ptr = mock_backend.alloc(16)
    await mock_backend.copy_h2d_async(np.arange(4, dtype=np.float32), ptr)
    _oob_scale(mock_backend, ptr)  # never awaited
    out = await mock_backend.copy_d2h_async(ptr, np.empty(4, np.float32))
    mock_backend.free(ptr)
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]
"""


def _line(path: Path, marker: str) -> int:
    """The line of the file pytester wrote that holds ``marker``."""
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


def test_an_unobserved_failure_fails_its_test_naming_the_op_and_its_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_user=_FAULTING)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "anyio")
    out = result.stdout.str()
    written = pytester.path / "test_user.py"
    here, later = _line(written, "FAILS_HERE"), _line(written, "FAILS_LATER")
    launched = _line(written, "LAUNCHED_HERE")
    assert "ERROR at teardown of test_unawaited_failure " in out, out
    assert f"memset_async enqueued at {pytester.path / 'test_user.py'}:{here}" in out, out
    assert "UnobservedError: 1 op(s) of this test failed and nobody awaited them" in out, out
    # On the threaded mock the op fails later, on a worker: its line was taken at the call.
    assert "ERROR at teardown of test_unawaited_failure_on_a_worker" in out, out
    assert f"test_user.py:{later}" in out, out
    # The sticky fault fails the download, which names the launch (seen through
    # it); the buffer the failed test never freed is its teardown error.
    # (a test whose teardown fails counts as passed and as an error)
    result.assert_outcomes(passed=4, failed=2, errors=4)
    assert "FAILED test_user.py::test_faults_but_awaits_only_its_download[asyncio]" in out, out
    # Stream order: the download names the launch that failed before it.
    assert "DeviceLostError: copy_d2h_async: not done: the earlier op launch" in out, out
    assert f"(queued at {pytester.path / 'test_user.py'}:{launched})" in out, out


_LOSES = """
import numpy as np
import pytest

import aruntime as ar


def test_loses_the_device(mock_backend):
    ptr = mock_backend.alloc(16)
    k = mock_backend.kernel(mock_backend.builtin_module("vector_ops"), "scale_f32")
    n = 1 << 20
    done = mock_backend.launch(k, n // 256, 256, [np.uint32(n), np.float32(2), ptr])
    with pytest.raises(ar.DeviceLostError):
        done.wait()  # seen: the test passes, but the device is gone
    mock_backend.free(ptr)


def test_cannot_open_it_any_more(mock_backend):
    pass


def test_fails_on_the_lost_device():
    raise ar.DeviceLostError("cuMemAlloc_v2: the device was lost", backend="mock")
"""

# Stands for a driver whose device stays lost for the whole process (as cuda.h
# says of CUDA_ERROR_ILLEGAL_ADDRESS): once a test lost it, opening fails.
_PROCESS_WIDE_LOSS = """
import aruntime as ar
import aruntime.testing as testing

pytest_plugins = ["aruntime.testing"]

_open = testing.open_test_backend


def _open_unless_lost(variant, **options):
    if testing._lost_by:
        raise ar.DeviceLostError(f"open {variant}: the device was lost", backend=variant)
    return _open(variant, **options)


testing.open_test_backend = _open_unless_lost
"""


def test_later_tests_say_which_test_lost_the_device(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(testing, "_lost_by", {})
    monkeypatch.setattr(testing, "open_test_backend", testing.open_test_backend)
    pytester.makeconftest(_PROCESS_WIDE_LOSS)
    pytester.makepyfile(test_user=_LOSES)
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = result.stdout.str()
    result.assert_outcomes(passed=1, failed=1, errors=1)
    assert (
        "mock cannot be opened (DeviceLostError: open mock: the device was lost); its device "
        "was lost earlier, by test_user.py::test_loses_the_device (DeviceLostError:" in out
    ), out
    assert "@pytest.mark.aruntime_isolated" in out, out
    assert "aruntime: a device was lost earlier in this session" in out, out
    assert "mock: lost by test_user.py::test_loses_the_device" in out, out


_ISOLATED = """
import os
import pytest

import aruntime as ar


@pytest.mark.aruntime_isolated
def test_crashes():
    with ar.open_backend("mock") as gpu:
        gpu.alloc(8)
        os._exit(3)  # as a driver that aborts the process would


@pytest.mark.aruntime_isolated
def test_fails_inside():
    assert os.environ.get("ARUNTIME_ISOLATED_REPORTS"), "not in a child"
    assert 1 == 2, "the child's own assertion"


@pytest.mark.aruntime_isolated
def test_skips_inside():
    pytest.skip("the child's own skip")


@pytest.mark.aruntime_isolated
@pytest.mark.parametrize("n", [1, 2])
def test_passes_inside(n, mock_backend):
    assert os.environ.get("ARUNTIME_ISOLATED_REPORTS")
    mock_backend.free(mock_backend.alloc(n))


def test_the_session_goes_on():
    assert not os.environ.get("ARUNTIME_ISOLATED_REPORTS")
"""


@pytest.mark.slow  # a pytest session that starts a child interpreter per isolated test
def test_the_isolated_marker_runs_a_test_in_a_child_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("ARUNTIME_ISOLATED_REPORTS", raising=False)
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_user=_ISOLATED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    out = result.stdout.str()
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert "the isolated child process ended with exit status 3 before the test finished" in out
    assert "AssertionError: the child's own assertion" in out, out
    assert "the child's own skip" in out, out
