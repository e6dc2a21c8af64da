"""cuda-sim's linker resolves module-scope names across its inputs as a
linker does, by their linking directives (PTX ISA, "Linking Directives"):
each input keeps its own internal names, one definition of a .weak or
.common name is kept, and two .visible definitions are refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda
from _cudasim_support import cu as cu
from test_cuda_sim_link import HEADER, Linker, _logs, _text, ffi

CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_INVALID_PTX = 218
TID = np.arange(64, dtype=np.int32)


@pytest.fixture
def lk(cu: Cuda) -> Iterator[Linker]:
    yield Linker()


def reads(kernel: str, var: str, kind: str = "u32") -> str:
    """kernel(out): out[tid] = var."""
    return f"""
.visible .entry {kernel}(.param .u64 o)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [o];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.{kind} %r2, [{var}];
    st.global.u32 [%rd4], %r2;
    ret;
}}
"""


def calls(kernel: str, func: str) -> str:
    """kernel(out): out[tid] = func(tid)."""
    return f"""
.visible .entry {kernel}(.param .u64 o)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [o];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {{
    .param .b32 param0;
    st.param.b32 [param0+0], %r1;
    .param .b32 retval0;
    call.uni (retval0), {func}, (param0);
    ld.param.b32 %r2, [retval0+0];
    }}
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r2;
    ret;
}}
"""


def func(linkage: str, name: str, mul: int, add: int) -> str:
    """name(x) = mul * x + add."""
    return f"""
{linkage} .func (.param .b32 r) {name}(
    .param .b32 x
)
{{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    mad.lo.s32 %r2, %r1, {mul}, {add};
    st.param.b32 [r+0], %r2;
    ret;
}}
"""


PROTO = ".extern .func (.param .b32 r) helper(.param .b32 x);\n"


def link_and_run(lk: Linker, inputs: list[tuple[bytes, str]], kernels: list[str]) -> list[Any]:
    state, _, _ = lk.create()
    for name, text in inputs:
        assert lk.add(state, (HEADER + text).encode(), name) == CUDA_SUCCESS, name
    module = lk.load(lk.complete(state))
    try:
        out = []
        for kernel in kernels:
            fn = ffi.new("CUfunction *")
            assert lk.lib.cuModuleGetFunction(fn, module, kernel.encode()) == CUDA_SUCCESS
            out.append(lk.launch(fn[0]))
        return out
    finally:
        lk.lib.cuModuleUnload(module)
        lk.lib.cuLinkDestroy(state)


def link_error(lk: Linker, inputs: list[tuple[bytes, str]]) -> tuple[int, str]:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    for name, text in inputs:
        assert lk.add(state, (HEADER + text).encode(), name) == CUDA_SUCCESS, name
    image = ffi.new("void **")
    rc = int(lk.lib.cuLinkComplete(state, image, ffi.NULL))
    message = _text(err)
    lk.lib.cuLinkDestroy(state)
    return rc, message


def test_each_input_keeps_its_own_internal_variable(lk: Linker) -> None:
    one = ".global .align 4 .u32 counter = 7;\n" + reads("ka", "counter")
    two = ".global .align 4 .u32 counter = 9;\n" + reads("kb", "counter")
    ka, kb = link_and_run(lk, [(b"one.ptx", one), (b"two.ptx", two)], ["ka", "kb"])
    assert ka.tolist() == [7] * 64 and kb.tolist() == [9] * 64


def test_an_internal_variable_and_a_visible_one_of_one_name_stay_apart(lk: Linker) -> None:
    one = ".global .align 4 .u32 counter = 7;\n" + reads("ka", "counter")
    two = ".visible .global .align 4 .u32 counter = 5;\n" + reads("kb", "counter")
    ka, kb = link_and_run(lk, [(b"one.ptx", one), (b"two.ptx", two)], ["ka", "kb"])
    assert ka.tolist() == [7] * 64 and kb.tolist() == [5] * 64


def test_each_input_keeps_its_own_internal_function(lk: Linker) -> None:
    one = func("", "helper", 3, 1) + calls("ka", "helper")
    two = func("", "helper", 5, 2) + calls("kb", "helper")
    ka, kb = link_and_run(lk, [(b"one.ptx", one), (b"two.ptx", two)], ["ka", "kb"])
    np.testing.assert_array_equal(ka, 3 * TID + 1)
    np.testing.assert_array_equal(kb, 5 * TID + 2)


def test_of_two_weak_functions_the_first_is_kept(lk: Linker) -> None:
    one = func(".weak", "helper", 3, 1) + calls("ka", "helper")
    two = func(".weak", "helper", 5, 2) + calls("kb", "helper")
    ka, kb = link_and_run(lk, [(b"one.ptx", one), (b"two.ptx", two)], ["ka", "kb"])
    np.testing.assert_array_equal(ka, 3 * TID + 1)
    np.testing.assert_array_equal(kb, 3 * TID + 1)


def test_a_visible_function_wins_over_weak_ones(lk: Linker) -> None:
    one = func(".weak", "helper", 3, 1) + calls("ka", "helper")
    two = func(".visible", "helper", 5, 2)
    three = PROTO + calls("kc", "helper") + func(".weak", "helper", 7, 3)
    ka, kc = link_and_run(
        lk, [(b"one.ptx", one), (b"two.ptx", two), (b"three.ptx", three)], ["ka", "kc"]
    )
    np.testing.assert_array_equal(ka, 5 * TID + 2)
    np.testing.assert_array_equal(kc, 5 * TID + 2)


def test_the_largest_common_variable_wins_and_holds_the_initial_value(lk: Linker) -> None:
    one = ".common .global .align 4 .u32 shared_env;\n" + reads("ka", "shared_env")
    two = ".common .global .align 8 .u64 shared_env = 42;\n" + reads("kb", "shared_env", "u32")
    three = ".common .global .align 4 .u32 shared_env;\n" + reads("kc", "shared_env")
    ka, kb, kc = link_and_run(
        lk, [(b"one.ptx", one), (b"two.ptx", two), (b"three.ptx", three)], ["ka", "kb", "kc"]
    )
    assert ka.tolist() == kb.tolist() == kc.tolist() == [42] * 64


def test_two_visible_definitions_are_a_multiple_definition(lk: Linker) -> None:
    one = ".visible .global .align 4 .u32 counter = 7;\n" + reads("ka", "counter")
    two = ".visible .global .align 4 .u32 counter = 9;\n"
    rc, log = link_error(lk, [(b"one.ptx", one), (b"two.ptx", two)])
    assert rc == CUDA_ERROR_INVALID_IMAGE
    assert "'one.ptx' and 'two.ptx' both define 'counter' (multiple definition)" in log


def test_only_the_largest_common_variable_may_be_initialized(lk: Linker) -> None:
    one = ".common .global .align 4 .u32 env = 3;\n" + reads("ka", "env")
    two = ".common .global .align 8 .u64 env;\n"
    rc, log = link_error(lk, [(b"one.ptx", one), (b"two.ptx", two)])
    assert rc == CUDA_ERROR_INVALID_IMAGE
    assert "'one.ptx' initializes the .common 'env'" in log


def test_an_error_after_a_dropped_definition_names_its_own_line(lk: Linker) -> None:
    one = func(".weak", "helper", 3, 1) + calls("ka", "helper")
    # It declares an external function, so its error waits for the link.
    two = (
        ".extern .func (.param .b32 r) elsewhere(.param .b32 x);\n"
        + func(".weak", "helper", 5, 2)
        + ".visible .entry kb()\n{\n    frobnicate.u32 %r1;\n}\n"
    )
    rc, log = link_error(lk, [(b"one.ptx", one), (b"two.ptx", two)])
    bad = (HEADER + two).splitlines().index("    frobnicate.u32 %r1;") + 1
    assert rc == CUDA_ERROR_INVALID_PTX
    assert f"two.ptx: ptx line {bad}:" in log, log


# numba declares a C-ABI function that returns nothing (declare_device(...,
# abi="c") of a void function) as returning a 64-bit value, which it ignores;
# the definition comes from CUDA C compiled on its own.
VOID_CONSUME = """
.visible .func consume(
    .param .b32 a
)
{
    ret;
}
"""


def calls_void(kernel: str, args: int) -> str:
    """kernel(out): out[tid] = the 32 low bits of what consume(tid...) returned, plus tid."""
    params = "".join(f".param .b32 p{i};\nst.param.b32 [p{i}+0], %r1;\n" for i in range(args))
    names = ", ".join(f"p{i}" for i in range(args))
    return f"""
.extern .func (.param .b64 r) consume({", ".join(f".param .b32 a{i}" for i in range(args))});
.visible .entry {kernel}(.param .u64 o)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [o];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {{
    {params}.param .b64 retval0;
    call.uni (retval0), consume, ({names});
    ld.param.b64 %rd5, [retval0+0];
    }}
    cvt.u32.u64 %r2, %rd5;
    add.s32 %r3, %r2, %r1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r3;
    ret;
}}
"""


def test_a_return_the_definition_does_not_make_reads_zero(lk: Linker) -> None:
    (k,) = link_and_run(lk, [(b"kernel.ptx", calls_void("k", 1)), (b"c.ptx", VOID_CONSUME)], ["k"])
    np.testing.assert_array_equal(k, TID)


def test_a_call_with_other_arguments_than_the_definition_is_refused(lk: Linker) -> None:
    rc, log = link_error(lk, [(b"kernel.ptx", calls_void("k", 2)), (b"c.ptx", VOID_CONSUME)])
    assert rc == CUDA_ERROR_INVALID_PTX
    assert "call of 'consume' with the wrong arguments" in log
