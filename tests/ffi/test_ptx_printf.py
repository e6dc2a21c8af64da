"""printf in a kernel on cuda-sim: vprintf, the context's FIFO and its flush points.

``ptx/printf.cu`` (compiled by nvcc into the committed ``ptx/printf.ptx``)
prints every conversion CUDA's printf documents; each line is compared with
the host C library's formatting of the same values.  Hand-written PTX covers
what nvcc would not write: refused conversions, more than 32 arguments, a
NULL format.  The records are held in the context's FIFO and written to
stdout only at the synchronisation points the CUDA programming guide lists.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda, ffi
from test_ptx_exec import NVCC, load_ex

HERE = Path(__file__).resolve().parent / "ptx"
PRINTF = HERE / "printf.ptx"
CU_LIMIT_PRINTF_FIFO_SIZE = 1
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_LAUNCH_FAILED = 719
P = "unsigned long long"

LIBC = ctypes.CDLL(None)


def host_format(fmt: bytes, *args: Any) -> str:
    """What the host's C library makes of fmt and args."""
    buf = ctypes.create_string_buffer(4096)
    n = LIBC.snprintf(buf, len(buf), fmt, *args)
    assert 0 <= n < len(buf)
    return buf.value.decode()


class Printing:
    """A PTX module of kernels that print, launched on the legacy stream."""

    def __init__(self, cu: Cuda, text: bytes) -> None:
        self.cu = cu
        rc, self.mod, log = load_ex(cu, text)
        assert rc == CUDA_SUCCESS, log

    def launch(
        self,
        name: str,
        args: list[tuple[str, Any]],
        grid: int = 1,
        block: int = 1,
        stream: Any = None,
    ) -> int:
        fn = ffi.new("CUfunction *")
        self.cu.check(self.cu.lib.cuModuleGetFunction(fn, self.mod, name.encode()))
        keep = [ffi.new(f"{ctype} *", value) for ctype, value in args]
        argv = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
        s = stream if stream is not None else ffi.NULL
        return int(self.cu.lib.cuLaunchKernel(fn[0], grid, 1, 1, block, 1, 1, 0, s, argv, ffi.NULL))


def device_bytes(cu: Cuda, data: bytes) -> int:
    ptr = cu.alloc(len(data))
    cu.check(cu.lib.cuMemcpyHtoD_v2(ptr, ffi.from_buffer(data), len(data)))
    return ptr


def read_ints(cu: Cuda, ptr: int, n: int) -> list[int]:
    out = np.zeros(n, np.int32)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), ptr, out.nbytes))
    return [int(v) for v in out]


@pytest.mark.skipif(not NVCC.exists(), reason="nvcc is not installed")
def test_committed_ptx_is_current(tmp_path: Path) -> None:
    out = tmp_path / "printf.ptx"
    cmd = [str(NVCC), "-ptx", "-arch=compute_80", "-O3", str(HERE / "printf.cu"), "-o", str(out)]
    subprocess.run(cmd, check=True, cwd=HERE)

    def body(p: Path) -> list[str]:
        return [ln for ln in p.read_text().splitlines() if not ln.lstrip().startswith("//")]

    assert body(out) == body(PRINTF), "regenerate tests/ffi/ptx/printf.ptx with nvcc"


