"""Packaging: the build code is the package ``ffi``; the sdist and the wheel hold what they should.

The slow test builds the sdist from a copy of this tree (built files and all),
the wheel from that sdist, and runs the unpacked wheel from outside the tree,
as ``.ci/run`` does with real installs into fresh virtual environments.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import ffi.build
from aruntime import _native

ROOT = Path(__file__).resolve().parent.parent
#: The compiled extensions every wheel built here carries (cffi API mode; the core's enqueue).
_COMPILED = ("_aruntime_cuda_api", "_aruntime_ze_api", "_aruntime_enqueue")


def test_every_spec_uses_the_one_builder() -> None:
    libs = ffi.build.discover()
    assert {lib.filename for lib in libs} >= {
        "libcuda.so.1",
        "libze_aruntime_sim.so",
        "libarkernels_host.so",
    }
    # One NativeLibrary class: no spec loaded a second copy of the builder.
    assert all(type(lib) is ffi.build.NativeLibrary for lib in libs)
    for spec in sorted((ROOT / "ffi").glob("*/native.py")):
        module = sys.modules[f"ffi.{spec.parent.name}.native"]
        assert module.NativeLibrary is ffi.build.NativeLibrary


def test_checkout_rebuild_imports_ffi_build() -> None:
    assert _native._load_builder() is sys.modules["ffi.build"]


def test_no_module_loads_the_builder_by_file_path() -> None:
    sources = [ROOT / "setup.py", *(ROOT / "aruntime").rglob("*.py"), *(ROOT / "ffi").rglob("*.py")]
    loads = re.compile(r"spec_from_file_location\([^)]*(build\.py|native\.py)", re.DOTALL)
    offenders = [str(p.relative_to(ROOT)) for p in sources if loads.search(p.read_text())]
    assert offenders == [], "import ffi.build (and the specs as ffi.<name>.native) instead"


def test_build_into_a_relative_folder_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # setuptools passes build_lib relative to the tree while the compiler runs
    # in ffi/: the output must not be resolved against ffi/.
    small = ffi.build.NativeLibrary(
        filename="libsmall.so",
        sources=("kernels/vector_ops.c",),
        cflags=("-Ikernels",),
        ldflags=("-lm",),
    )
    monkeypatch.setattr(ffi.build, "discover", lambda: [small])
    monkeypatch.chdir(tmp_path)
    built = ffi.build.build(Path("build/lib/aruntime/_lib"))
    target = tmp_path / "build/lib/aruntime/_lib/libsmall.so"
    assert built == [target]
    assert target.stat().st_size > 0
    assert (target.parent / "decl/cuda/00_types.h").is_file()
    assert (target.parent / "decl/levelzero/types.h").is_file()
    first = target.stat().st_mtime_ns
    ffi.build.build("build/lib/aruntime/_lib")  # up to date: not rebuilt
    assert target.stat().st_mtime_ns == first
    os.utime(target, ns=(first - 10**9, first - 10**9))
    ffi.build.build("build/lib/aruntime/_lib", force=True)
    assert target.stat().st_mtime_ns > first - 10**9


def _copy_of_this_tree(dest: Path) -> Path:
    """This tree with its built files, plus decoys that the sdist must leave out."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".*_cache"
    )
    shutil.copytree(ROOT, dest, ignore=skip)
    for decoy in (
        "aruntime/_lib/libdecoy.so",
        "aruntime/_benchmarks/bench_decoy.py",
        "ffi/cuda/api/_generated/decoy.c",
        "ffi/sim/decoy.o",
        "build/lib/decoy.py",
    ):
        (dest / decoy).parent.mkdir(parents=True, exist_ok=True)
        (dest / decoy).write_text("built, not a source\n")
    return dest


def _build(kind: str, source: Path, out: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check"]
    result = subprocess.run(
        [*cmd, f"--{kind}", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (artifact,) = out.glob("*.tar.gz" if kind == "sdist" else "*.whl")
    return artifact


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sdist_and_wheel_from_a_clean_tree(tmp_path: Path) -> None:
    tree = _copy_of_this_tree(tmp_path / "tree")
    sdist = _build("sdist", tree, tmp_path / "dist")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        tar.extractall(tmp_path / "unpacked", filter="data")
    for needed in (
        "setup.py",
        "pyproject.toml",
        "ffi/__init__.py",
        "ffi/build.py",
        "ffi/sim/engine_queues.c",
        "ffi/sim/engine_internal.h",
        "ffi/cuda/decl/00_types.h",
        "aruntime/py.typed",
        "aruntime/kernels/vector_ops.ptx",
        "aruntime/kernels/vector_ops.spv",
        "benchmarks/_harness.py",
    ):
        assert needed in names, needed
    built = [n for n in names if n.endswith((".so", ".o")) or "decoy" in n or "_lib/" in n]
    assert built == []

    # The wheel from the sdist, as pip does.
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    wheel = _build("wheel", unpacked, tmp_path / "wheel")
    assert not wheel.name.endswith("-any.whl"), wheel.name  # it carries shared objects
    with zipfile.ZipFile(wheel) as zf:
        files = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for needed in (
        "aruntime/py.typed",
        "aruntime/_lib/libcuda.so.1",
        "aruntime/_lib/libze_aruntime_sim.so",
        "aruntime/_lib/ze_loader/libze_loader.so.1",
        "aruntime/_lib/libarkernels_host.so",
        "aruntime/_lib/decl/cuda/00_types.h",
        "aruntime/_benchmarks/_harness.py",
        "aruntime/_benchmarks/bench_await.py",
        *(f"aruntime/kernels/{p.name}" for p in (ROOT / "aruntime/kernels").glob("*.[ps][tp][xv]")),
        # The compiled calls (ffi/*/api), built by this same Python.
        *(f"aruntime/_lib/{m}{sysconfig.get_config_var('EXT_SUFFIX')}" for m in _COMPILED),
    ):
        assert needed in files, needed
    assert not [f for f in files if f.startswith(("ffi/", "tests/", "benchmarks/"))]

    # The unpacked wheel, run from outside any tree: only it can be imported.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARUNTIME_")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    program = (
        "import aruntime, numpy as np\n"
        "print(aruntime.__file__)\n"
        "for name in ('cuda-sim', 'levelzero-sim'):\n"
        "    with aruntime.open_backend(name) as gpu, gpu.create_stream() as s:\n"
        "        assert type(s.enqueue).__name__ == 'Enqueuer', s.enqueue\n"
        "        a = np.arange(256, dtype=np.float32)\n"
        "        d = gpu.alloc(a.nbytes)\n"
        "        gpu.copy_h2d(a, d)\n"
        "        assert (gpu.copy_d2h(d, np.empty_like(a)) == a).all()\n"
        "        gpu.free(d)\n"
        "        print(name, 'ok')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", program], cwd=outside, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(str(tmp_path / "site")), lines
    assert lines[1:] == ["cuda-sim ok", "levelzero-sim ok"]
    bench = subprocess.run(
        [sys.executable, "-m", "aruntime", "bench", "--list"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bench.returncode == 0, bench.stderr
    names = set(bench.stdout.split())
    assert {"await", "copy", "backends", "compute"} <= names
    # Every benchmark, from the installed copy (issue 22: bench compute failed there).
    quick = subprocess.run(
        [sys.executable, "-m", "aruntime", "bench", "--quick"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert quick.returncode == 0, quick.stdout[-3000:] + quick.stderr[-3000:]
    assert "failed" not in quick.stdout and "no quick mode" not in quick.stdout
    for name in names:
        assert f"bench_{name}" in quick.stdout, name
