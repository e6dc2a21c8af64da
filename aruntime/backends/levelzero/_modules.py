"""Modules (SPIR-V or native), kernels and launches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ..._driver import DriverFunction, DriverModule, DriverStream, LaunchConfig
from ..._enqueue import ze_append
from ..._exceptions import InvalidArgumentError, NotSupportedError
from ..._kernel_args import arg_bytes, check_arg_count, describe_arg
from ..._memory import DevicePtr
from ._base import _LevelZeroBase
from ._constants import (
    _FORMAT_NATIVE,
    _FORMAT_SPIRV,
    _INDIRECT_ALL,
    _INVALID_KERNEL_ARGUMENT_INDEX,
    _INVALID_KERNEL_ARGUMENT_SIZE,
    _INVALID_KERNEL_NAME,
    _SPIRV_MAGIC,
    _ST_KERNEL_DESC,
    _ST_KERNEL_PROPERTIES,
    _ST_MODULE_DESC,
    _UNSUPPORTED_FEATURE,
)
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi, table_slot
from ._handles import _ZeKernel, _ZeModule, _ZeStream

_LAUNCH = "zeCommandListAppendLaunchKernel"


class _ModuleOps(_LevelZeroBase):
    @staticmethod
    def image_format(image: bytes | bytearray | memoryview) -> int:
        """``ZE_MODULE_FORMAT_IL_SPIRV`` for a SPIR-V image, else ``ZE_MODULE_FORMAT_NATIVE``."""
        head = bytes(memoryview(image)[:4])
        if len(head) == 4 and _SPIRV_MAGIC in (
            int.from_bytes(head, "little"),
            int.from_bytes(head, "big"),
        ):
            return _FORMAT_SPIRV
        return _FORMAT_NATIVE

    def module_load(self, image: Any) -> DriverModule:
        desc = ffi.new("ze_module_desc_t*")
        desc.stype = _ST_MODULE_DESC
        desc.format = self.image_format(image)
        desc.pBuildFlags = ffi.new("char[]", b"")
        module = ffi.new("ze_module_handle_t*")
        log = ffi.new("ze_module_build_log_handle_t*")
        data = ffi.from_buffer("uint8_t[]", image)
        try:  # zeModuleCreate copies the image: release the buffer export at once
            desc.inputSize = len(data)
            desc.pInputModule = data
            rc = self._lib.zeModuleCreate(self._context, self._device, desc, module, log)
        finally:
            ffi.release(data)
        text = self._build_log(log[0])
        kind = "SPIR-V" if desc.format == _FORMAT_SPIRV else "native"
        size = int(desc.inputSize)
        self._check(rc, "zeModuleCreate", f"{kind} image of {size} bytes. {text}".strip())
        return cast(DriverModule, _ZeModule(module[0]))

    def _build_log(self, log: Any) -> str:
        if log == ffi.NULL:
            return ""
        try:
            size = ffi.new("size_t*", 0)
            if self._lib.zeModuleBuildLogGetString(log, size, ffi.NULL) or not size[0]:
                return ""
            buf = ffi.new("char[]", size[0])
            if self._lib.zeModuleBuildLogGetString(log, size, buf):
                return ""
            text: str = ffi.string(buf).decode(errors="replace").strip()
            return f"build log: {text}" if text else ""
        finally:
            self._lib.zeModuleBuildLogDestroy(log)

    def module_unload(self, module: DriverModule) -> None:
        m = cast(_ZeModule, module)
        # Kernels must go before their module.
        for kernel in m.kernels.values():
            self._lib.zeKernelDestroy(kernel.handle)
        m.kernels.clear()
        self._check(self._lib.zeModuleDestroy(m.handle), "zeModuleDestroy")

    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        m = cast(_ZeModule, module)
        with self._lock:
            cached = m.kernels.get(name)
        if cached is not None:
            return cast(DriverFunction, cached)
        desc = ffi.new("ze_kernel_desc_t*")
        desc.stype = _ST_KERNEL_DESC
        cname = ffi.new("char[]", name.encode())
        desc.pKernelName = cname
        out = ffi.new("ze_kernel_handle_t*")
        rc = self._lib.zeKernelCreate(m.handle, desc, out)
        if rc == _INVALID_KERNEL_NAME:
            raise InvalidArgumentError(f"kernel: the module has no kernel named {name!r}")
        self._check(rc, "zeKernelCreate", repr(name))
        self._allow_indirect_access(out[0])
        kernel = _ZeKernel(out[0], name, self._num_args(out[0]))
        with self._lock:
            existing = m.kernels.setdefault(name, kernel)
        if existing is not kernel:
            self._lib.zeKernelDestroy(kernel.handle)
        return cast(DriverFunction, existing)

    def _num_args(self, kernel: Any) -> int | None:
        """The kernel's argument count, or None where the driver does not say."""
        try:
            get_properties = self._lib.zeKernelGetProperties
        except AttributeError:  # a directly loaded driver that lacks it
            return None
        props = ffi.new("ze_kernel_properties_t*")
        props.stype = _ST_KERNEL_PROPERTIES
        if get_properties(kernel, props) != ZE_RESULT_SUCCESS:
            return None
        return int(props.numKernelArgs)

    def _allow_indirect_access(self, kernel: Any) -> None:
        """Let the kernel reach every USM allocation, not only its arguments.

        A kernel that follows a pointer stored in device memory faults on an
        Intel GPU unless its allocation kinds are declared (SYCL declares all
        three).  A driver without the call (the sim) needs no declaration.
        """
        try:
            set_access = self._lib.zeKernelSetIndirectAccess
        except AttributeError:  # a directly loaded driver that lacks it
            return
        rc = set_access(kernel, _INDIRECT_ALL)
        if rc not in (ZE_RESULT_SUCCESS, _UNSUPPORTED_FEATURE):
            self._check(rc, "zeKernelSetIndirectAccess")

    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[Any],
        stream: DriverStream,
    ) -> None:
        k: _ZeKernel = function  # type: ignore[assignment]  # not cast(): a call per launch
        if config.shared_mem:
            raise NotSupportedError(
                f"launch: shared_mem={config.shared_mem}: Level Zero has no per-launch dynamic "
                "shared memory; declare local memory in the kernel instead",
                backend=self.backend_name,
                function="zeCommandListAppendLaunchKernel",
            )
        # A kernel launched with arguments left unset would read whatever
        # an earlier launch left there, so the count is checked first.
        if k.num_args is not None and len(args) != k.num_args:
            check_arg_count(k.name, k.num_args, args)
        values = [arg_bytes(arg) for arg in args]
        # The argument values live on the kernel object until the append
        # copies them: one launch of a kernel at a time, and only what
        # differs from the kernel's last launch is set again.
        with k.lock:
            if k.block != config.block:
                k.block = None
                self._check(
                    self._lib.zeKernelSetGroupSize(k.handle, *config.block),
                    "zeKernelSetGroupSize",
                    f"kernel {k.name!r}, block {config.block}",
                )
                k.block = config.block
            if k.grid != config.grid:
                k.groups = ffi.new("ze_group_count_t*", list(config.grid))
                k.groups_address = int(ffi.cast("uintptr_t", k.groups))
                k.grid = config.grid
            held = k.args
            if len(held) < len(values):
                held.extend([None] * (len(values) - len(held)))
            for index, value in enumerate(values):
                if held[index] != value:
                    held[index] = None  # unknown until the driver has taken it
                    self._set_arg(k, index, value, args)
                    held[index] = value
            if self._note_launch_site is not None:
                self._note_launch_site()
            self._append_launch(stream, k)  # type: ignore[arg-type]

    def _append_launch(self, s: _ZeStream, k: _ZeKernel) -> None:
        """Append ``k``'s launch with what it holds (caller holds ``k.lock``), on any list."""
        calls = self._calls
        if calls is not None:
            compiled = (k.address, k.groups_address, calls.table)
            self._append_call(s, False, calls.launch, compiled, _LAUNCH, compiled=True)
            return
        plain = (k.handle, k.groups, ffi.NULL, 0, ffi.NULL)
        self._append_call(s, False, self._lib.zeCommandListAppendLaunchKernel, plain, _LAUNCH)

    def _install_launch(self) -> None:
        """Let a plain launch be made without Python (``ffi/core/zeappend.c``).

        ``launch`` becomes a ZeAppend, an instance attribute over the method.
        A launch of a kernel whose argument count is known, given that many
        numpy scalars, bytes or DevicePtrs, with the group size and grid the
        kernel object holds already and no shared memory, sets in C the
        arguments that differ from what the kernel holds, notes the sim's
        launch site and appends; on a list other than the stream's newest
        it appends through :meth:`_append_launch`.  A failed argument is set
        again by :meth:`_set_arg`, which names it.  Every other launch runs
        the method.  Nothing is installed without the compiled calls or
        where the compiled enqueue is off.
        """
        calls = self._calls
        if calls is None:
            return
        made = ze_append(
            self,
            _ModuleOps.launch,
            _ModuleOps._compiled_append_failed,
            shape="launch",
            name=_LAUNCH,
            function=table_slot(calls, _LAUNCH),
            barrier=table_slot(calls, "zeCommandListAppendBarrier"),
            table=calls.table,
            host_limit=0,
            launch={
                "set_arg": table_slot(calls, "zeKernelSetArgumentValue"),
                "set_again": _ModuleOps._set_arg,
                "append_other": _ModuleOps._append_launch,
                "note": self._note_launch_site,
                "scalars": np.generic,
                "pointers": DevicePtr,
            },
        )
        if made is not None:
            vars(self)["launch"] = made

    def _set_arg(self, k: _ZeKernel, index: int, value: bytes, args: Sequence[Any]) -> None:
        size = len(value)
        rc = self._lib.zeKernelSetArgumentValue(k.handle, index, size, ffi.from_buffer(value))
        if rc == _INVALID_KERNEL_ARGUMENT_SIZE:
            raise InvalidArgumentError(
                f"launch: kernel {k.name!r} argument {index}: the driver rejects "
                f"its size, {size} bytes ({describe_arg(args[index])}), as not the "
                "parameter's size"
            )
        if rc == _INVALID_KERNEL_ARGUMENT_INDEX:
            raise InvalidArgumentError(
                f"launch: kernel {k.name!r} takes fewer than {len(args)} arguments"
            )
        self._check(rc, "zeKernelSetArgumentValue", f"kernel {k.name!r}, argument {index}")
