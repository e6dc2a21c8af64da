"""levelzero-sim's SPIR-V executor refuses a misaligned access, as a GPU does.

An element of n bytes read or written at an address that is not a multiple
of n loses the device, as an illegal address does, and the fault report
names the kernel, the access, the instruction that made it and the address
(cuda-sim reports the same fault as CUDA_ERROR_MISALIGNED_ADDRESS; Level
Zero has no such code, so it is ZE_RESULT_ERROR_DEVICE_LOST).  An Aligned
memory operand that promises less than the element's size (a packed
struct's member) lowers what the access needs.  The kernels are
spirv/misaligned.cl, built by spirv/build.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DeviceLostError

from . import _simhooks

MODULE = Path(__file__).resolve().parent / "spirv" / "misaligned.spv"


@pytest.fixture(scope="module")
def module(gpu: ar.Backend) -> ar.Module:
    return gpu.load_module("misaligned", MODULE.read_bytes())


# kernel, the byte offset of the bad pointer, read or write, element bytes, instruction
CASES = [
    ("load_int", 1, "read", 4, "OpLoad"),
    ("store_int", 2, "write", 4, "OpStore"),
    ("atomic_add_int", 2, "write", 4, "OpAtomicIAdd"),
    ("vload4_float", 4 + 2, "read", 4, "vloadn"),
    ("vload_half_float", 1, "read", 2, "vload_half"),
]


@pytest.mark.parametrize(("kernel", "off", "access", "size", "insn"), CASES)
def test_a_misaligned_access_names_the_instruction_and_the_address(
    gpu: ar.Backend, module: ar.Module, kernel: str, off: int, access: str, size: int, insn: str
) -> None:
    buf, out = gpu.alloc(64), gpu.alloc(64)
    bad = buf.offset(off)
    args = [bad] if kernel in ("store_int", "atomic_add_int") else [bad, out]
    try:
        done = gpu.launch(gpu.kernel(module, kernel), 1, 1, args)
        with pytest.raises(DeviceLostError) as caught:
            done.wait()
        text = str(caught.value)
        want = (
            f"misaligned {access} of {size} bytes by {insn} at {int(bad):#x} on device 0, "
            f"offset {off} of the allocation {int(buf):#x} (64 bytes)"
        )
        assert want in text, text
        assert f"kernel {kernel}" in text, text
        with pytest.raises(DeviceLostError):  # sticky, as an illegal address
            gpu.memset_async(out, 0, 4).wait()
    finally:
        _simhooks.hooks().arze_sim_clear_faults()
        gpu.free(buf)
        gpu.free(out)


def test_aligned_accesses_run(gpu: ar.Backend, module: ar.Module) -> None:
    x = np.arange(16, dtype=np.float32)
    buf, out = gpu.alloc(64), gpu.alloc(64)
    try:
        gpu.copy_h2d(x, buf)
        gpu.launch(gpu.kernel(module, "vload4_float"), 1, 1, [buf.offset(16), out]).wait()
        got = gpu.copy_d2h(out, np.empty(4, np.float32))
        np.testing.assert_array_equal(got, x[4:8] * 2)
        gpu.launch(gpu.kernel(module, "load_int"), 1, 1, [buf.offset(4), out]).wait()
        assert gpu.copy_d2h(out, np.empty(1, np.float32))[0] == 1.0  # the bits of x[1]
    finally:
        gpu.free(buf)
        gpu.free(out)


def test_an_aligned_operand_lowers_what_the_access_needs(
    gpu: ar.Backend, module: ar.Module
) -> None:
    """A packed struct's int at offset 1: its OpLoad says Aligned 1, so it is no fault."""
    packed = np.zeros(8, np.uint8)
    packed[1:5] = np.frombuffer(np.int32(-123456).tobytes(), np.uint8)
    buf, out = gpu.alloc(64), gpu.alloc(64)
    try:
        gpu.copy_h2d(packed, buf)
        gpu.launch(gpu.kernel(module, "packed_read"), 1, 1, [buf, out]).wait()
        assert gpu.copy_d2h(out, np.empty(1, np.int32))[0] == -123456
    finally:
        gpu.free(buf)
        gpu.free(out)
