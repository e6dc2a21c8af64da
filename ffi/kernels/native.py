"""The portable kernels built for the CPU: the software drivers' module image.

The same sources build to PTX with nvcc (build_ptx.py) and to SPIR-V with
clang and llvm-spirv (build_spirv.py); see ar_portable.h.
"""

from __future__ import annotations

from ffi.build import NativeLibrary

#: Kept in step with aruntime/_kernel_images.py (ffi/ cannot import the package).
COMPUTE_MODULES = ("gemm", "conv2d", "attention", "reduce", "unary", "binary")

LIBRARIES = [
    NativeLibrary(
        filename="libarkernels_host.so",
        sources=("kernels/vector_ops.c",),
        cflags=("-fvisibility=hidden", "-Ikernels"),
        ldflags=("-lm",),
        depends=("kernels/ar_portable.h", "kernels/ar_pp.h", "kernels/ar_host_abi.h"),
    ),
    # The compute operations (issue 6): one module, and one host object, per source.
    *(
        NativeLibrary(
            filename=f"libarkernels_{name}.so",
            sources=(f"kernels/{name}.c",),
            cflags=("-fvisibility=hidden", "-Ikernels"),
            ldflags=("-lm",),
            depends=(
                "kernels/ar_portable.h",
                "kernels/ar_pp.h",
                "kernels/ar_host_abi.h",
                "kernels/ar_compute.h",
            ),
        )
        for name in COMPUTE_MODULES
    ),
]
