"""cuda-sim's PTX parser consumes what nvcc -lineinfo / -G write exactly, and
long names whole: a `.loc` line once swallowed the next instruction (a launch
that succeeded with zeros), and names were cut to 127 characters (numba's
mangled kernel names are longer, so cuModuleGetFunction said NOT_FOUND)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda, ffi
from test_ptx_exec import Kernels, load_ex

CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_NOT_FOUND = 500
P = "unsigned long long"

HEAD = '.version 8.5\n.target sm_80\n.address_size 64\n.file 1 "/tmp/k.cu"\n'
DEBUG_SECTION = ".section .debug_str\n{\n$L__info_string0:\n.b8 107\n.b8 0\n}\n"


class Text(Kernels):
    def __init__(self, cu: Cuda, text: str) -> None:
        self.cu = cu
        rc, self.mod, log = load_ex(cu, text.encode())
        assert rc == CUDA_SUCCESS, log
        self.buffers: dict[int, np.ndarray] = {}


def _store_kernel(name: str, between: str) -> str:
    """out[0] = 7; out[1] = 9, with `between` before each store."""
    return (
        HEAD
        + f".visible .entry {name}(.param .u64 p)\n{{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n"
        + between
        + "ld.param.u64 %rd0, [p];\n"
        + between
        + "mov.u32 %r0, 7;\n"
        + between
        + "st.global.u32 [%rd0], %r0;\n"
        + between
        + "mov.u32 %r1, 9;\n"
        + between
        + "st.global.u32 [%rd0+4], %r1;\n"
        + between
        + "ret;\n}\n"
        + DEBUG_SECTION
    )


def _run_store(cu: Cuda, text: str, name: str) -> np.ndarray:
    k = Text(cu, text)
    d = k.dev(np.zeros(2, np.uint32))
    k.run(name, (1, 1, 1), (1, 1, 1), [(P, d)])
    out: Any = k.get(d)
    return np.asarray(out)


@pytest.mark.parametrize(
    "between",
    [
        ".loc 1 5 3\n",
        ".loc 1 12 7, function_name $L__info_string0, inlined_at 1 5 3\n",
        '.pragma "nounroll";\n',
        "",
    ],
)
def test_debug_lines_between_instructions_drop_nothing(cu: Cuda, between: str) -> None:
    out = _run_store(cu, _store_kernel("k", between), "k")
    assert out.tolist() == [7, 9]


def test_a_300_character_kernel_name_is_found_whole(cu: Cuda) -> None:
    name = "_Z" + "x" * 297
    out = _run_store(cu, _store_kernel(name, ""), name)
    assert out.tolist() == [7, 9]
    k = Text(cu, _store_kernel(name, ""))
    fn = ffi.new("CUfunction *")
    # the first 127 characters are not the kernel's name
    rc = cu.lib.cuModuleGetFunction(fn, k.mod, name[:127].encode())
    assert rc == CUDA_ERROR_NOT_FOUND


def test_long_labels_and_registers_are_kept_apart(cu: Cuda) -> None:
    # two labels that share their first 200 characters are two labels
    a, b = "$L" + "a" * 200 + "_1", "$L" + "a" * 200 + "_2"
    body = (
        ".reg .b32 %r<3>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd0, [p];\nmov.u32 %r0, 7;\n"
        f"bra.uni {b};\n{a}:\nmov.u32 %r0, 1;\n{b}:\nst.global.u32 [%rd0], %r0;\n"
        "mov.u32 %r1, 9;\nst.global.u32 [%rd0+4], %r1;\nret;\n"
    )
    text = HEAD + ".visible .entry k(.param .u64 p)\n{\n" + body + "}\n"
    assert _run_store(cu, text, "k").tolist() == [7, 9]


@pytest.mark.parametrize(
    ("between", "line", "words"),
    [
        (".loc 1 5\n", 9, "malformed .loc"),
        (".loc 1 5 3 mov.u32 %r2, 1;\n", 9, "after .loc"),
        ('.pragma "nounroll"\n', 9, "after .pragma"),
        (".file 2\n", 9, "malformed .file"),
        (".section .text\n", 9, "unsupported directive '.section'"),
    ],
)
def test_a_statement_not_consumed_exactly_fails_the_load(
    cu: Cuda, between: str, line: int, words: str
) -> None:
    text = (
        HEAD
        + ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n"
        + between
        + "ret;\n}\n"
    )
    rc, _mod, log = load_ex(cu, text.encode())
    assert rc == CUDA_ERROR_INVALID_PTX
    assert f"ptx line {line}:" in log and words in log, log


def test_a_non_debug_section_and_an_overlong_name_are_refused(cu: Cuda) -> None:
    rc, _mod, log = load_ex(cu, (HEAD + ".section .nv.foo\n{\n}\n").encode())
    assert rc == CUDA_ERROR_INVALID_PTX and "unsupported section '.nv.foo'" in log, log
    name = "_Z" + "y" * 2000
    rc, _mod, log = load_ex(cu, _store_kernel(name, "").encode())
    assert rc == CUDA_ERROR_INVALID_PTX and "ptx line 5:" in log and "characters" in log, log


@pytest.mark.parametrize("attrs", [".ptr .global .align 4", ".ptr .align 8", ".ptr"])
def test_pointer_attributes_after_a_parameter_type(cu: Cuda, attrs: str) -> None:
    text = _store_kernel("k", "").replace(".param .u64 p", f".param .u64 {attrs} p")
    assert _run_store(cu, text, "k").tolist() == [7, 9]


@pytest.mark.parametrize(
    "opcode", ["add" + ".s32" * 13, "add." + "x" * 50 + ".s32", "a" * 40 + ".s32"]
)
def test_an_opcode_with_parts_it_cannot_hold_is_refused_not_cut(cu: Cuda, opcode: str) -> None:
    body = ".reg .b32 %r<3>;\n" + f"{opcode} %r0, %r1, %r2;\nret;\n"
    text = HEAD + ".visible .entry k(.param .u64 p)\n{\n" + body + "}\n"
    rc, _mod, log = load_ex(cu, text.encode())
    assert rc == CUDA_ERROR_INVALID_PTX
    assert "ptx line 8:" in log and "unsupported instruction" in log, log
