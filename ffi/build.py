"""Build the project's native libraries (the software drivers and host kernels).

Each folder under ``ffi/`` that ships C code has a ``native.py`` defining
``LIBRARIES``: a list of :class:`NativeLibrary`.  :func:`build` compiles them
all with the system C compiler into one output folder.  It is the one entry
point: the install command (``setup.py``'s ``build_ext``) points it at
``aruntime/_lib`` in the build tree, a source checkout's first import of
aruntime (``aruntime/_native.py``) at ``aruntime/_lib`` in the checkout, and
the tests at their own folders.  A C compiler is the only requirement.

    python -m ffi.build [--out DIR] [--force]     (from the checkout's root)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FFI_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class NativeLibrary:
    """One shared object: its output file name, sources and flags."""

    filename: str  # e.g. "libcuda.so.1" (the name written into the output folder)
    sources: tuple[str, ...]  # relative to ffi/
    soname: str | None = None
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    depends: tuple[str, ...] = field(default=())  # headers, relative to ffi/
    # Libraries of this build it links to, by file name in the output folder
    # (built before it: a spec lists them first).
    links: tuple[str, ...] = ()

    def inputs(self) -> list[Path]:
        return [FFI_DIR / p for p in (*self.sources, *self.depends)]


def emit_api_source(module: str, cdef: str, source: str, out_c: Path) -> bool:
    """Write the C source of cffi API-mode extension ``module`` to ``out_c``; False without cffi.

    The file is rewritten only when its text changed, so an unchanged
    binding is not rebuilt.
    """
    try:
        from cffi import FFI
    except ImportError:
        return False
    ffi = FFI()
    ffi.cdef(cdef)
    ffi.set_source(module, source)
    tmp = out_c.with_name(out_c.name + ".new")
    out_c.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
        ffi.emit_c_code(str(tmp))
    if out_c.exists() and out_c.read_bytes() == tmp.read_bytes():
        tmp.unlink()
    else:
        tmp.replace(out_c)
    return True


def api_extension(
    module: str,
    generated: Path,
    emit: Callable[[Path], bool],
    depends: tuple[str, ...],
    ldflags: tuple[str, ...] = (),
) -> list[NativeLibrary]:
    """The CPython extension ``module`` built from the C that ``emit`` writes, where possible.

    It needs cffi (to write its source) and Python's headers; where either
    is missing, the list is empty and the backend keeps to ABI mode.
    """
    include = Path(sysconfig.get_paths()["include"])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not (include / "Python.h").exists() or not suffix or not emit(generated):
        return []
    return [
        NativeLibrary(
            filename=f"{module}{suffix}",
            sources=(str(generated),),
            depends=depends,
            cflags=(f"-I{include}", "-Wno-unused-function", "-Wno-missing-field-initializers"),
            ldflags=ldflags,
        )
    ]


def discover() -> list[NativeLibrary]:
    """Every :class:`NativeLibrary` of the ``ffi/*/native.py`` specs."""
    # The name specs imported before ffi was a package; one module either way.
    sys.modules.setdefault("_aruntime_ffi_build", sys.modules[__name__])
    libs: list[NativeLibrary] = []
    for spec_path in sorted(FFI_DIR.glob("*/native.py")):
        # The folders are namespace packages of ``ffi``; each spec does
        # ``from ffi.build import NativeLibrary``.
        module = importlib.import_module(f"{__package__ or 'ffi'}.{spec_path.parent.name}.native")
        # A changed spec (flags, sources) or builder must rebuild its libraries too.
        spec_inputs = (str(spec_path.relative_to(FFI_DIR)), "build.py")
        libs.extend(
            dataclasses.replace(lib, depends=(*lib.depends, *spec_inputs))
            for lib in module.LIBRARIES
        )
    return libs


def _stale(lib: NativeLibrary, target: Path, out_dir: Path) -> bool:
    if not target.exists():
        return True
    built = target.stat().st_mtime
    inputs = [*lib.inputs(), *(out_dir / name for name in lib.links)]
    return any(p.stat().st_mtime > built for p in inputs if p.exists())


def build(
    out_dir: Path | str,
    *,
    force: bool = False,
    verbose: bool = False,
    only: tuple[str, ...] | None = None,
) -> list[Path]:
    """Compile every stale library (all of them with ``force``) into ``out_dir``.

    ``only``: just the libraries of these file names (the core's own
    extension, without building the drivers).

    Also copies the cffi declarations (``ffi/<api>/decl/*.h``) to
    ``out_dir/decl/<api>/``.  Returns the paths of all libraries; raises
    RuntimeError naming the command and the compiler's output on failure.
    """
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise RuntimeError(f"no C compiler: {cc!r} is not on PATH (set CC)")
    # Absolute: the compiler runs in ffi/, and setuptools passes a relative
    # build folder (build/lib...).
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    built: list[Path] = []
    for lib in discover():
        if only is not None and lib.filename not in only:
            continue
        target = out_dir / lib.filename
        if force or _stale(lib, target, out_dir):
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            cmd = [
                cc,
                "-shared",
                "-fPIC",
                "-O2",
                "-g",
                "-std=gnu11",
                "-Wall",
                "-Wextra",
                "-Wno-unused-parameter",
                "-pthread",
                *lib.cflags,
                *(str(FFI_DIR / s) for s in lib.sources),
                *(str(out_dir / name) for name in lib.links),
                "-o",
                str(tmp),
            ]
            if lib.soname:
                cmd.append(f"-Wl,-soname,{lib.soname}")
            cmd.extend(lib.ldflags)
            if verbose:
                print(shlex.join(cmd), file=sys.stderr)
            result = subprocess.run(cmd, capture_output=True, text=True, cwd=FFI_DIR)
            if result.returncode != 0:
                raise RuntimeError(
                    f"building {lib.filename} failed:\n{shlex.join(cmd)}\n{result.stderr}"
                )
            os.replace(tmp, target)  # atomic: a concurrent loader never sees half a file
        built.append(target)
    _copy_declarations(out_dir)
    return built


def _copy_declarations(out_dir: Path) -> None:
    """Ship each ``ffi/<api>/decl/*.h`` (cffi declarations) as ``<out>/decl/<api>/``.

    An installed aruntime has no ``ffi/`` folder; its bindings read these copies.
    """
    for decl_dir in sorted(FFI_DIR.glob("*/decl")):
        target_dir = out_dir / "decl" / decl_dir.parent.name
        target_dir.mkdir(parents=True, exist_ok=True)
        for header in sorted(decl_dir.glob("*.h")):
            target = target_dir / header.name
            if not target.exists() or target.read_bytes() != header.read_bytes():
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                shutil.copyfile(header, tmp)
                os.replace(tmp, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FFI_DIR.parent / "aruntime" / "_lib")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    for path in build(args.out, force=args.force, verbose=args.verbose):
        print(path)
    return 0


if __name__ == "__main__":
    # Run the copy importable as ``ffi.build``, which the specs import, so that
    # one NativeLibrary class serves them all (``python ffi/build.py`` works too).
    if not __package__:
        sys.path.insert(0, str(FFI_DIR.parent))
    from ffi.build import main as _main

    raise SystemExit(_main())
