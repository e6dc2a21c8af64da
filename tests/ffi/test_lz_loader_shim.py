"""levelzero-sim's own ``libze_loader.so.1`` (ffi/levelzero/sim/lz_loader.c).

What it exports, checked in this process (nothing here initialises the
sim); the scenarios of ``lz_sim_scenarios.py`` run through it in a child
process (``test_levelzero_sim.py``, mode ``shim``), its loader entry points
and zeInitDrivers among them.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aruntime._native import native_library_path, sim_environment

ROOT = Path(__file__).resolve().parents[2]
UNSUPPORTED_DEF = ROOT / "ffi" / "levelzero" / "sim" / "lz_loader_unsupported.def"
UNSUPPORTED_FEATURE = 0x78000003
INVALID_ARGUMENT = 0x78000004
INVALID_NULL_POINTER = 0x78000007
UNINITIALIZED = 0x78000001
INIT_DRIVER_TYPE_DESC = 0x00020021  # ze_api.h 1.10


class _InitDriverTypeDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32)]


@pytest.fixture(scope="module")
def shim_path() -> Path:
    return native_library_path("ze_loader/libze_loader.so.1")


@pytest.fixture(scope="module")
def shim(shim_path: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(shim_path))


def _unsupported_names() -> list[str]:
    return re.findall(r"^LZ_UNSUPPORTED\((\w+)\)$", UNSUPPORTED_DEF.read_text(), re.M)


def _exports(path: Path) -> set[str]:
    if shutil.which("nm") is None:
        pytest.skip("nm is not available")
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True
    )
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def test_it_is_its_own_folder_and_finds_the_driver_beside_it(shim_path: Path) -> None:
    # Its own folder: LD_LIBRARY_PATH=<it> brings in this library alone.
    assert sorted(p.name for p in shim_path.parent.iterdir() if not p.name.startswith(".")) == [
        "libze_loader.so.1"
    ]
    out = subprocess.run(["ldd", str(shim_path)], capture_output=True, text=True, check=True).stdout
    driver = native_library_path("libze_aruntime_sim.so")
    line = next(x for x in out.splitlines() if "libze_aruntime_sim.so" in x)
    assert os.path.realpath(line.split("=>")[1].split()[0]) == os.path.realpath(driver), line


def test_the_driver_entry_points_are_the_drivers_own(shim: ctypes.CDLL) -> None:
    # Resolved through the shim, zeDeviceGet is the driver's function: one sim
    # per process, whoever opened it.
    driver = ctypes.CDLL(str(native_library_path("libze_aruntime_sim.so")))
    for name in ("zeInit", "zeInitDrivers", "zeDeviceGet", "zeGetDeviceProcAddrTable"):
        via_shim = ctypes.cast(getattr(shim, name), ctypes.c_void_p).value
        assert via_shim == ctypes.cast(getattr(driver, name), ctypes.c_void_p).value, name


def test_the_unsupported_list_shadows_nothing_the_driver_implements(shim_path: Path) -> None:
    names = _unsupported_names()
    assert len(names) > 300 and len(names) == len(set(names))
    driver = _exports(native_library_path("libze_aruntime_sim.so"))
    shadowed = sorted(set(names) & driver)
    assert not shadowed, f"remove from {UNSUPPORTED_DEF.name}: {shadowed}"
    missing = sorted(set(names) - _exports(shim_path))
    assert not missing, missing


@pytest.mark.parametrize("name", ["zeImageCreate", "zesInit", "zeCommandListHostSynchronize"])
def test_an_entry_point_the_sim_lacks_answers_unsupported(shim: ctypes.CDLL, name: str) -> None:
    fn = getattr(shim, name)
    fn.restype = ctypes.c_uint32
    assert fn(None, None, None, None) == UNSUPPORTED_FEATURE


def test_handle_translation_is_the_identity_and_checks_its_arguments(shim: ctypes.CDLL) -> None:
    fn = shim.zelLoaderTranslateHandle
    fn.restype = ctypes.c_uint32
    fn.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
    out = ctypes.c_void_p()
    assert fn(11, 0x1234, ctypes.byref(out)) == 0 and out.value == 0x1234
    assert fn(14, 0x1234, ctypes.byref(out)) == INVALID_ARGUMENT
    assert fn(-1, 0x1234, ctypes.byref(out)) == INVALID_ARGUMENT
    assert fn(0, 0x1234, None) == INVALID_NULL_POINTER


def test_zeinitdrivers_refuses_bad_descriptors_before_starting(shim: ctypes.CDLL) -> None:
    fn = shim.zeInitDrivers
    fn.restype = ctypes.c_uint32
    count = ctypes.c_uint32(7)
    desc = _InitDriverTypeDesc(INIT_DRIVER_TYPE_DESC, None, 2)  # NPU only
    assert fn(ctypes.byref(count), None, ctypes.byref(desc)) == UNINITIALIZED
    assert count.value == 0
    desc.stype = 0xD
    assert fn(ctypes.byref(count), None, ctypes.byref(desc)) == INVALID_ARGUMENT
    assert fn(ctypes.byref(count), None, None) == INVALID_NULL_POINTER
    assert fn(None, None, ctypes.byref(desc)) == INVALID_NULL_POINTER


def test_sim_environment_names_the_folders() -> None:
    env = sim_environment("levelzero-sim")
    folder = env["LD_LIBRARY_PATH"].split(os.pathsep)[0]
    assert Path(folder, "libze_loader.so.1").exists()
    assert env["ONEAPI_DEVICE_SELECTOR"] == "level_zero:*"
    assert (
        Path(sim_environment("cuda-sim")["LD_LIBRARY_PATH"].split(os.pathsep)[0])
        .joinpath("libcuda.so.1")
        .exists()
    )
    with pytest.raises(ValueError, match=r"sim_environment: backend 'mock' is not one of"):
        sim_environment("mock")


def test_a_program_under_aruntime_env_loads_the_shim_by_name(shim_path: Path) -> None:
    # As a dpctl user runs it: eval "$(aruntime env levelzero-sim)", then a
    # program that dlopens libze_loader.so.1 by name gets the sim's.
    program = (
        "import ctypes\n"
        "lib = ctypes.CDLL('libze_loader.so.1')\n"
        "assert hasattr(lib, 'zelLoaderGetVersionsInternal')\n"
        "print([l.split()[-1] for l in open('/proc/self/maps') if 'libze_loader' in l][0])\n"
    )
    script = (
        f'eval "$({sys.executable} -m aruntime env levelzero-sim)" && '
        f'test "$ONEAPI_DEVICE_SELECTOR" = "level_zero:*" && '
        f'{sys.executable} -c "$PROGRAM"'
    )
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PROGRAM"] = program
    proc = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert os.path.realpath(proc.stdout.split()[-1]) == os.path.realpath(shim_path)
