"""Builds the software drivers (ffi/*/native.py) during install.

Everything else lives in pyproject.toml.  The drivers are plain shared objects
loaded with cffi's ABI mode, so they are built by ``build_ext`` as data files
rather than Python extension modules.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _load_ffi_build():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("_aruntime_ffi_build", ROOT / "ffi" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class BuildNative(build_ext):
    def run(self) -> None:
        ffi_build = _load_ffi_build()
        if self.inplace or self.editable_mode:
            out = ROOT / "aruntime" / "_lib"
        else:
            out = Path(self.build_lib) / "aruntime" / "_lib"
        # Also copies ffi/<api>/decl/*.h (read at run time) into _lib/decl/.
        ffi_build.build(out, force=self.force)

    def get_outputs(self) -> list[str]:
        return []


class NativeDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True  # platform wheel: it carries shared objects


setup(cmdclass={"build_ext": BuildNative}, distclass=NativeDistribution)
