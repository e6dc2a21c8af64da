"""The per-device thread that replays graphs in launch order."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from ._constants import _QUEUE_MODE_ASYNC, _ST_COMMAND_QUEUE_DESC, _ST_FENCE_DESC
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._handles import _ZeEvent, _ZeGraph, _ZeStream

#: One replay: (ready, graph, done, stream, the stream's record count at launch).
Job = tuple[_ZeEvent, _ZeGraph, _ZeEvent, _ZeStream, int]


class _GraphLauncher:
    """One thread per device that replays graphs in launch order (see the driver's docstring).

    It owns a command queue and a fence; ``run`` (the driver's replay step)
    is called on the thread with each job, the queue and the fence.
    """

    def __init__(
        self,
        lib: Any,
        context: Any,
        device: Any,
        ordinal: int,
        check: Callable[[int, str], None],
        run: Callable[[_ZeEvent, _ZeGraph, _ZeEvent, _ZeStream, int, Any, Any], None],
        name: str,
    ) -> None:
        self._lib = lib
        self._replay = run
        desc = ffi.new("ze_command_queue_desc_t*")
        desc.stype = _ST_COMMAND_QUEUE_DESC
        desc.ordinal = ordinal
        desc.mode = _QUEUE_MODE_ASYNC
        out = ffi.new("ze_command_queue_handle_t*")
        check(lib.zeCommandQueueCreate(context, device, desc, out), "zeCommandQueueCreate")
        self._queue = out[0]
        fdesc = ffi.new("ze_fence_desc_t*")
        fdesc.stype = _ST_FENCE_DESC
        fence = ffi.new("ze_fence_handle_t*")
        rc = lib.zeFenceCreate(self._queue, fdesc, fence)
        if rc != ZE_RESULT_SUCCESS:
            lib.zeCommandQueueDestroy(self._queue)
            check(rc, "zeFenceCreate")
        self._fence = fence[0]
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, ready: _ZeEvent, graph: _ZeGraph, done: _ZeEvent, stream: _ZeStream, position: int
    ) -> None:
        self._jobs.put((ready, graph, done, stream, position))

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._replay(*job, self._queue, self._fence)

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()
        self._lib.zeFenceDestroy(self._fence)
        self._lib.zeCommandQueueDestroy(self._queue)
