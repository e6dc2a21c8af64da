"""The software drivers' shared engine, and the software CUDA driver built on it.

libcuda.so.1 (soname libcuda.so.1) is the engine (ffi/sim) plus the CUDA front
end (ffi/cuda/sim) and the PTX interpreter (ffi/sim/ptx).  The Level Zero
driver links its own copy of the engine.
"""

from __future__ import annotations

from ffi.build import NativeLibrary

# The engine, linked into each software driver (ffi/sim/README.md says what
# each file holds).
ENGINE_SOURCES = (
    "sim/engine_config.c",
    "sim/engine_mappings.c",
    "sim/engine_memory.c",
    "sim/engine_slabs.c",
    "sim/engine_faults.c",
    "sim/engine_readonly.c",
    "sim/engine_handles.c",
    "sim/engine_events.c",
    "sim/engine_modules.c",
    "sim/engine_ops.c",
    "sim/engine_graphs.c",
    "sim/engine_queues.c",
    "sim/engine_exec.c",
    "sim/engine_kernels.c",
    "sim/engine_threads.c",
)
ENGINE_HEADERS = (
    "sim/engine.h",
    "sim/engine_internal.h",
    "sim/sim_bits.h",
    "sim/sim_tensormap.h",
    "kernels/ar_host_abi.h",
)
# The PTX interpreter (ffi/sim/ptx): cuda-sim runs PTX text with it.
PTX_SOURCES = (
    "sim/ptx/ptx_lex.c",
    "sim/ptx/ptx_operand.c",
    "sim/ptx/ptx_insn.c",
    "sim/ptx/ptx_insn_matrix.c",
    "sim/ptx/ptx_insn_async.c",
    "sim/ptx/ptx_parse.c",
    "sim/ptx/ptx_exec.c",
    "sim/ptx/ptx_exec_data.c",
    "sim/ptx/ptx_exec_int.c",
    "sim/ptx/ptx_exec_float.c",
    "sim/ptx/ptx_exec_cvt.c",
    "sim/ptx/ptx_exec_mem.c",
    "sim/ptx/ptx_exec_warp.c",
    "sim/ptx/ptx_exec_mma.c",
    "sim/ptx/ptx_exec_wmma.c",
    "sim/ptx/ptx_exec_wgmma.c",
    "sim/ptx/ptx_exec_async.c",
    "sim/ptx/ptx_exec_mbar.c",
    "sim/ptx/ptx_exec_bulk.c",
    "sim/ptx/ptx_exec_printf.c",
    "sim/ptx/ptx_query.c",
)
PTX_HEADERS = (
    "sim/ptx/ptx.h",
    "sim/ptx/ptx_internal.h",
    "sim/ptx/ptx_opcodes.def",
    "sim/ptx/ptx_parse.h",
    "sim/ptx/ptx_insn.h",
    "sim/ptx/ptx_mma_forms.h",
    "sim/ptx/ptx_exec.h",
)

LIBRARIES = [
    NativeLibrary(
        filename="libcuda.so.1",
        soname="libcuda.so.1",
        sources=(
            *ENGINE_SOURCES,
            "cuda/sim/cusim_init.c",
            "cuda/sim/cusim_core.c",
            "cuda/sim/cusim_submit.c",
            "cuda/sim/cusim_errors.c",
            "cuda/sim/cusim_stream.c",
            "cuda/sim/cusim_export.c",
            "cuda/sim/cusim_library.c",
            "cuda/sim/cusim_func.c",
            "cuda/sim/cusim_occupancy.c",
            "cuda/sim/cusim_tensormap.c",
            "cuda/sim/cusim_mem.c",
            "cuda/sim/cusim_peer.c",
            "cuda/sim/cusim_exec.c",
            "cuda/sim/cusim_printf.c",
            "cuda/sim/cusim_procaddr.c",
            "cuda/sim/cusim_ptds.c",
            "cuda/sim/cusim_pool.c",
            "cuda/sim/cusim_pool_loc.c",
            "cuda/sim/cusim_managed.c",
            "cuda/sim/cusim_ipc.c",
            "cuda/sim/cusim_link.c",
            "cuda/sim/cusim_fatbin.c",
            "cuda/sim/cusim_ptxsyms.c",
            "cuda/sim/cusim_graph_params.c",
            "cuda/sim/cusim_graph.c",
            "cuda/sim/cusim_graph_nodes.c",
            "cuda/sim/cusim_graph_mem.c",
            "cuda/sim/cusim_graph_launch.c",
            *PTX_SOURCES,
        ),
        depends=(
            *ENGINE_HEADERS,
            "cuda/sim/cuda_types.h",
            "cuda/sim/cusim.h",
            *PTX_HEADERS,
        ),
        # Only the API and the test hooks are exported; -Bsymbolic keeps the
        # library's own calls inside it even if another libcuda is loaded.
        # nodelete: its threads may still run queued work when a client
        # (cffi at interpreter exit) dlcloses it; unmapping the code under
        # them would crash the exit.
        cflags=("-fvisibility=hidden",),
        ldflags=("-Wl,-Bsymbolic", "-Wl,-z,nodelete", "-ldl", "-lm"),
    ),
]
