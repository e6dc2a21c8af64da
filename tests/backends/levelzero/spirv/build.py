"""Rebuilds the SPIR-V test modules of this folder from their OpenCL C sources.

    python tests/backends/levelzero/spirv/build.py

Needs clang and llvm-spirv (``apt-get install clang-15 llvm-spirv-15``; clang
15 needs ``-no-opaque-pointers`` for llvm-spirv 15), and spirv-as for the
hand-written ``.spvasm`` modules (``apt-get install spirv-tools``).  The
``.spv`` files are committed so the tests need none of them.  ``executor.cl`` is built twice, at -O0
(the shape of the shipped kernels: allocas, loads and stores, calls) and at
-O2 (phis, selects, vector code).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLAGS = (
    "-x", "cl", "-cl-std=CL2.0", "-target", "spir64-unknown-unknown",
    "-Xclang", "-finclude-default-header", "-Xclang", "-no-opaque-pointers",
    "-emit-llvm", "-c",
)  # fmt: skip
BUILDS = {
    "executor_O0.spv": ("executor.cl", "-O0"),
    "executor_O2.spv": ("executor.cl", "-O2"),
    "refused_printf.spv": ("refused_printf.cl", "-O0"),
    "refused_image.spv": ("refused_image.cl", "-O0"),
    "order.spv": ("order.cl", "-O2"),
    "half_O0.spv": ("half.cl", "-O0"),
    "half_O2.spv": ("half.cl", "-O2"),
    "refused_half_math.spv": ("refused_half_math.cl", "-O0"),
    "half_math.spv": ("half_math.cl", "-O2"),
    "powr.spv": ("powr.cl", "-O2"),
    "byval_O0.spv": ("byval.cl", "-O0"),
    "byval_O2.spv": ("byval.cl", "-O2"),
    "local_arg_O0.spv": ("local_arg.cl", "-O0"),
    "local_arg_O2.spv": ("local_arg.cl", "-O2"),
    "misaligned.spv": ("misaligned.cl", "-O2"),
    "cl_exact.spv": ("cl_exact.cl", "-O2"),
    "half_groups.spv": ("half_groups.cl", "-O2"),
    "bitcast_lanes.spv": ("bitcast_lanes.cl", "-O0"),  # -O2 folds the casts into loads
    "local_slack.spv": ("local_slack.cl", "-O0"),  # every access a load or store
    "local_slack_big.spv": ("local_slack_big.cl", "-O0"),
    # Modules linked into one program (the module program extension).
    "link_kernel_O0.spv": ("link_kernel.cl", "-O0"),
    "link_kernel_O2.spv": ("link_kernel.cl", "-O2"),
    "link_lib_O0.spv": ("link_lib.cl", "-O0"),
    "link_lib_O2.spv": ("link_lib.cl", "-O2"),
    "link_lib2.spv": ("link_lib2.cl", "-O2"),
    "link_dup.spv": ("link_dup.cl", "-O2"),
    "link_mismatch.spv": ("link_mismatch.cl", "-O2"),
    "link_storage.spv": ("link_storage.cl", "-O2"),
    "intel_shuffle_vec.spv": ("intel_shuffle_vec.cl", "-O2"),
    "cl_ptr_out.spv": ("cl_ptr_out.cl", "-O2"),
}
# llvm-spirv's extensions for the modules that need one.
TRANSLATOR_FLAGS = {
    "intel_shuffle_vec.spv": ("--spirv-ext=+SPV_INTEL_subgroups",),
}
# Modules clang does not write (capabilities it never declares), from SPIR-V assembly.
ASM_BUILDS = {
    "float16_cap.spv": ("float16_cap.spvasm", "spv1.0"),
    "half_native.spv": ("half_native.spvasm", "spv1.0"),
    "vector16_cap.spv": ("vector16_cap.spvasm", "spv1.0"),
    "expect_assume.spv": ("expect_assume.spvasm", "spv1.0"),
    "aliasing.spv": ("aliasing.spvasm", "spv1.2"),  # OpDecorateId
    "fast_math.spv": ("fast_math.spvasm", "spv1.0"),
    "group_uniform.spv": ("group_uniform.spvasm", "spv1.0"),
    "func_init.spv": ("func_init.spvasm", "spv1.0"),
    "optnone.spv": ("optnone.spvasm", "spv1.0"),
    "conversions.spv": ("conversions.spvasm", "spv1.0"),
    "aggregates.spv": ("aggregates.spvasm", "spv1.0"),
    "refused_big_aggregate.spv": ("refused_big_aggregate.spvasm", "spv1.0"),
    "builtin_chain.spv": ("builtin_chain.spvasm", "spv1.0"),
    "builtin_ptrs.spv": ("builtin_ptrs.spvasm", "spv1.0"),
    "refused_builtin_store.spv": ("refused_builtin_store.spvasm", "spv1.0"),
    "refused_builtin_call.spv": ("refused_builtin_call.spvasm", "spv1.0"),
    "spec_const.spv": ("spec_const.spvasm", "spv1.0"),
}


def main() -> int:
    clang = shutil.which("clang-15") or shutil.which("clang")
    translator = shutil.which("llvm-spirv-15") or shutil.which("llvm-spirv")
    assembler = shutil.which("spirv-as")
    if not clang or not translator or not assembler:
        print("needs clang-15, llvm-spirv-15 and spirv-as", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for out, (source, opt) in BUILDS.items():
            bitcode = Path(tmp) / (out + ".bc")
            subprocess.run([clang, *FLAGS, opt, str(HERE / source), "-o", str(bitcode)], check=True)
            flags = TRANSLATOR_FLAGS.get(out, ())
            subprocess.run([translator, *flags, str(bitcode), "-o", str(HERE / out)], check=True)
            print(HERE / out)
    for out, (source, env) in ASM_BUILDS.items():
        cmd = [assembler, "--target-env", env, str(HERE / source), "-o", str(HERE / out)]
        subprocess.run(cmd, check=True)
        print(HERE / out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
