"""What cuda-sim's PTX executor refuses, and how: the load fails with
CUDA_ERROR_INVALID_PTX (or UNSUPPORTED_PTX_VERSION) and the error log names
the line and the construct; binary GPU images get NO_BINARY_FOR_GPU."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda, ffi
from test_ptx_exec import load_ex

CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222

HEAD = ".version 8.5\n.target sm_80\n.address_size 64\n"


def _kernel(body: str, params: str = ".param .u64 p") -> bytes:
    return f"{HEAD}.visible .entry k({params})\n{{\n{body}\n}}\n".encode()


REGS = ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.reg .f32 %f<4>;\n.reg .pred %p<2>;\n"


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        (REGS + "tex.1d.v4.f32.s32 {%f0, %f1, %f2, %f3}, [tx, {%r0}];", 10, "tex.1d.v4.f32.s32"),
        (
            REGS + "wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r0}, [%rd0];",
            10,
            "'wmma.load.a.sync.aligned.row.m16n16k16.f16': operand 1 needs a vector of 8",
        ),
        (
            REGS + "wmma.load.a.sync.aligned.row.m8n32k16.f16 {%r0}, [%rd0];",
            10,
            "unsupported instruction 'wmma.load.a.sync.aligned.row.m8n32k16.f16'",
        ),
        (
            REGS
            + "mov.u32 %r0, 1;\ncp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd0], 16, %rd1;",
            11,
            "unsupported instruction 'cp.async.bulk.prefetch.L2.global.L2::cache_hint'",
        ),
        (REGS + "add.f32 %f0, %f1, %f9;", 10, "'%f9'"),
        (REGS + "bra $L_nowhere;", 10, "$L_nowhere"),
        (REGS + "cvt.rn.satfinite.relu.f16x2.f32 %r0, %f0, %f1;", 10, ".satfinite"),
        (REGS + "mov.u32 %r0, %envreg3;", 10, "%envreg3"),
        (REGS + "bar.sync 0, 64;", 10, "thread count"),
        (REGS + "shfl.down.b32 %r0, %r1, 1, 31;", 10, "shfl without .sync"),
        (REGS + "ld.global.f32 %f0, [%rd0]", 10, "after an operand"),
    ],
)
def test_unsupported_constructs_fail_the_load_naming_line_and_instruction(
    cu: Cuda, body: str, line: int, words: str
) -> None:
    rc, _mod, log = load_ex(cu, _kernel(body))
    assert rc == CUDA_ERROR_INVALID_PTX
    assert f"ptx line {line}:" in log and words in log, log


def test_plain_load_data_fails_the_same_way(cu: Cuda) -> None:
    mod = ffi.new("CUmodule *")
    image = _kernel(REGS + "suld.b.1d.b32.trap {%r0}, [surf, {%r1}];") + b"\0"
    assert cu.lib.cuModuleLoadData(mod, ffi.from_buffer(image)) == CUDA_ERROR_INVALID_PTX


@pytest.mark.parametrize(
    ("head", "words"),
    [
        (".version 99.0\n.target sm_80\n.address_size 64\n", "PTX ISA 99.0"),
        (".version 8.5\n.target sm_100\n.address_size 64\n", "sm_100"),
    ],
)
def test_newer_isa_or_target_is_unsupported_ptx_version(cu: Cuda, head: str, words: str) -> None:
    rc, _mod, log = load_ex(cu, (head + ".visible .entry k()\n{\nret;\n}\n").encode())
    assert rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    assert "ptx line 1:" in log or "ptx line 2:" in log
    assert words in log, log


def test_calls_of_external_functions_are_refused(cu: Cuda) -> None:
    # vprintf runs (test_ptx_printf.py); malloc, like any other undefined
    # function, has no code behind it.
    text = (
        HEAD
        + ".extern .func (.param .b64 r) malloc(.param .b64 n);\n"
        + ".visible .entry k()\n{\n.reg .b32 %r<2>;\n{\n.param .b64 param0;\n"
        + ".param .b64 retval0;\ncall.uni (retval0), malloc, (param0);\n}\nret;\n}\n"
    )
    rc, _mod, log = load_ex(cu, text.encode())
    assert rc == CUDA_ERROR_INVALID_PTX
    assert "call of external function 'malloc'" in log and "ptx line 11:" in log, log


def test_cubin_and_fatbin_have_no_binary_for_the_sim(cu: Cuda) -> None:
    # An ELF for EM_CUDA (190): what nvcc -cubin writes.
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    cubin = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 64, 0, 0, 64, 56, 0, 64, 0, 0)
    rc, _mod, log = load_ex(cu, cubin)
    assert rc == CUDA_ERROR_NO_BINARY_FOR_GPU and "cubin" in log
    fatbin = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 0) + bytes(64)
    rc, _mod, log = load_ex(cu, fatbin)
    assert rc == CUDA_ERROR_NO_BINARY_FOR_GPU and "fatbin" in log


def test_module_load_reads_a_ptx_file(cu: Cuda, tmp_path: Path) -> None:
    body = (
        ".reg .b64 %rd<3>;\n.reg .b32 %r<3>;\nld.param.u64 %rd1, [p];\n"
        "cvta.to.global.u64 %rd2, %rd1;\n"
        "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd1, %r1, 4;\nadd.s64 %rd2, %rd2, %rd1;\n"
        "mul.lo.s32 %r2, %r1, %r1;\nst.global.u32 [%rd2], %r2;\nret;"
    )
    path = tmp_path / "squares.ptx"
    path.write_bytes(_kernel(body))
    mod = ffi.new("CUmodule *")
    cu.check(cu.lib.cuModuleLoad(mod, str(path).encode()))
    fn = ffi.new("CUfunction *")
    cu.check(cu.lib.cuModuleGetFunction(fn, mod[0], b"k"))
    d = cu.alloc(4 * 40)
    keep = [ffi.new("unsigned long long *", d)]
    argv = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
    cu.check(cu.lib.cuLaunchKernel(fn[0], 1, 1, 1, 40, 1, 1, 0, ffi.NULL, argv, ffi.NULL))
    out = np.zeros(40, np.uint32)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), d, out.nbytes))
    np.testing.assert_array_equal(out, np.arange(40) ** 2)
    assert cu.lib.cuModuleUnload(mod[0]) == CUDA_SUCCESS
