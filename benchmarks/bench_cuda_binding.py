"""Cost of one trivial CUDA driver call: aruntime's cffi binding vs NVIDIA's cuda-bindings.

Both sides call the same C function of the same library in the same process:
the software driver (cuda-sim) by default, which is loaded first so that
cuda-bindings' ``dlopen("libcuda.so.1")`` resolves to it by soname; pass
``--real`` to use NVIDIA's driver on a machine with a GPU.

    PYTHONPATH=. python benchmarks/bench_cuda_binding.py [--real] [--number N]

Rows (each the best of several timed runs, in nanoseconds per call):

* ``cuStreamQuery`` on an idle stream, raw: ``lib.cuStreamQuery(h)`` against
  ``cuda.bindings.driver.cuStreamQuery(s)`` (which also boxes its result);
* ``cuEventQuery`` through the backend's driver method, result checked and
  mapped (``CudaDriver.event_query``), against cuda-bindings' call plus the
  same check of its result;
* ``cuCtxGetDevice``, with its output argument: aruntime reuses one cffi cell
  (as its hot paths do), cuda-bindings allocates its result object per call;
  once the call alone, once with the device read back as a Python int.

Target: ratio (aruntime / cuda-bindings) at most 1.0x.
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from collections.abc import Callable

from _harness import SKIPPED, mark


def _best_ns(fn: Callable[[], object], number: int, repeat: int) -> float:
    timer = timeit.Timer(fn)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9


QUICK_ARGV = ["--number", "1000", "--repeat", "1"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="NVIDIA's driver, not cuda-sim")
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)

    from aruntime.backends import cuda
    from aruntime.backends.cuda._driver import CudaDriver

    # aruntime first: for the sim this puts libcuda.so.1 (the sim) in the process.
    drv = cuda.open_driver(0, sim=not args.real)
    assert isinstance(drv, CudaDriver)
    try:
        from cuda.bindings import driver as cb
    except ImportError:
        print("cuda-bindings is not installed (pip install cuda-bindings): nothing to compare")
        drv.close()
        return SKIPPED

    (err,) = cb.cuInit(0)
    if err != cb.CUresult.CUDA_SUCCESS:
        print(f"cuda-bindings: cuInit failed: {err}", file=sys.stderr)
        return 1
    drv.bind_to_thread()
    stream = drv.stream_create(0)
    event = drv.event_create(False)
    drv.event_record(event, stream)
    drv.event_wait(event)

    lib = drv._lib
    ffi = drv._ffi
    raw_stream = stream.handle  # type: ignore[attr-defined]
    cb_stream = cb.CUstream(int(ffi.cast("uintptr_t", raw_stream)))
    cb_event = cb.CUevent(int(ffi.cast("uintptr_t", event)))
    success = cb.CUresult.CUDA_SUCCESS
    not_ready = cb.CUresult.CUDA_ERROR_NOT_READY

    # The calls must agree before they are timed (the stream is idle).
    while lib.cuStreamQuery(raw_stream) != 0:
        time.sleep(0.001)
    assert cb.cuStreamQuery(cb_stream)[0] == success
    assert drv.event_query(event) is True

    # Each side is one plain function making the call, so that both pay the
    # same Python frame around it.
    def ar_stream_query() -> object:
        return lib.cuStreamQuery(raw_stream)

    def cb_stream_query() -> object:
        return cb.cuStreamQuery(cb_stream)

    def ar_event_query() -> bool:
        return drv.event_query(event)

    def cb_event_query() -> bool:
        (code,) = cb.cuEventQuery(cb_event)
        if code == success:
            return True
        if code == not_ready:
            return False
        raise RuntimeError(code)

    cell = ffi.new("CUdevice *")  # a hot path reuses its output cell

    def ar_ctx_get_device_call() -> object:
        return lib.cuCtxGetDevice(cell)

    def cb_ctx_get_device_call() -> object:
        return cb.cuCtxGetDevice()

    def ar_ctx_get_device() -> int:
        lib.cuCtxGetDevice(cell)
        return cell[0]  # type: ignore[no-any-return]  # cffi reads an int cell as int

    def cb_ctx_get_device() -> int:
        _, device = cb.cuCtxGetDevice()
        return int(device)

    assert ar_ctx_get_device() == cb_ctx_get_device()

    rows = [
        ("cuStreamQuery (raw call)", ar_stream_query, cb_stream_query),
        ("cuEventQuery (checked, -> bool)", ar_event_query, cb_event_query),
        ("cuCtxGetDevice (call only)", ar_ctx_get_device_call, cb_ctx_get_device_call),
        ("cuCtxGetDevice (-> int)", ar_ctx_get_device, cb_ctx_get_device),
    ]
    which = "NVIDIA driver" if args.real else "cuda-sim"
    mode = drv._library.mode
    print(f"one trivial driver call on {which} ({drv.device_info().name}), ns per call")
    print(f"aruntime binding mode: {mode} (api: compiled wrappers; abi: libffi)")
    print(f"{'call':34} {'aruntime':>10} {'cuda-bindings':>14} {'ratio':>8}")
    worst = 0.0
    for label, ours, theirs in rows:
        # Interleaved runs, best of each: a busy machine slows both alike.
        a = b = float("inf")
        for _ in range(args.repeat):
            a = min(a, _best_ns(ours, args.number, 1))
            b = min(b, _best_ns(theirs, args.number, 1))
        worst = max(worst, a / b)
        print(f"{label:34} {a:10.1f} {b:14.1f} {a / b:7.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= 1.0x {mark(worst <= 1.0)})")

    drv.event_destroy(event)
    drv.stream_destroy(stream)
    drv.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
