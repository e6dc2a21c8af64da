"""levelzero-sim really runs through Debian's loader, and under its validation layer.

Each loader configuration runs in its own interpreter: the loader chooses its
drivers and layers at the first zeInit of a process.
"""

from __future__ import annotations

import sys

import pytest

from ._subproc import NO_LOADER_REASON, ROOT, clean_env, loader_installed, run_python

needs_loader = pytest.mark.skipif(not loader_installed(), reason=NO_LOADER_REASON)

_REPORT = """
import json
from aruntime.backends import levelzero
from aruntime.backends.levelzero import _driver
drv = levelzero.open_driver(0, sim=True)
maps = [line.split()[-1] for line in open("/proc/self/maps") if "/" in line]
print(json.dumps({
    "library": drv._zl.describe(),
    "is_loader": drv._zl.is_loader,
    "components": _driver.loader_components(drv._zl),
    "maps": sorted(set(maps)),
}))
drv.close()
"""


def _report(**env: str) -> dict[str, object]:
    import json

    result = run_python(_REPORT, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _mapped(report: dict[str, object], name: str) -> list[str]:
    return [m for m in report["maps"] if name in m.rsplit("/", 1)[-1]]  # type: ignore[attr-defined]


@needs_loader
def test_sim_runs_under_the_system_loader() -> None:
    report = _report()
    assert report["is_loader"] is True
    assert "ZE_ENABLE_ALT_DRIVERS=" in str(report["library"])
    loaders = _mapped(report, "libze_loader.so")
    assert loaders and all(m.startswith("/usr/lib") for m in loaders), loaders
    assert _mapped(report, "libze_aruntime_sim.so")
    assert "loader" in report["components"]  # type: ignore[operator]
    assert not _mapped(report, "libze_validation_layer.so")


@needs_loader
def test_validation_layer_is_loaded_when_asked_for() -> None:
    report = _report(ZE_ENABLE_VALIDATION_LAYER="1", ZE_ENABLE_PARAMETER_VALIDATION="1")
    assert _mapped(report, "libze_validation_layer.so")
    assert "validation layer" in report["components"]  # type: ignore[operator]


def test_direct_load_when_no_loader_is_installed() -> None:
    result = run_python(
        """
        from aruntime.backends.levelzero import _library
        _library.LOADER_NAME = "libze_loader_absent.so.1"
        from aruntime.backends import levelzero
        drv = levelzero.open_driver(0, sim=True)
        print(drv._zl.is_loader, drv._zl.path)
        drv.close()
        """
    )
    assert result.returncode == 0, result.stderr
    is_loader, path = result.stdout.split()
    assert is_loader == "False" and path.endswith("libze_aruntime_sim.so")


def test_direct_load_through_the_override_variable() -> None:
    result = run_python(
        """
        from aruntime._native import native_library_path
        import os
        os.environ["ARUNTIME_LEVELZERO_LIBRARY"] = str(native_library_path("libze_aruntime_sim.so"))
        from aruntime.backends import levelzero
        drv = levelzero.open_driver(0, sim=False)
        print(drv.backend_name, drv._zl.is_loader)
        drv.close()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["levelzero", "False"]


@needs_loader
def test_driver_tests_pass_under_the_validation_layer() -> None:
    """The driver tests in a process whose loader validates every call; none may skip.

    (The plain loader configuration is the one this test process uses.)
    """
    import subprocess

    env = clean_env(ZE_ENABLE_VALIDATION_LAYER="1", ZE_ENABLE_PARAMETER_VALIDATION="1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            "tests/backends/levelzero/test_driver.py",
            "tests/backends/levelzero/test_event_rerecord.py",
            "-k",
            "loader",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    tail = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    assert " passed" in result.stdout and "skipped" not in result.stdout, tail


def test_several_devices() -> None:
    result = run_python(
        """
        import numpy as np, aruntime as ar
        from aruntime.backends import levelzero
        from aruntime._exceptions import InvalidArgumentError
        print(len(levelzero.list_devices(sim=True)))
        with ar.open_backend("levelzero-sim", device=1) as gpu:
            d = gpu.alloc(64)
            h = np.arange(64, dtype=np.uint8)
            out = np.empty_like(h)
            gpu.copy_h2d(h, d)
            gpu.copy_d2h(d, out)
            print(bool((out == h).all()), gpu.device.name)
            gpu.free(d)
        try:
            ar.open_backend("levelzero-sim", device=2)
        except InvalidArgumentError as exc:
            print("refused:", exc)
        """,
        ARUNTIME_SIM_DEVICES="2",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "2"
    assert lines[1].startswith("True")
    assert "device 2 does not exist (2 device(s): 0..1)" in lines[2]


@needs_loader
def test_alt_drivers_is_restored_after_the_sim_opens() -> None:
    result = run_python(
        """
        import os
        from aruntime.backends import levelzero
        drv = levelzero.open_driver(0, sim=True)
        print(os.environ.get("ZE_ENABLE_ALT_DRIVERS"))
        drv.close()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"


@needs_loader
def test_a_users_alt_drivers_is_honoured_by_the_real_backend() -> None:
    result = run_python(
        """
        import os
        from aruntime._native import native_library_path
        os.environ["ZE_ENABLE_ALT_DRIVERS"] = str(native_library_path("libze_aruntime_sim.so"))
        from aruntime.backends import levelzero
        drv = levelzero.open_driver(0, sim=False)
        kept = "ZE_ENABLE_ALT_DRIVERS" in os.environ
        print(drv.backend_name, drv._zl.is_loader, kept)
        drv.close()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["levelzero", "True", "True"]
