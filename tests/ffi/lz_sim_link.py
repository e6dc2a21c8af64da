"""Scenarios of program linking and specialization constants (lz_sim_scenarios.py).

SYCL links a program's SPIR-V modules with the module program extension
(``ZE_experimental_module_program``: a ``ze_module_program_exp_desc_t`` in
``zeModuleCreate``'s ``pNext``, its modules linked statically by SPIR-V
linkage), and sets specialization constants through ``pConstants``.  The
modules are ``tests/backends/levelzero/spirv/link_*.cl`` (clang 15 and
llvm-spirv 15: a kernel importing functions and a table from a library that
imports from a second one, which writes a float* parameter as a uint*) and
``spec_const.spvasm``.  Each scenario
checks that the driver lists the extension before it uses it, so that a
driver without it fails there rather than reading the descriptor's
placeholder input.
"""

from __future__ import annotations

import math
import struct
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

LINK_CDEF = """
typedef struct { uint32_t numConstants; const uint32_t *pConstantIds;
    const void **pConstantValues; } ze_module_constants_t;
typedef struct { uint32_t stype; const void *pNext; uint32_t count; const size_t *inputSizes;
    const uint8_t **pInputModules; const char **pBuildFlags;
    const ze_module_constants_t **pConstants; } ze_module_program_exp_desc_t;
ze_result_t zeModuleDynamicLink(uint32_t, ze_handle *, ze_handle *);
"""

EXTENSION = "ZE_experimental_module_program"
KERNEL, LIB, LIB2 = "link_kernel_{}.spv", "link_lib_{}.spv", "link_lib2.spv"
BIAS = np.array([0.5, -1.0, 2.0, 0.25], np.float32)


