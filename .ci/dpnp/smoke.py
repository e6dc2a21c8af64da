"""A pinned smoke of dpnp on levelzero-sim: the operations a dpnp user runs first.

Run it with the Python of a venv that has .ci/dpnp/requirements.txt, under
``eval "$(aruntime env levelzero-sim)"`` (run.py sets that up).  Each
operation runs on the sim through SYCL and is checked against numpy: memory
round trips, elementwise add and multiply, sum, cumsum, sort and max in
f2/f4/f8/i4/i8, and f32 matmul (oneMKL's sgemm), sin (oneMKL's vector math,
linked into the program), f64 exp, where and argmax.  Each check prints
``ok`` or ``FAIL`` with its reason; the last line counts them, and the exit
status is 1 when one failed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import dpnp
import numpy as np

SIM_NAME = "aruntime levelzero-sim"
DTYPES = ("f4", "f8", "i4", "i8", "f2")


def close(got: Any, want: Any, rtol: float = 1e-5, atol: float = 0.0) -> None:
    host = dpnp.asnumpy(got)
    if not np.allclose(host, want, rtol=rtol, atol=atol):
        raise AssertionError(f"got {np.ravel(host)[:4]}..., numpy {np.ravel(want)[:4]}...")


def check_device() -> None:
    name = dpnp.asarray([1]).sycl_device.name
    assert name.startswith(SIM_NAME), f"dpnp runs on {name!r}, not levelzero-sim"


def check_round_trip() -> None:
    x = np.arange(1, 1001, dtype=np.float32)
    assert np.array_equal(dpnp.asnumpy(dpnp.asarray(x)), x)


def elementwise_checks(dtype: str) -> dict[str, Callable[[], None]]:
    a = np.arange(1, 257).astype(dtype)
    d = dpnp.asarray(a)
    # Halves round each partial sum: the order of a tree and of numpy's loop differ.
    reduce_rtol = 1e-2 if dtype == "f2" else 1e-5
    return {
        f"add {dtype}": lambda: close(d + d, a + a),
        f"mul {dtype}": lambda: close(d * 3, a * 3),
        f"sum {dtype}": lambda: close(dpnp.sum(d), np.sum(a), reduce_rtol),
        f"cumsum {dtype}": lambda: close(dpnp.cumsum(d), np.cumsum(a), reduce_rtol),
        f"sort {dtype}": lambda: close(dpnp.sort(d[::-1]), np.sort(a[::-1])),
        f"max {dtype}": lambda: close(dpnp.max(d), np.max(a)),
    }


def check_matmul() -> None:
    """Against the float64 product, within float32's error bound for a sum of k
    products (k * eps * |A| |B|): a cancellation near zero is within it, where a
    relative tolerance alone against numpy's float32 product is not."""
    m = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    exact = m.astype(np.float64) @ m.astype(np.float64)
    bound = 64 * np.finfo(np.float32).eps * (np.abs(m) @ np.abs(m))
    got = dpnp.asnumpy(dpnp.asarray(m) @ dpnp.asarray(m)).astype(np.float64)
    worst = float(np.max(np.abs(got - exact) - bound))
    assert worst <= 0.0, f"an element is {worst:.3g} past float32's error bound"


def main() -> int:
    x = np.arange(1, 1001, dtype=np.float32)
    checks: dict[str, Callable[[], None]] = {
        "the device is levelzero-sim": check_device,
        "asarray / asnumpy f32": check_round_trip,
    }
    for dtype in DTYPES:
        checks.update(elementwise_checks(dtype))
    e = x[:50].astype(np.float64) / 10
    checks.update(
        {
            "matmul f32": check_matmul,
            "sin f32": lambda: close(dpnp.sin(dpnp.asarray(x)), np.sin(x)),
            "exp f64": lambda: close(dpnp.exp(dpnp.asarray(e)), np.exp(e)),
            "where": lambda: close(dpnp.where(dpnp.asarray(x) > 500, 1, 0), x > 500),
            "argmax": lambda: close(dpnp.argmax(dpnp.asarray(x)), np.argmax(x)),
        }
    )
    failed = 0
    for name, check in checks.items():
        try:
            check()
        except Exception as exc:
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {str(exc)[:300]}")
        else:
            print(f"ok   {name}")
    print(f"dpnp smoke on levelzero-sim: {len(checks) - failed} of {len(checks)} right")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