def test_every_conversion_matches_the_host_c_library(cu: Cuda, capfd: Any) -> None:
    i, ll, u, d, f = -98765, -1234567890123456789, 0xDEADBEEF, -3.14159265358979e3, 1.0 / 3
    text = b"hello, world\0"
    s = device_bytes(cu, text)
    module = Printing(cu, PRINTF.read_bytes())
    args = [("int", i), ("long long", ll), ("unsigned", u), ("double", d), ("float", f), (P, s)]
    capfd.readouterr()
    cu.check(module.launch("formats", args))
    cu.check(cu.lib.cuCtxSynchronize())
    c_int, c_d, c_s = ctypes.c_int, ctypes.c_double, ctypes.c_char_p(text[:-1])
    f32 = float(np.float32(f))
    want = [
        host_format(
            b"int %d %i %5d %-5d| %+d %05d %x %X %#o %u\n", *[c_int(i)] * 6, *[ctypes.c_uint(u)] * 4
        ),
        host_format(
            b"long %lld %llx %ld %lu %llu\n",
            *[ctypes.c_longlong(ll)] * 2,
            ctypes.c_long(ll),
            ctypes.c_ulong(ll % 2**64),
            ctypes.c_ulonglong(ll % 2**64),
        ),
        host_format(
            b"short %hd %hhd %hu %hhx char %c\n",
            c_int(ctypes.c_short(i).value),
            c_int(ctypes.c_byte(i).value),
            c_int(u & 0xFFFF),
            c_int(u & 0xFF),
            c_int(65 + (i & 7)),
        ),
        host_format(
            b"float %f %.3f %e %E %g %G %a %10.4f %-10.2e|\n", *[c_d(d)] * 7, c_d(f32), c_d(f32)
        ),
        host_format(b"string %s %.3s %10s %-6s|\n", *[c_s] * 4),
        host_format(
            b"star %*d %-*d %.*f %*.*f|\n",
            c_int(6),
            c_int(i),
            c_int(6),
            c_int(i),
            c_int(2),
            c_d(d),
            c_int(9),
            c_int(3),
            c_d(d),
        ),
        host_format(b"pointer %p percent 100%%\n", ctypes.c_void_p(s)),
    ]
    assert capfd.readouterr().out == "".join(want)


def test_each_thread_prints_one_record_and_gets_its_argument_count(cu: Cuda, capfd: Any) -> None:
    module = Printing(cu, PRINTF.read_bytes())
    grid, block = 2, 40  # a partial second warp in each block
    out = cu.alloc(4 * grid * block)
    capfd.readouterr()
    cu.check(module.launch("per_thread", [(P, out)], grid=grid, block=block))
    cu.check(cu.lib.cuCtxSynchronize())
    lines = capfd.readouterr().out.splitlines()
    want = [f"thread {t} block {b}" for b in range(grid) for t in range(block)]
    assert sorted(lines) == sorted(want)
    assert read_ints(cu, out, grid * block) == [2] * (grid * block)  # printf: arguments read


def test_no_arguments_and_no_newline(cu: Cuda, capfd: Any) -> None:
    module = Printing(cu, PRINTF.read_bytes())
    out = cu.alloc(8)
    capfd.readouterr()
    cu.check(module.launch("plain", [(P, out)]))
    cu.check(cu.lib.cuCtxSynchronize())
    assert capfd.readouterr().out == "plain text, no arguments\nno newline"
    assert read_ints(cu, out, 2) == [0, 0]


# ------------------------------------------------------------- flush points


def _flush(cu: Cuda, how: str, stream: Any, module: Printing) -> None:
    lib = cu.lib
    if how == "stream synchronize":
        cu.check(lib.cuStreamSynchronize(stream))
    elif how == "context synchronize":
        cu.check(lib.cuCtxSynchronize())
    elif how == "event synchronize":
        event = cu.event()
        cu.check(lib.cuEventRecord(event, stream))
        cu.check(lib.cuEventSynchronize(event))
        cu.check(lib.cuEventDestroy_v2(event))
    elif how == "blocking copy":
        host = np.zeros(1, np.int32)
        cu.check(lib.cuMemcpyHtoD_v2(cu.alloc(4), ffi.cast("void *", host.ctypes.data), 4))
    elif how == "module unload":
        cu.check(lib.cuModuleUnload(module.mod))
    elif how == "next launch":
        cu.check(module.launch("plain", [(P, cu.alloc(8))], stream=stream))


