"""The core's compiled enqueue (enqueue.c), a plain CPython extension.

Built where Python's headers are; without it the core keeps to its Python
path (aruntime/_enqueue.py), which does the same.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from ffi.build import NativeLibrary

#: The module's name; aruntime/_enqueue.py loads it by this name.
MODULE = "_aruntime_enqueue"


def _extension() -> list[NativeLibrary]:
    include = Path(sysconfig.get_paths()["include"])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not (include / "Python.h").exists() or not suffix:
        return []
    return [
        NativeLibrary(
            filename=f"{MODULE}{suffix}",
            sources=(
                "core/enqueue.c",
                "core/direct.c",
                "core/front.c",
                "core/hostview.c",
                "core/lock.c",
                "core/mockcopy.c",
                "core/objects.c",
                "core/ranges.c",
                "core/settle.c",
                "core/site.c",
                "core/tailprobe.c",
                "core/zeappend.c",
            ),
            depends=(
                "core/direct.h",
                "core/front.h",
                "core/hostview.h",
                "core/lock.h",
                "core/mockcopy.h",
                "core/objects.h",
                "core/ranges.h",
                "core/settle.h",
                "core/site.h",
                "core/slots.h",
                "core/tailprobe.h",
                "core/zeappend.h",
            ),
            cflags=(f"-I{include}", "-fvisibility=hidden", "-Wno-missing-field-initializers"),
        )
    ]


LIBRARIES = _extension()
