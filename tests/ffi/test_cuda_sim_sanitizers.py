"""The software CUDA driver under ThreadSanitizer and AddressSanitizer: a
multi-threaded stress (sim_stress.c) built with the driver's sources."""

from __future__ import annotations

import shutil
import subprocess
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


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("sanitizer", ["thread", "address,undefined"])
def test_stress_is_clean_under_sanitizer(sanitizer: str, tmp_path: Path) -> None:
    if not _usable(sanitizer, tmp_path):
        pytest.skip(f"-fsanitize={sanitizer} cannot build or run here")
    exe = tmp_path / "stress"
    build = subprocess.run(
        [
            "cc", "-std=gnu11", "-O1", "-g", f"-fsanitize={sanitizer}",
            "-fno-omit-frame-pointer", "-pthread", f"-I{FFI / 'cuda' / 'sim'}",
            *map(str, SOURCES), str(Path(__file__).with_name("sim_stress.c")),
            "-o", str(exe), "-ldl", "-lm",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    env = {"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=1"}
    run = subprocess.run(
        [str(exe), str(host_kernels_path())], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-4000:]
    assert "WARNING: ThreadSanitizer" not in run.stderr
    assert "ERROR: AddressSanitizer" not in run.stderr
