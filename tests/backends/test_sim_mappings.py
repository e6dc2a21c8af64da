"""A sim's allocation refused with memory free names the host's vm.max_map_count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aruntime.backends._sim_mappings import mappings_hint


def _proc(tmp_path: Path, used: int, most: int) -> dict[str, Path]:
    maps = tmp_path / "maps"
    maps.write_text("".join(f"{i:x}-{i + 1:x} rw-p 0 0:0 0\n" for i in range(used)))
    limit = tmp_path / "max_map_count"
    limit.write_text(f"{most}\n")
    return {"maps": maps, "limit": limit}


@pytest.mark.parametrize("name", ["cuda-sim", "levelzero-sim"])
def test_a_sim_at_the_mapping_limit_says_so(tmp_path: Path, name: str) -> None:
    hint = mappings_hint(name, **_proc(tmp_path, 65_500, 65_530))
    assert "65500 memory mappings of the host's vm.max_map_count (65530)" in hint, hint
    assert "raise vm.max_map_count" in hint and "fewer, larger allocations" in hint, hint


def test_a_sim_far_from_the_limit_adds_nothing(tmp_path: Path) -> None:
    assert mappings_hint("cuda-sim", **_proc(tmp_path, 1_000, 65_530)) == ""


def test_a_real_driver_adds_nothing(tmp_path: Path) -> None:
    assert mappings_hint("cuda", **_proc(tmp_path, 65_530, 65_530)) == ""


def test_an_unreadable_proc_adds_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    assert mappings_hint("cuda-sim", maps=missing, limit=missing) == ""


def test_this_process_is_far_from_its_limit() -> None:
    assert mappings_hint("cuda-sim") == ""  # the real /proc files, read


_EXHAUST = """
import sys
import aruntime as ar
with ar.open_backend(sys.argv[1]) as gpu:
    ptrs = []
    try:
        while True:
            ptrs.append(gpu.alloc(256))
    except ar.OutOfMemoryError as exc:
        print(len(ptrs), exc)
    for ptr in ptrs:
        gpu.free(ptr)
"""


@pytest.mark.slow  # about 3 s a sim: 32,000 allocations, each two host mappings
@pytest.mark.parametrize("name", ["cuda-sim", "levelzero-sim"])
def test_the_sanitizer_s_allocations_run_out_naming_the_mapping_limit(name: str) -> None:
    most = int(Path("/proc/sys/vm/max_map_count").read_text())
    if most > 300_000:
        pytest.skip(f"vm.max_map_count is {most}: too many allocations to reach it here")
    env = {**os.environ, "ARUNTIME_SIM_SANITIZE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _EXHAUST, name],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    count, _, message = done.stdout.partition(" ")
    assert most // 2 - 2_000 < int(count) < most // 2, done.stdout
    assert f"of the host's vm.max_map_count ({most})" in message, message
