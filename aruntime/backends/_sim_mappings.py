"""Why a software driver ran out of memory with memory free: the host's mappings.

The sims back each allocation over 64 KiB (each one, under
``ARUNTIME_SIM_SANITIZE``) with host mappings of its own, the data and a guard
region after it, and Linux bounds a process's mappings by
``vm.max_map_count`` (65,530 by default).  So a sim can refuse an allocation
with most of its device memory free, and the driver's own message (so many
bytes free) would not say why; this adds the reason when it is the one.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["mappings_hint"]

_MAPS = Path("/proc/self/maps")
_LIMIT = Path("/proc/sys/vm/max_map_count")
#: Mappings short of the limit that still count as at it: the failed call's
#: own two, and whatever other threads mapped meanwhile.
_SLACK = 64


def mappings_hint(backend_name: str, *, maps: Path = _MAPS, limit: Path = _LIMIT) -> str:
    """``"; ..."`` naming ``vm.max_map_count`` when this process is at it, else ``""``."""
    if not backend_name.endswith("-sim"):
        return ""
    try:
        most = int(limit.read_text())
        with maps.open("rb") as lines:
            used = sum(1 for _ in lines)
    except (OSError, ValueError):
        return ""
    if used + _SLACK < most:
        return ""
    return (
        f"; the process holds {used} memory mappings of the host's vm.max_map_count "
        f"({most}): the sim maps each allocation over 64 KiB (every one under "
        "ARUNTIME_SIM_SANITIZE) with a guard region of its own, so raise "
        "vm.max_map_count (sysctl) or make fewer, larger allocations"
    )