def scenarios(s: types.ModuleType) -> dict[str, Callable[[Any], None]]:
    """The scenarios, on the driver and helpers of lz_sim_scenarios.py (s)."""
    ze, ffi = s.ze, s.ffi

    def listed(env: Any) -> None:
        n = ffi.new("uint32_t *", 0)
        s.ck(ze.zeDriverGetExtensionProperties(env.driver, n, ffi.NULL))
        exts = ffi.new("ze_driver_extension_properties_t[]", n[0])
        s.ck(ze.zeDriverGetExtensionProperties(env.driver, n, exts))
        names = {ffi.string(e.name).decode(): e.version for e in exts}
        assert names.get(EXTENSION) == 1 << 16, names  # ZE_MODULE_PROGRAM_EXP_VERSION_1_0

    def log_text(log: Any) -> str:
        if log == ffi.NULL:
            return ""
        size = ffi.new("size_t *", 0)
        s.ck(ze.zeModuleBuildLogGetString(log, size, ffi.NULL))
        chars = ffi.new("char[]", size[0])
        s.ck(ze.zeModuleBuildLogGetString(log, size, chars))
        s.ck(ze.zeModuleBuildLogDestroy(log))
        return str(ffi.string(chars).decode())

    def constants(values: dict[int, bytes] | None) -> Any:
        if values is None:
            return ffi.NULL
        ids = ffi.new("uint32_t[]", list(values))
        bufs = [ffi.new("uint8_t[]", v) for v in values.values()]
        ptrs = ffi.new("const void *[]", bufs)
        c = ffi.new("ze_module_constants_t *", {"numConstants": len(values)})
        c.pConstantIds, c.pConstantValues = ids, ptrs
        keep.append((ids, bufs, ptrs))
        return c

    keep: list[Any] = []

    def program(
        env: Any, images: Sequence[str | bytes], consts: list[Any] | None = None, fmt: int = 0
    ) -> tuple[int, Any, str]:
        """zeModuleCreate with the program extension, as SYCL's Unified Runtime
        calls it: desc's own input a placeholder (1 byte at address 1)."""
        blobs = [i if isinstance(i, bytes) else (s.SPIRV_TESTS / i).read_bytes() for i in images]
        bufs = [ffi.new("uint8_t[]", b) for b in blobs]
        sizes = ffi.new("size_t[]", [len(b) for b in blobs])
        mods = ffi.new("const uint8_t *[]", bufs)
        pd = ffi.new(
            "ze_module_program_exp_desc_t *",
            {"stype": s.ze_constant("ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC"),
             "count": len(blobs), "inputSizes": sizes, "pInputModules": mods},
        )  # fmt: skip
        cptrs = ffi.new("const ze_module_constants_t *[]", consts) if consts else ffi.NULL
        pd.pConstants = cptrs
        desc = ffi.new(
            "ze_module_desc_t *",
            {"stype": s.ST_MODULE_DESC, "pNext": pd, "format": fmt, "inputSize": 1,
             "pInputModule": ffi.cast("uint8_t *", 1)},
        )  # fmt: skip
        mod, log = ffi.new("ze_handle *"), ffi.new("ze_handle *")
        r = ze.zeModuleCreate(env.ctx, env.device, desc, mod, log)
        return r, mod[0], log_text(log[0])

    def run_linked(env: Any, mod: Any) -> None:
        n = 64
        r, k = env.kernel(mod, "linked")
        s.ck(r, "zeKernelCreate(linked)")
        a = (np.arange(n, dtype=np.float32) * np.float32(0.03) - np.float32(1)).astype(np.float32)
        b = (np.arange(n) % 9 - 4).astype(np.float32)
        bufs = [env.alloc_device(n * 4) for _ in range(4)]
        for buf, src in zip(bufs[1:3], (a, b), strict=True):
            ffi.memmove(ffi.cast("float *", buf), src.tobytes(), n * 4)
        for i, buf in enumerate(bufs):
            s.ck(ze.zeKernelSetArgumentValue(k, i, 8, ffi.new("void **", buf)))
        s._launch(env, k, n // 16, 16)
        got, twice = (
            np.frombuffer(ffi.buffer(ffi.cast("float *", bufs[i]), n * 4), np.float32)
            for i in (0, 3)
        )
        bias = BIAS[np.arange(n) % 4]
        want = np.sqrt(np.exp(a) * np.float32(2) + np.abs(b) * np.float32(3)) + bias
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(twice, a * np.float32(2))
        s.ck(ze.zeKernelDestroy(k))
        for buf in bufs:
            s.ck(ze.zeMemFree(env.ctx, buf))

    def sc_link_program(env: Any) -> None:
        listed(env)
        for opt in ("O0", "O2"):
            kernel, lib = KERNEL.format(opt), LIB.format(opt)
            for order in ([kernel, lib, LIB2], [LIB2, lib, kernel]):
                r, mod, log = program(env, order)
                s.ck(r, f"{order}: {log}")
                assert log == "", log
                n = ffi.new("uint32_t *", 0)
                s.ck(ze.zeModuleGetKernelNames(mod, n, ffi.NULL))
                names = ffi.new("const char *[]", n[0])
                s.ck(ze.zeModuleGetKernelNames(mod, n, names))
                assert [ffi.string(x).decode() for x in names] == ["linked"], order
                st = s.ze_constant("ZE_STRUCTURE_TYPE_MODULE_PROPERTIES")
                props = ffi.new("ze_module_properties_t *", {"stype": st, "flags": 7})
                s.ck(ze.zeModuleGetProperties(mod, props))
                assert props.flags == 0, props.flags  # nothing left to import
                # What the Unified Runtime asks of a module with imports: linked already.
                handles, link_log = ffi.new("ze_handle[1]", [mod]), ffi.new("ze_handle *")
                s.ck(ze.zeModuleDynamicLink(1, handles, link_log), "zeModuleDynamicLink")
                assert log_text(link_log[0]) == ""
                run_linked(env, mod)
                s.ck(ze.zeModuleDestroy(mod))

    def refused(env: Any, images: Sequence[str | bytes], *words: str, want: int = 0) -> None:
        r, mod, log = program(env, images)
        s.expect(r, want or s.MODULE_BUILD_FAILURE, f"{images}: {log}")
        assert mod == ffi.NULL
        assert all(w in log for w in words), (images, log)

    def sc_link_refusals(env: Any) -> None:
        kernel, lib = KERNEL.format("O2"), LIB.format("O2")
        # The kernel module alone, without the program extension: its first
        # import that nothing exports, by name.
        r, _, log = env.module((s.SPIRV_TESTS / kernel).read_bytes(), fmt=0)
        s.expect(r, s.MODULE_BUILD_FAILURE, log)
        assert "lib_bias is imported, and no module exports it" in log, log
        listed(env)
        # An import no module exports (link_lib2 left out), named.
        refused(env, [kernel, lib], "lib_helper is imported, and no module exports it")
        # Two exports of one name; an export of another type than the import's.
        refused(env, [kernel, lib, LIB2, "link_dup.spv"], "lib_helper is exported twice")
        refused(env, [kernel, lib, "link_mismatch.spv"], "lib_helper is imported with another type")
        # Pointers compare by storage class (store_twice's float* and uint*
        # link): a __local one where a __global one is imported does not.
        refused(env, [kernel, lib, "link_storage.spv"], "store_twice is imported with another type")
        # Inputs that are no SPIR-V, no inputs, and native binaries.
        refused(env, [kernel, b"\0" * 64], "input module 1 is not a SPIR-V module")
        r, _, _ = program(env, [])
        s.expect(r, s.ze_constant("ZE_RESULT_ERROR_INVALID_SIZE"), "no input modules")
        r, _, log = program(env, [kernel, lib, LIB2], fmt=1)
        s.expect(r, s.INVALID_ARGUMENT, "native modules")
        assert "SPIR-V modules only" in log, log

    def spec_run(env: Any, mod: Any) -> list[int]:
        r, k = env.kernel(mod, "spec_values")
        s.ck(r, "zeKernelCreate(spec_values)")
        out = env.alloc_device(6 * 8)
        s.ck(ze.zeKernelSetArgumentValue(k, 0, 8, ffi.new("void **", out)))
        s._launch(env, k, 1, 1)
        got = list(ffi.cast("uint64_t *", out)[0:6])
        s.ck(ze.zeKernelDestroy(k))
        s.ck(ze.zeMemFree(env.ctx, out))
        s.ck(ze.zeModuleDestroy(mod))
        return got

    def single(env: Any, image: str, consts: Any) -> tuple[int, Any, str]:
        data = (s.SPIRV_TESTS / image).read_bytes()
        blob = ffi.new("uint8_t[]", data)
        desc = ffi.new(
            "ze_module_desc_t *",
            {"stype": s.ST_MODULE_DESC, "format": 0, "inputSize": len(data), "pInputModule": blob,
             "pConstants": consts},
        )  # fmt: skip
        mod, log = ffi.new("ze_handle *"), ffi.new("ze_handle *")
        r = ze.zeModuleCreate(env.ctx, env.device, desc, mod, log)
        return r, mod[0], log_text(log[0])

    def sc_spec_constants(env: Any) -> None:
        defaults = [7, 2**64 - 3, 2**40 + 5, 1, struct.unpack("<I", struct.pack("<f", 1.5))[0], 0]
        r, mod, log = single(env, "spec_const.spv", ffi.NULL)
        s.ck(r, log)
        assert spec_run(env, mod) == defaults
        values = {
            0: struct.pack("<I", 123456),
            1: struct.pack("<h", -2),
            2: struct.pack("<Q", 2**50 + 1),
            3: b"\0",
            4: struct.pack("<f", -2.25),
            5: b"\1",
        }
        bits = struct.unpack("<I", struct.pack("<f", -2.25))[0]
        want = [123456, 2**64 - 2, 2**50 + 1, 0, bits, 1]
        assert math.isclose(struct.unpack("<f", struct.pack("<I", bits))[0], -2.25)
        r, mod, log = single(env, "spec_const.spv", constants(values))
        s.ck(r, log)
        assert spec_run(env, mod) == want
        # Only some of them: the others keep their defaults.
        r, mod, log = single(env, "spec_const.spv", constants({3: b"\0"}))
        s.ck(r, log)
        assert spec_run(env, mod) == [*defaults[:3], 0, *defaults[4:]]
        # An id the module does not have.
        r, mod, log = single(env, "spec_const.spv", constants({99: b"\1\0\0\0"}))
        s.expect(r, s.MODULE_BUILD_FAILURE, log)
        assert "specialization constant 99 is not in the module" in log, log
        # Per module, through the program extension (the second input has none).
        listed(env)
        r, mod, log = program(env, ["spec_const.spv", LIB2], [constants(values), ffi.NULL])
        s.ck(r, log)
        assert spec_run(env, mod) == want
        keep.clear()

    return {
        "link_program": sc_link_program,
        "link_refusals": sc_link_refusals,
        "spec_constants": sc_spec_constants,
    }
