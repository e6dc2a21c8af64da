"""Builds the native libraries (``ffi/*/native.py``) and ships the benchmarks.

Everything else lives in pyproject.toml.  The drivers are plain shared objects
loaded with cffi's ABI mode, so ``build_ext`` builds them with
``ffi.build.build`` as data files rather than as extension modules.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# The build code is the ``ffi`` package at the top of the source tree (the
# sdist carries it; the wheel does not).  setuptools does not promise that
# the source folder is on sys.path while this file runs.
sys.path.insert(0, str(ROOT))

from ffi.build import build as build_native  # noqa: E402


class BuildNative(build_ext):
    def run(self) -> None:
        if self.inplace or self.editable_mode:
            out = ROOT / "aruntime" / "_lib"
        else:
            out = Path(self.build_lib) / "aruntime" / "_lib"
        # Also copies ffi/<api>/decl/*.h (read at run time) into _lib/decl/.
        build_native(out, force=self.force)

    def get_outputs(self) -> list[str]:
        return []


class BuildPyWithBenchmarks(build_py):
    """Copies ``benchmarks/*.py`` into the package as ``aruntime/_benchmarks``.

    So ``aruntime bench`` runs from an installed copy; a source checkout (or an
    editable install) runs the checkout's ``benchmarks/`` directly.
    """

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "aruntime" / "_benchmarks"
        target.mkdir(parents=True, exist_ok=True)
        for script in sorted((ROOT / "benchmarks").glob("*.py")):
            shutil.copyfile(script, target / script.name)


class NativeDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True  # platform wheel: it carries shared objects


setup(
    cmdclass={"build_ext": BuildNative, "build_py": BuildPyWithBenchmarks},
    distclass=NativeDistribution,
)
