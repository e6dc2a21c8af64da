"""The compiled calls of every op's path (``_ffi.compiled_calls``) and their ABI fallback.

The driver tests run on both paths (the ``ze`` fixture's "loader-abi"); these
check that the compiled one is really taken where it was built, that it can
be switched off, and that it reaches the library the backend opened.
"""

from __future__ import annotations

import contextlib
import sysconfig
from typing import Any

import numpy as np
import pytest

from aruntime._driver import LaunchConfig
from aruntime._exceptions import BackendUnavailableError, DriverError
from aruntime._native import native_library_path
from aruntime.backends.levelzero import _driver, _ffi
from aruntime.backends.levelzero._ffi import COMPILED_MODULE, compiled_calls

from ._subproc import run_python
from .conftest import replaced_call

ZeDriver = _driver.LevelZeroDriver
_UNKNOWN = 0x7FFFFFFE  # ZE_RESULT_ERROR_UNKNOWN


def _built() -> bool:
    try:
        native_library_path(f"{COMPILED_MODULE}{sysconfig.get_config_var('EXT_SUFFIX')}")
    except BackendUnavailableError:
        return False
    return True


def test_the_op_path_is_compiled_where_the_extension_was_built(
    ze: ZeDriver, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["ze"] == "loader-abi":
        assert ze._calls is None
        return
    if not _built():
        pytest.skip(f"{COMPILED_MODULE} was not built here (no cffi or Python headers)")
    assert ze._calls is not None


def test_every_op_of_a_stream_goes_through_the_compiled_calls(ze: ZeDriver) -> None:
    """A fill, a copy each way, a launch and the marker's record, query and wait: each
    compiled call is taken, and the bytes come back right."""
    if ze._calls is None:
        pytest.skip("the ABI path (the driver tests cover it)")
    used: list[str] = []
    real = ze._lib

    def counted(name: str) -> Any:
        function = getattr(real, name)

        def call(*args: Any) -> int:
            used.append(name)
            return int(function(*args))

        return call

    names = [field for field, _ in _ffi._compiled[0].ffi.typeof("ar_ze_table").fields]
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    dev = ze.mem_alloc(64)
    module = ze.module_load(ze.builtin_module_image("vector_ops"))
    iota = ze.module_function(module, "iota_u32")  # iota_u32(n, start, y): y[i] = start + i
    config = LaunchConfig(grid=(1, 1, 1), block=(16, 1, 1), shared_mem=0)
    try:
        host = np.arange(64, dtype=np.uint8)
        back = np.zeros(64, dtype=np.uint8)
        with contextlib.ExitStack() as stack:
            for name in names:
                stack.enter_context(replaced_call(ze, name, counted(name)))
            ze.memset_d8(dev, 7, 64, stream)
            ze.event_record(event, stream)
            while not ze.event_query(event):
                pass
            ze.event_record(event, stream)  # again, in place: host reset and barrier
            ze.memcpy_h2d(memoryview(host), dev, stream)
            ze.launch(iota, config, [np.uint32(4), np.uint32(0x01010101), dev + 8], stream)
            # Again with another start: the core's compiled launch sets that one argument.
            ze.launch(iota, config, [np.uint32(4), np.uint32(0x03030303), dev + 8], stream)
            ze.memcpy_d2h(dev, memoryview(back), stream)
            ze.event_record(event, stream)
            ze.event_wait(event)
        words = np.arange(4, dtype=np.uint32) + 0x03030303
        expect = host.copy()
        expect[8:24] = words.view(np.uint8)
        np.testing.assert_array_equal(back, expect)
        for name in names:
            assert name in used, f"{name} was not called through the compiled table"
    finally:
        ze.event_destroy(event)
        ze.mem_free(dev)
        ze.stream_destroy(stream)
        ze.module_unload(module)


@pytest.mark.parametrize("failing", ["zeCommandListAppendBarrier", "zeCommandListAppendMemoryFill"])
def test_a_failed_compiled_append_names_its_call_and_keeps_the_list_ordered(
    ze: ZeDriver, failing: str
) -> None:
    """An op's append makes the barrier before it in the same C call: a failure of
    either is named as that call, and the list still gets its barrier before the next
    op when the op itself was never appended after it."""
    if ze._calls is None:
        pytest.skip("the ABI path (the driver tests cover it)")
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    dev = ze.mem_alloc(64)
    back = np.zeros(64, dtype=np.uint8)
    try:
        ze.memset_d8(dev, 1, 64, stream)  # the list now holds an op since its last barrier
        with (
            replaced_call(ze, failing, lambda *args: _UNKNOWN),
            pytest.raises(DriverError, match=f"^{failing} failed: ZE_RESULT_ERROR_UNKNOWN"),
        ):
            ze.memset_d8(dev, 2, 64, stream)
        fills = stream.copy or stream.compute
        # A failed barrier leaves the list unordered; after a failed fill the barrier
        # before it stands, and nothing was appended since.
        assert fills.unordered is (failing == "zeCommandListAppendBarrier")
        ze.memset_d8(dev, 3, 32, stream)
        ze.memcpy_d2h(dev, memoryview(back), stream)
        ze.event_record(event, stream)
        ze.event_wait(event)
        assert back.tolist() == [3] * 32 + [1] * 32
    finally:
        ze.event_destroy(event)
        ze.mem_free(dev)
        ze.stream_destroy(stream)


def test_aruntime_levelzero_abi_switches_them_off(
    ze: ZeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARUNTIME_LEVELZERO_ABI", "1")
    assert compiled_calls(ze._lib) is None


def test_a_library_that_is_not_cffi_s_gets_the_abi_path() -> None:
    class StandIn:
        def __getattr__(self, name: str) -> Any:
            raise AttributeError(name)

    assert compiled_calls(StandIn()) is None


def test_a_driver_opened_in_abi_mode_leaves_the_next_one_compiled() -> None:
    """The switch is read per driver: one opened with it set does not keep the
    extension from the drivers opened after it is unset (a fresh process)."""
    if not _built():
        pytest.skip(f"{COMPILED_MODULE} was not built here (no cffi or Python headers)")
    code = (
        "import os\n"
        "from aruntime.backends import levelzero\n"
        "os.environ['ARUNTIME_LEVELZERO_ABI'] = '1'\n"
        "d = levelzero.open_driver(0, sim=True)\n"
        "print(d._calls is None)\n"
        "d.close()\n"
        "del os.environ['ARUNTIME_LEVELZERO_ABI']\n"
        "d = levelzero.open_driver(0, sim=True)\n"
        "print(d._calls is None)\n"
        "d.close()\n"
    )
    out = run_python(code, timeout=120)  # it sets and unsets the switch itself
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