@pytest.mark.parametrize(
    "how",
    [
        "stream synchronize",
        "context synchronize",
        "event synchronize",
        "blocking copy",
        "module unload",
        "next launch",
    ],
)
def test_records_wait_in_the_fifo_for_a_flush_point(cu: Cuda, capfd: Any, how: str) -> None:
    module = Printing(cu, PRINTF.read_bytes())
    stream = cu.stream()
    out = cu.alloc(4 * 32)
    capfd.readouterr()
    cu.check(module.launch("per_thread", [(P, out)], block=32, stream=stream))
    # cuStreamQuery is no flush point: the kernel ends, its records stay held.
    while cu.lib.cuStreamQuery(stream) != CUDA_SUCCESS:
        pass
    assert capfd.readouterr().out == ""
    _flush(cu, how, stream, module)
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines[:32]) == sorted(f"thread {t} block 0" for t in range(32))
    cu.check(cu.lib.cuStreamSynchronize(stream))
    cu.check(cu.lib.cuStreamDestroy_v2(stream))


def test_the_end_of_the_context_writes_what_it_holds(cu: Cuda, capfd: Any) -> None:
    ctx = ffi.new("CUcontext *")
    cu.check(cu.lib.cuCtxCreate_v2(ctx, 0, 0))
    module = Printing(cu, PRINTF.read_bytes())
    out = cu.alloc(8)
    capfd.readouterr()
    cu.check(module.launch("plain", [(P, out)]))
    cu.check(cu.lib.cuCtxDestroy_v2(ctx[0]))
    cu.check(cu.lib.cuCtxSetCurrent(cu.ctx[0]))
    assert capfd.readouterr().out == "plain text, no arguments\nno newline"


# ------------------------------------------------------------- the FIFO's size


def test_fifo_size_limit_drops_what_does_not_fit(cu: Cuda, capfd: Any) -> None:
    size = ffi.new("size_t *")
    cu.check(cu.lib.cuCtxGetLimit(size, CU_LIMIT_PRINTF_FIFO_SIZE))
    assert size[0] == 1 << 20
    # A record of "thread %d block %d" takes 16 bytes and 8 of arguments.
    cu.check(cu.lib.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 5 * 24))
    cu.check(cu.lib.cuCtxGetLimit(size, CU_LIMIT_PRINTF_FIFO_SIZE))
    assert size[0] == 5 * 24
    module = Printing(cu, PRINTF.read_bytes())
    out = cu.alloc(4 * 32)
    capfd.readouterr()
    cu.check(module.launch("per_thread", [(P, out)], block=32))
    cu.check(cu.lib.cuCtxSynchronize())
    assert len(capfd.readouterr().out.splitlines()) == 5
    # A flush empties the FIFO: the next kernel's records fit again.
    cu.check(module.launch("per_thread", [(P, out)], block=32))
    cu.check(cu.lib.cuCtxSynchronize())
    assert len(capfd.readouterr().out.splitlines()) == 5
    # cuda.h: the size is fixed once a kernel that calls printf has launched.
    assert cu.lib.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20) == CUDA_ERROR_INVALID_VALUE


# ------------------------------------------------------------- hand-written PTX

HEAD = ".version 8.5\n.target sm_80\n.address_size 64\n"
VPRINTF = ".extern .func (.param .b32 r) vprintf (.param .b64 fmt, .param .b64 args);\n"


def _bytes(name: str, data: bytes) -> str:
    return f".global .align 1 .b8 {name}[{len(data)}] = {{{', '.join(map(str, data))}}};\n"


