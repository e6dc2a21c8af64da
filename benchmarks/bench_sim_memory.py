"""Cost of the software drivers' memory sanitizer (ARUNTIME_SIM_SANITIZE=1).

For cuda-sim and levelzero-sim, with the host kernel builds (the case the
guard pages serve; the PTX and SPIR-V interpreters check each access either
way), each mode runs in its own process (the knob is read at load):

- kernel: saxpy over 4M floats, median of 15 launches + synchronize;
- alloc+free: 2000 x (alloc 4 KiB, free), and 200 x (alloc 4 MiB, free).

Prints milliseconds per mode and the sanitized/plain ratio.

    PYTHONPATH=. python benchmarks/bench_sim_memory.py [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, statistics, sys, time
    import anyio
    import numpy as np
    import aruntime as ar

    backend, reps = sys.argv[1], int(sys.argv[2])

    async def main() -> None:
        async with ar.open_backend(backend) as gpu:
            n = 1 << 22
            x, y = gpu.alloc(4 * n), gpu.alloc(4 * n)
            s = gpu.create_stream()
            saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
            args = [np.uint32(n), np.float32(2), x, y]
            gpu.launch(saxpy, n // 256, 256, args, stream=s)
            await s.synchronize()
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                gpu.launch(saxpy, n // 256, 256, args, stream=s)
                await s.synchronize()
                times.append(time.perf_counter() - t)
            kernel = statistics.median(times) * 1e3
            out = {"kernel": kernel}
            cases = (("alloc_4k", 4096, 20 * reps), ("alloc_4m", 4 << 20, 2 * reps))
            for label, size, count in cases:
                t = time.perf_counter()
                for _ in range(count):
                    gpu.free(gpu.alloc(size))
                out[label] = (time.perf_counter() - t) * 1e3
            s.close(); gpu.free(x); gpu.free(y)
            print(json.dumps(out))

    anyio.run(main)
    """
)


def run(backend: str, sanitize: bool, reps: int) -> dict[str, float]:
    env = dict(os.environ, ARUNTIME_SIM_KERNELS="host")
    env.pop("ARUNTIME_SIM_SANITIZE", None)
    if sanitize:
        env["ARUNTIME_SIM_SANITIZE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, backend, str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


QUICK_ARGV = ["--quick"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    reps = 2 if "--quick" in args else 15
    print(f"{'backend':15} {'measure':28} {'plain ms':>10} {'sanitize ms':>12} {'ratio':>7}")
    for backend in ("cuda-sim", "levelzero-sim"):
        plain, checked = run(backend, False, reps), run(backend, True, reps)
        labels = {
            "kernel": "saxpy 4M floats (median)",
            "alloc_4k": f"{20 * reps} x alloc+free 4 KiB",
            "alloc_4m": f"{2 * reps} x alloc+free 4 MiB",
        }
        for key, label in labels.items():
            ratio = checked[key] / plain[key] if plain[key] else float("nan")
            print(f"{backend:15} {label:28} {plain[key]:10.2f} {checked[key]:12.2f} {ratio:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
