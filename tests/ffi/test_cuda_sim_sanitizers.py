"""The software CUDA driver under ThreadSanitizer and AddressSanitizer: a
multi-threaded stress (sim_stress.c) built with the driver's sources."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _cudasim_support import host_kernels_path

from ffi.sim.native import ENGINE_SOURCES, PTX_SOURCES

ROOT = Path(__file__).resolve().parents[2]
FFI = ROOT / "ffi"
SOURCES = [
    *(FFI / s for s in (*ENGINE_SOURCES, *PTX_SOURCES)),
    *sorted((FFI / "cuda" / "sim").glob("*.c")),
]


def _usable(flag: str, tmp_path: Path) -> bool:
    """Whether this compiler and kernel can build and run a sanitized program."""
    src = tmp_path / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    exe = tmp_path / f"probe{flag.replace(',', '_')}"
    if subprocess.run(["cc", f"-fsanitize={flag}", str(src), "-o", str(exe)]).returncode:
        return False
    return subprocess.run([str(exe)], capture_output=True).returncode == 0


def _build(sanitizer: str, tmp_path: Path) -> Path:
    """The stress program with every driver source, compiled one process per core."""
    flags = [
        "-std=gnu11", "-O1", "-g", f"-fsanitize={sanitizer}", "-fno-omit-frame-pointer",
        "-pthread", f"-I{FFI / 'cuda' / 'sim'}",
    ]  # fmt: skip
    sources = [*SOURCES, Path(__file__).with_name("sim_stress.c")]
    objects = [tmp_path / f"{i}_{src.stem}.o" for i, src in enumerate(sources)]

    def compile_one(src: Path, obj: Path) -> subprocess.CompletedProcess[str]:
        cmd = ["cc", *flags, "-c", str(src), "-o", str(obj)]
        return subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for done in pool.map(compile_one, sources, objects):
            assert done.returncode == 0, done.stderr
    exe = tmp_path / "stress"
    link = subprocess.run(
        ["cc", f"-fsanitize={sanitizer}", "-pthread", *map(str, objects), "-o", str(exe),
         "-ldl", "-lm"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert link.returncode == 0, link.stderr
    return exe


@pytest.mark.slow
@pytest.mark.timeout(900)  # a sanitized build of some 60 C files, on two cores
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("sanitizer", ["thread", "address,undefined"])
def test_stress_is_clean_under_sanitizer(sanitizer: str, tmp_path: Path) -> None:
    if not _usable(sanitizer, tmp_path):
        pytest.skip(f"-fsanitize={sanitizer} cannot build or run here")
    exe = _build(sanitizer, tmp_path)
    env = {"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    run = subprocess.run(
        [str(exe), str(host_kernels_path())], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-4000:]
    assert "WARNING: ThreadSanitizer" not in run.stderr
    assert "ERROR: AddressSanitizer" not in run.stderr
