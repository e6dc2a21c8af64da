"""Modules, kernels and launches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._driver import DriverFunction, DriverModule, DriverStream, LaunchConfig
from ..._exceptions import InvalidArgumentError
from ..._kernel_args import check_arg_sizes
from ..._kernel_images import PORTABLE_MODULES, host_library_name, sim_kernel_kind
from ..._native import native_library_path
from . import _errors
from ._base import _CudaBase, _current
from ._ffi import CData
from ._handles import _Function, _Stream
from ._params import pack_once, signature_block

#: A signature not laid out yet (``None`` in the cache means: pack it per launch).
_UNLAID: Any = object()

_PACKAGE_DIR = Path(__file__).resolve().parents[2]
#: Portable kernel modules -> the host shared object the sim runs them from.
_SIM_BUILTIN_MODULES = {name: host_library_name(name) for name in PORTABLE_MODULES}


class _ModuleOps(_CudaBase):
    # -- modules and kernels -------------------------------------------------------
    def module_image_types(self) -> tuple[type, ...]:
        """Binary images as bytes; PTX as bytes or as its text (a ``str``)."""
        return (bytes, bytearray, memoryview, str)

    def module_load(self, image: Any) -> DriverModule:
        """Load PTX (bytes or str), cubin or fatbin bytes (on the sim: a shared object's bytes)."""
        self._enter("cuModuleLoadDataEx")
        data = image.encode() if isinstance(image, str) else bytes(image)
        if not data:
            raise InvalidArgumentError("load_module: the module image is empty")
        binary = data.startswith((b"\x7fELF", b"\x50\xed\x55\xba"))  # ELF cubin/.so, fatbin
        if not binary and not data.endswith(b"\0"):
            data += b"\0"  # PTX is text, and the driver reads it up to a NUL
        out = self._ffi.new("CUmodule *")
        logs = _JitLogs(self._ffi)
        code = self._lib.cuModuleLoadDataEx(out, data, logs.count, logs.options, logs.values)
        if code != 0:
            raise self._fail(code, "cuModuleLoadDataEx", logs.text())
        return DriverModule(out[0])

    def builtin_module_image(self, name: str) -> Any:
        """aruntime's portable kernels: the committed PTX (a GPU's and, by default, the sim's).

        With ``ARUNTIME_SIM_KERNELS=host`` the sim loads the host shared object instead.
        """
        if self._library.sim and sim_kernel_kind() == "host":
            filename = _SIM_BUILTIN_MODULES.get(name)
            if filename is not None:
                return native_library_path(filename).read_bytes()
        ptx = _PACKAGE_DIR / "kernels" / f"{name}.ptx"
        if ptx.is_file():
            return ptx.read_bytes()
        return super().builtin_module_image(name)

    def module_unload(self, module: DriverModule) -> None:
        if not self._enter_release():
            return
        self._release_call("cuModuleUnload", lambda: self._lib.cuModuleUnload(module))

    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        self._enter("cuModuleGetFunction")
        out = self._ffi.new("CUfunction *")
        code = self._lib.cuModuleGetFunction(out, module, name.encode())
        if code == _errors.CUDA_ERROR_NOT_FOUND:
            raise InvalidArgumentError(f"kernel: the module has no kernel named {name!r}")
        self._check(code, "cuModuleGetFunction")
        address = int(self._ffi.cast("uintptr_t", out[0]))
        return DriverFunction(_Function(out[0], address, name, self._param_sizes(out[0])))

    def _param_sizes(self, handle: CData) -> tuple[int, ...] | None:
        """Each parameter's size from ``cuFuncGetParamInfo``; None where the driver lacks it.

        The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter,
        which is how the count is learnt.  A driver older than 12.4 (or any
        other failure) leaves the launch unchecked, as it was.
        """
        if not self._has_param_info:
            return None
        offset = self._ffi.new("size_t *")
        size = self._ffi.new("size_t *")
        sizes: list[int] = []
        while True:
            code = self._lib.cuFuncGetParamInfo(handle, len(sizes), offset, size)
            if code == _errors.CUDA_ERROR_INVALID_VALUE:
                return tuple(sizes)
            if code != 0:
                return None
            sizes.append(int(size[0]))

    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[Any],
        stream: DriverStream,
    ) -> None:
        """Enqueue ``cuLaunchKernel``.

        Each argument becomes the bytes the kernel parameter holds: a
        DevicePtr its 64-bit address, a numpy scalar its native bytes, raw
        bytes as they are.  They are packed into one buffer (each at a
        16-byte aligned offset) that, with the ``void**`` array pointing into
        it, stays referenced until ``cuLaunchKernel`` returns; the driver
        copies parameters at launch (and at capture).

        Where the driver reports the kernel's parameters
        (``cuFuncGetParamInfo``), a wrong argument count or size raises
        InvalidArgumentError here: ``cuLaunchKernel`` itself reads as many
        bytes as each parameter holds from wherever the pointers point.
        """
        # Annotations, not cast(): a call each, on every launch.
        f: _Function = function  # type: ignore[assignment]
        s: _Stream = stream  # type: ignore[assignment]
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuLaunchKernel")
        signature = tuple(map(type, args))
        block = f.blocks.get(signature, _UNLAID)
        if block is _UNLAID:
            block = f.blocks[signature] = signature_block(self._ffi, f.name, f.param_sizes, args)
        if self._note_launch_site is not None:
            self._note_launch_site()
        if config.shared_mem > f.shared_ok:
            self._opt_in_shared(f, config.shared_mem)
        if block is None:  # a signature laid out per launch (raw bytes, complex)
            if f.param_sizes is not None:
                check_arg_sizes(f.name, f.param_sizes, args)
            params, blob = pack_once(self._ffi, args)
            code = self._cu_launch(f, config, s, params)
            del blob  # kept alive until here on purpose
        else:
            with block.lock:  # the driver copies the parameters before it returns
                block.pack(args)
                code = self._cu_launch(f, config, s, block.params)
        if code != 0:
            raise self._fail(code, "cuLaunchKernel")

    def _opt_in_shared(self, f: _Function, nbytes: int) -> None:
        """Let launches of ``f`` ask for ``nbytes`` of dynamic shared memory.

        Past the default (48 KiB less the kernel's static shared memory) a
        launch needs the kernel's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` raised, as
        Triton's launcher does; the core has checked ``nbytes`` against the
        device's opt-in limit, which the kernel's static shared memory shares.
        The attribute only ever rises, so a launch on another thread that
        asked for less keeps what it was allowed.
        """
        with self._shared_lock:
            if nbytes <= f.shared_ok:
                return
            allowed = self._function_attribute(f, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            if nbytes > allowed:
                code = self._lib.cuFuncSetAttribute(
                    f.handle, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
                )
                if code == _errors.CUDA_ERROR_INVALID_VALUE:
                    static = self._function_attribute(f, _CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
                    raise InvalidArgumentError(
                        f"launch: shared_mem {nbytes} bytes and kernel {f.name!r}'s {static} "
                        f"bytes of static shared memory exceed the device's shared memory per "
                        f"block with the opt-in (cuFuncSetAttribute refused "
                        f"MAX_DYNAMIC_SHARED_SIZE_BYTES={nbytes})"
                    )
                self._check(code, "cuFuncSetAttribute")
                allowed = nbytes
            f.shared_ok = allowed

    def _function_attribute(self, f: _Function, attribute: int) -> int:
        out = self._ffi.new("int *")
        self._check(self._lib.cuFuncGetAttribute(out, attribute, f.handle), "cuFuncGetAttribute")
        return int(out[0])

    def _cu_launch(self, f: _Function, config: LaunchConfig, s: _Stream, params: CData) -> int:
        gx, gy, gz = config.grid
        bx, by, bz = config.block
        return int(
            self._lib.cuLaunchKernel(
                f.handle,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                config.shared_mem,
                s.handle,
                params,
                self._ffi.NULL,
            )
        )


#: cuda.h's CUfunction_attribute values the shared-memory opt-in reads and sets.
_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

#: cuda.h's CUjit_option values for the JIT's logs.
_CU_JIT_INFO_LOG_BUFFER = 3
_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_JIT_LOG_BYTES = 4096


class _JitLogs:
    """The error and info log buffers of one ``cuModuleLoadDataEx``.

    A refused module's error log (ptxas's message on a GPU, ``ptx line N:
    ...`` on cuda-sim) is what tells the user which line and construct;
    it goes into the DriverError's message, the info log after it.
    """

    count = 4

    def __init__(self, ffi: Any) -> None:
        self.error = ffi.new("char[]", _JIT_LOG_BYTES)
        self.info = ffi.new("char[]", _JIT_LOG_BYTES)
        self.options = ffi.new(
            "CUjit_option[]",
            [
                _CU_JIT_ERROR_LOG_BUFFER,
                _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                _CU_JIT_INFO_LOG_BUFFER,
                _CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            ],
        )
        size = ffi.cast("void *", _JIT_LOG_BYTES)
        self.values = ffi.new("void *[]", [self.error, size, self.info, size])
        self._ffi = ffi

    def text(self) -> str:
        """``JIT error log: ...`` (and ``JIT info log: ...``), or "" when both are empty."""
        parts = []
        for label, buf in (("error", self.error), ("info", self.info)):
            words = self._ffi.string(buf, _JIT_LOG_BYTES).decode(errors="replace").strip()
            if words:
                parts.append(f"JIT {label} log: {words}")
        return "; ".join(parts)
