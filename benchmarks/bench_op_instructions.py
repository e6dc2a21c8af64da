"""Instructions per op on the calling thread, under callgrind: aruntime beside cuda-bindings.

A time moves with the machine's load; an instruction count barely does, so
this is the figure to compare two versions of the op path by on a shared
machine.  Each op runs in a child process under ``valgrind --tool=callgrind
--toggle-collect=map_next``: the ops are run as ``deque(map(op, range(n)),
0)``, so only what runs inside ``map`` counts (the op and its lambda, on
the calling thread), never the import, the open or the waits between
blocks.  The first block's one-time costs (a signature laid out, a site
cached) are spread over all the blocks.  cuda-sim only: its ops and
cuda-bindings' calls reach the same software driver.

    PYTHONPATH=. python benchmarks/bench_op_instructions.py [--quick] [--blocks N]

Needs valgrind (Debian: ``apt-get install valgrind``); prints why and skips
without it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import SKIPPED, console, table

#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]
OPS = ("memset", "copy", "launch", "cuda-bindings memset", "cuda-bindings copy")
BLOCK = 1000

# The child: one op, run in blocks under map_next (the only frames callgrind counts).
_CHILD = r"""
import collections, sys
import numpy as np
import aruntime as ar
op_name, blocks, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
gpu = ar.open_backend("cuda-sim")
stream = gpu.create_stream()
dev = gpu.alloc(4096)
pinned = gpu.alloc_host_pinned(4096)
if op_name == "launch":
    import bench_peers
    kernel = gpu.kernel(gpu.load_module("bench", bench_peers._ptx()), bench_peers.KERNEL)
    args = [np.uint32(32), np.uint32(0), dev]
    op = lambda _: gpu.launch(kernel, 1, 32, args, stream=stream)
elif op_name == "memset":
    op = lambda _: gpu.memset_async(dev, 0, 64, stream=stream)
elif op_name == "copy":
    op = lambda _: gpu.copy_h2d_async(pinned, dev, stream=stream)
else:
    from cuda.bindings import driver as cb
    raw = cb.CUstream(gpu.driver.stream_handle_int(stream.handle))
    address, host = int(dev), pinned.ctypes.data
    if op_name == "cuda-bindings memset":
        op = lambda _: cb.cuMemsetD8Async(address, 0, 64, raw)
    else:
        op = lambda _: cb.cuMemcpyHtoDAsync(address, host, 4096, raw)
for _ in range(blocks):
    collections.deque(map(op, range(block)), 0)
    stream.synchronize().wait(60)
stream.close()
gpu.free(dev)
gpu.free_host_pinned(pinned)
gpu.close()
"""


def _instructions(op: str, blocks: int, block: int) -> float | str:
    """Instructions per op, or why there is no figure."""
    root = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "callgrind.out")
        child = Path(tmp, "child.py")
        child.write_text(_CHILD)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root.parent), str(root)])}
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=map_next",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(child),
                op,
                str(blocks),
                str(block),
                str(root),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
        if run.returncode != 0 or found is None:
            lines = [line for line in run.stderr.splitlines() if not line.startswith("==")]
            return "unavailable: " + (lines[-1] if lines else f"exit {run.returncode}")
        return int(found.group(1).replace(",", "")) / (blocks * block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one block of the memset only")
    parser.add_argument("--blocks", type=int, default=5, help="blocks of 1,000 ops per figure")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        console.print("skipped: valgrind is not installed (apt-get install valgrind)")
        return SKIPPED
    ops, blocks, block = (("memset",), 1, 200) if args.quick else (OPS, args.blocks, BLOCK)
    out = table("Instructions per op on the calling thread (callgrind), cuda-sim", ["op", "per op"])
    for op in ops:
        figure = _instructions(op, blocks, block)
        out.add_row(op, f"{figure:,.0f}" if isinstance(figure, float) else figure)
    console.print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
