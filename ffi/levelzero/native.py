"""The software Level Zero driver (levelzero-sim), built on the shared sim engine.

The real Level Zero loader loads it through ``ZE_ENABLE_ALT_DRIVERS=<path>``;
aruntime can also load it directly (``ARUNTIME_LEVELZERO_LIBRARY=<path>``).
"""

from __future__ import annotations

from pathlib import Path

from ffi.build import NativeLibrary, api_extension
from ffi.levelzero.api import generate as api_generator
from ffi.sim.native import ENGINE_HEADERS, ENGINE_SOURCES

_SIM = (
    "levelzero/sim/lz_registry.c",
    "levelzero/sim/lz_driver.c",
    "levelzero/sim/lz_device_props.c",
    "levelzero/sim/lz_mem.c",
    "levelzero/sim/lz_event.c",
    "levelzero/sim/lz_cmdlist.c",
    "levelzero/sim/lz_module.c",
    "levelzero/sim/lz_ddi.c",
    "sim/spirv/spv_opcodes.c",
    "sim/spirv/spv_decode.c",
    "sim/spirv/spv_emit.c",
    "sim/spirv/spv_promote.c",
    "sim/spirv/spv_function.c",
    "sim/spirv/spv_compile_mem.c",
    "sim/spirv/spv_compile_builtin.c",
    "sim/spirv/spv_compile_alu.c",
    "sim/spirv/spv_compile_ext.c",
    "sim/spirv/spv_module.c",
    "sim/spirv/spv_link.c",
    "sim/spirv/spv_link_ids.c",
    "sim/spirv/spv_exec.c",
    "sim/spirv/spv_math.c",
    "sim/spirv/spv_group.c",
)
_HEADERS = (
    "levelzero/sim/ze_abi.h",
    "levelzero/sim/lz_api.h",
    "levelzero/sim/lz_internal.h",
    "levelzero/sim/lz_registry.h",
    "sim/spirv/spv.h",
    "sim/spirv/spv_internal.h",
    "sim/spirv/spv_load.h",
    "sim/spirv/spv_exec.h",
    "sim/spirv/spv_bits.h",
    "sim/sim_bits.h",
    "sim/spirv/spv_opcodes.h",
    "sim/spirv/spv_opcodes.def",
    "sim/spirv/spv_grammar.h",
    "sim/spirv/spv_operands.h",
    "sim/spirv/spv_link.h",
    *ENGINE_HEADERS,
)

LIBRARIES = [
    NativeLibrary(
        filename="libze_aruntime_sim.so",
        sources=(*_SIM, *ENGINE_SOURCES),
        soname="libze_aruntime_sim.so",
        # Hidden by default: only the Level Zero entry points, the DDI getters
        # and the test hooks are exported.  -Bsymbolic keeps the driver's own
        # calls inside it when another library in the process (the loader,
        # the validation layer, the CUDA sim) exports the same names.
        # -z nodelete: the loader dlcloses its drivers at exit while queue
        # threads may still run work; unmapping the code under them crashed
        # about one exit in four (tests/ffi: test_exit_with_work_in_flight).
        # -ffp-contract=off: the SPIR-V executor rounds every float operation
        # as the kernel says (no fused multiply-adds the kernel did not ask for).
        cflags=("-fvisibility=hidden", "-ffp-contract=off"),
        ldflags=(
            "-Wl,-Bsymbolic",
            "-Wl,-z,nodelete",
            "-Wl,--no-undefined",
            "-ldl",
            "-lm",
            "-lpthread",
        ),
        depends=_HEADERS,
    )
]

# levelzero-sim as a self-contained Level Zero loader, for clients that need a
# newer loader than the system's (SYCL's Unified Runtime: docs/levelzero.md).
# In its own folder, so that LD_LIBRARY_PATH=<that folder> brings in this
# library alone.  It links to the driver above (one sim per process, whoever
# opens it) and adds the loader's own entry points (lz_loader.c).
LOADER_SHIM = "ze_loader/libze_loader.so.1"
LIBRARIES.append(
    NativeLibrary(
        filename=LOADER_SHIM,
        sources=("levelzero/sim/lz_loader.c",),
        soname="libze_loader.so.1",
        cflags=("-fvisibility=hidden",),
        links=("libze_aruntime_sim.so",),
        ldflags=("-Wl,-rpath,$ORIGIN/..", "-Wl,--no-undefined", "-Wl,-z,nodelete"),
        depends=(*_HEADERS, "levelzero/sim/lz_loader_unsupported.def"),
    )
)

# The host side of staged pageable copies (aruntime/backends/levelzero/_staged.py):
# C, so that a stream's staging worker holds no GIL while it waits and copies.
LIBRARIES.append(
    NativeLibrary(
        filename="libaruntime_ze_helpers.so",
        sources=("levelzero/helpers/ar_ze_staging.c",),
        cflags=("-fvisibility=hidden",),
    )
)

# The compiled calls of every op's path (api/generate.py), where they can be built.
LIBRARIES.extend(
    api_extension(
        api_generator.MODULE,
        Path(__file__).resolve().parent / "api" / "_generated" / f"{api_generator.MODULE}.c",
        api_generator.generate,
        depends=("levelzero/api/generate.py",),
    )
)
