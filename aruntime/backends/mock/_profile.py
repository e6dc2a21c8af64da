"""The device profile the mock enforces: the limits of a real part.

A test that passes on the mock should not fail on a GPU because the mock was
kinder than the device.  So the mock checks each launch and allocation
against the limits of a real part, an NVIDIA H100 by default (the values
are CUDA 12's for sm_90; docs/testing.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._driver import DeviceLimits, cuda_shared_mem_hint

__all__ = ["H100", "DeviceProfile"]

_KIB = 1024
_GIB = 1 << 30


@dataclass(frozen=True)
class DeviceProfile:
    """The limits the mock enforces, as a real device would."""

    #: The part whose limits these are; messages quote it.
    name: str
    #: Dynamic shared memory per block without the opt-in attribute, in bytes.
    max_shared_mem: int
    #: The same with ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` set
    #: (``cuFuncSetAttribute``), which the CUDA backends set for a launch that
    #: asks for more than ``max_shared_mem``; the mock's launches reach it too.
    max_shared_mem_optin: int
    #: Threads per block, all axes together.
    max_block_threads: int
    #: Threads per block along x, y and z.
    max_block: tuple[int, int, int]
    #: Blocks per grid along x, y and z.
    max_grid: tuple[int, int, int]
    #: Every allocation's base address is a multiple of this, in bytes.
    alloc_alignment: int
    #: The largest single allocation, in bytes (the part's memory on CUDA).
    max_allocation: int


#: An NVIDIA H100 (sm_90), the mock's default profile.
H100 = DeviceProfile(
    name="NVIDIA H100 (sm_90)",
    max_shared_mem=48 * _KIB,
    max_shared_mem_optin=227 * _KIB,
    max_block_threads=1024,
    max_block=(1024, 1024, 64),
    max_grid=(2**31 - 1, 65535, 65535),
    alloc_alignment=256,
    max_allocation=80 * _GIB,
)


def profile_limits(profile: DeviceProfile) -> DeviceLimits:
    """The profile as the limits every backend reports (``Backend.limits``)."""
    where = f"; the mock's {profile.name} profile"
    return DeviceLimits(
        max_block_threads=profile.max_block_threads,
        max_block=profile.max_block,
        max_grid=profile.max_grid,
        max_shared_mem=profile.max_shared_mem,
        max_shared_mem_optin=profile.max_shared_mem_optin,
        max_allocation=profile.max_allocation,
        alloc_alignment=profile.alloc_alignment,
        shared_mem_hint=cuda_shared_mem_hint(profile.max_shared_mem, profile.max_shared_mem_optin)
        + where,
        allocation_hint=f"the mock's {profile.name} profile; open_backend('mock', profile=...) "
        "sets another",
    )
