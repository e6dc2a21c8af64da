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