def one_call(fmt: bytes, ints: int = 0, args_ptr: str | None = None) -> bytes:
    """A kernel k(out) that calls vprintf(fmt, buf) with buf holding the ints
    0, 1, ..., ints - 1 (or the argument address args_ptr) and stores what it
    returned in out[0]."""
    stores = "".join(f"mov.u32 %r2, {k};\nst.local.u32 [%rd3+{4 * k}], %r2;\n" for k in range(ints))
    buf = args_ptr or "%rd4"
    fmt_var = "mov.u64 %rd1, fmt;\ncvta.global.u64 %rd1, %rd1;\n" if fmt else "mov.u64 %rd1, 0;\n"
    text = (
        HEAD + VPRINTF + _bytes("fmt", fmt + b"\0") + ".visible .entry k(.param .u64 out)\n{\n"
        f".local .align 8 .b8 buf[{max(4 * ints, 8)}];\n"
        ".reg .b64 %rd<6>;\n.reg .b32 %r<3>;\n"
        "mov.u64 %rd3, buf;\ncvta.local.u64 %rd4, %rd3;\n"
        + stores
        + fmt_var
        + "{\n.param .b64 p0;\nst.param.b64 [p0], %rd1;\n.param .b64 p1;\n"
        f"st.param.b64 [p1], {buf};\n.param .b32 r0;\n"
        "call.uni (r0), vprintf, (p0, p1);\nld.param.b32 %r1, [r0];\n}\n"
        "ld.param.u64 %rd2, [out];\ncvta.to.global.u64 %rd2, %rd2;\n"
        "st.global.u32 [%rd2], %r1;\nret;\n}\n"
    )
    return text.encode()


def run_one(cu: Cuda, text: bytes) -> tuple[int, int]:
    """(the launch's result at synchronize, what vprintf returned)."""
    module = Printing(cu, text)
    out = cu.alloc(4)
    cu.check(cu.lib.cuMemsetD32_v2(out, 0x7777, 1))
    rc = module.launch("k", [(P, out)])
    if rc == CUDA_SUCCESS:
        rc = int(cu.lib.cuCtxSynchronize())
    return rc, read_ints(cu, out, 1)[0] if rc == CUDA_SUCCESS else 0


def test_past_32_arguments_a_conversion_is_written_as_it_stands(cu: Cuda, capfd: Any) -> None:
    fmt = b" ".join([b"%d"] * 34) + b"\n"
    capfd.readouterr()
    rc, returned = run_one(cu, one_call(fmt, ints=34))
    assert (rc, returned) == (CUDA_SUCCESS, 32)
    assert capfd.readouterr().out == " ".join([*map(str, range(32)), "%d", "%d"]) + "\n"


def test_a_null_format_prints_nothing_and_returns_minus_one(cu: Cuda, capfd: Any) -> None:
    capfd.readouterr()
    assert run_one(cu, one_call(b"")) == (CUDA_SUCCESS, -1)
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize(
    ("fmt", "named"),
    [
        (b"%n", "'%n'"),
        (b"x %Lf", "'%Lf' (its length modifier)"),
        (b"%ls", "'%ls' (its length modifier)"),
        (b"%y", "'%y'"),
        (b"%5%", "'%5%'"),
        (b"ends in %", "'%'"),
        (b"%99999d", "a field width over 4096"),
    ],
)
def test_what_the_sim_cannot_format_fails_the_launch_naming_it(
    cu: Cuda, capfd: Any, fmt: bytes, named: str
) -> None:
    capfd.readouterr()
    rc, _ = run_one(cu, one_call(fmt, ints=2))
    captured = capfd.readouterr()
    assert rc == CUDA_ERROR_LAUNCH_FAILED
    assert "vprintf refused" in captured.err and named in captured.err
    assert captured.out == ""


def test_an_argument_buffer_outside_memory_faults_the_kernel(cu: Cuda) -> None:
    rc, _ = run_one(cu, one_call(b"%d\n", args_ptr="16"))
    assert rc == CUDA_ERROR_ILLEGAL_ADDRESS


def test_a_vprintf_of_another_signature_is_refused_at_load(cu: Cuda) -> None:
    text = one_call(b"x").replace(b".param .b64 args", b".param .b32 args")
    rc, _, log = load_ex(cu, text)
    assert rc == CUDA_ERROR_INVALID_PTX
    assert "vprintf" in log
