"""The ``aruntime`` command: ``info``, ``demo`` and ``bench``.

Every command has ``--help``.  A failure exits non-zero with one line on
stderr naming the command and the reason (set ``ARUNTIME_DEBUG=1`` for the
traceback instead: for ``bench``, each failing benchmark's own traceback, printed
as it fails).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ._demo import DemoConfig, DemoResult, can_trace, run_demo
from ._exceptions import AruntimeError
from ._native import SIM_LIBRARIES, sim_environment
from ._registry import BACKEND_NAMES, BackendStatus, open_backend, probe_backends, resolve_auto

__all__ = ["main"]

#: ``--backend best``, the demo's default: real devices, then the sims (whose engines
#: overlap), then the mock.  ``--backend auto`` is ``open_backend("auto")``'s rule instead:
#: ARUNTIME_BACKEND, else a real CUDA device, else a real Level Zero device, else the mock.
DEMO_ORDER = ("cuda", "levelzero", "cuda-sim", "levelzero-sim", "mock")

_MIB = 1 << 20

#: The overlap (busiest engine busy / device time) the pipelined pass should reach.
OVERLAP_TARGET = 0.8


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class CommandError(Exception):
    """A failure the CLI reports as one line."""


# Every argument is checked before anything runs, and every bad one is
# reported the same way: argparse's one line, "aruntime demo: error: argument
# --chunks: must be >= 1, got 0 (see aruntime demo --help)", exit status 2.
# The types below check one value each; _check_demo the limits that depend on
# several (and, once the backend is open, on its memory).


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _chunk_mb(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0 (MiB), got {text}")
    if _chunk_bytes(value) < 4:
        raise argparse.ArgumentTypeError(
            f"must hold at least one float32 (4 bytes, {4 / _MIB:.2g} MiB), got {text}"
        )
    return value


def _chunk_bytes(chunk_mb: float) -> int:
    """A chunk's bytes: ``chunk_mb`` MiB, rounded down to whole float32s."""
    return int(chunk_mb * _MIB) // 4 * 4


def _host_memory() -> int | None:
    """This machine's physical memory in bytes, or None where it cannot tell."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _check_demo(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The demo's checks that span several arguments or the file system; exit 2 on failure."""
    chunk_bytes = _chunk_bytes(args.chunk_mb)
    host_bytes = 2 * args.chunks * chunk_bytes
    limit = _host_memory()
    if limit is not None and host_bytes > limit:
        parser.error(
            f"argument --chunk-mb: {args.chunk_mb:g} MiB x {args.chunks} chunks needs "
            f"{_size(host_bytes)} of pinned host memory (input and output), more than this "
            f"machine's {_size(limit)}; use a smaller --chunk-mb or fewer --chunks"
        )
    if args.trace is not None and not args.no_trace:
        path = Path(args.trace)
        folder = path.parent if str(path.parent) else Path(".")
        if not path.name or path.is_dir():
            parser.error(f"argument --trace: {args.trace!r} is a folder, not a file")
        if not folder.is_dir():
            parser.error(f"argument --trace: the folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            parser.error(f"argument --trace: the folder {str(folder)!r} is not writable")


def _check_device_memory(
    parser: argparse.ArgumentParser, args: argparse.Namespace, total: int, backend: str
) -> None:
    """Exit 2 if the streams' device buffers cannot fit on the device."""
    need = args.streams * _chunk_bytes(args.chunk_mb)
    if need > total:
        parser.error(
            f"argument --chunk-mb: {args.chunk_mb:g} MiB x {args.streams} streams needs "
            f"{_size(need)} of device memory, more than {backend}'s {_size(total)}; use a "
            "smaller --chunk-mb or fewer --streams"
        )


def _parser() -> _Parser:
    parser = _Parser(
        prog="aruntime",
        description="aruntime: an async-first GPU runtime for asyncio and trio.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"aruntime {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    info = sub.add_parser(
        "info",
        help="list every backend, its devices, or why it is unavailable",
        description="List every backend: whether it can be opened here, its devices "
        "(memory, compute units), and why an unavailable one is unavailable.",
    )
    info.set_defaults(func=_cmd_info)

    demo = sub.add_parser(
        "demo",
        help="run an overlapped copy/compute/copy pipeline",
        description="Run an overlapped pipeline (H2D copy, scale_f32 kernel, D2H copy) "
        "over several streams, check the result against numpy and report how long each "
        "stage took and how much the streams overlapped.",
    )
    demo.add_argument(
        "--backend",
        choices=("best", "auto", *BACKEND_NAMES),
        default=None,
        help="backend to run on: 'best' is the first available of real CUDA, real Level "
        "Zero, cuda-sim, levelzero-sim and the mock; 'auto' is what open_backend('auto') "
        "opens (ARUNTIME_BACKEND, else real CUDA, else real Level Zero, else the mock) "
        "(default: ARUNTIME_BACKEND if set, else best)",
    )
    demo.add_argument("--chunks", type=_positive, default=16, help="chunks (default 16)")
    demo.add_argument(
        "--chunk-mb", type=_chunk_mb, default=4.0, help="MiB per chunk (default 4; may be < 1)"
    )
    demo.add_argument(
        "--streams", type=_positive, default=3, help="streams to spread chunks over (default 3)"
    )
    demo.add_argument(
        "--loop",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="event loop to run under (default asyncio)",
    )
    demo.add_argument("--no-progress", action="store_true", help="do not draw a progress bar")
    demo.add_argument(
        "--trace",
        metavar="PATH",
        default=None,
        help="write a Chrome trace of the pipelined pass here (default: "
        "aruntime-demo-trace.json in the temporary folder, where tracing is built in)",
    )
    demo.add_argument("--no-trace", action="store_true", help="write no trace")
    demo.set_defaults(func=_cmd_demo, parser=demo)

    bench = sub.add_parser(
        "bench",
        help="run the benchmarks and print their ratio tables",
        description="Run the benchmark scripts bench_*.py (installed with the package, "
        "or a source checkout's benchmarks/; each prints a table of ratios measured side "
        "by side) and report which failed.",
    )
    bench.add_argument("names", nargs="*", metavar="NAME", help="only these (e.g. await copy)")
    bench.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: small sizes, few rounds (benchmarks without QUICK_ARGV are skipped)",
    )
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="the benchmarks folder (default: a checkout's benchmarks/, else the installed copy)",
    )
    bench.set_defaults(func=_cmd_bench)

    env = sub.add_parser(
        "env",
        help="print the shell lines that make another program run on a sim",
        description="Print the environment (as shell 'export' lines) under which "
        "another program finds a sim as its driver: cuda-sim as libcuda.so.1 (numba, "
        "cuda.core), levelzero-sim as libze_loader.so.1 (dpctl and SYCL's Level Zero "
        'adapter).  Use it as: eval "$(aruntime env levelzero-sim)"',
    )
    env.add_argument("backend", choices=tuple(SIM_LIBRARIES), help="the sim to run on")
    env.set_defaults(func=_cmd_env)
    return parser


def _cmd_env(args: argparse.Namespace) -> int:
    for name, value in sim_environment(args.backend).items():
        print(f"export {name}={shlex.quote(value)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``aruntime`` command line; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        status: int = args.func(args)
        return status
    except KeyboardInterrupt:
        print(f"aruntime {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # A CommandError is the CLI's own verdict (a benchmark's traceback, say,
        # was printed where it happened): its traceback would show only the CLI.
        if os.environ.get("ARUNTIME_DEBUG") and not isinstance(exc, CommandError):
            raise
        print(f"aruntime {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    first = _flatten(str(exc))
    if isinstance(exc, (AruntimeError, CommandError)):
        return first or type(exc).__name__
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _flatten(text: str) -> str:
    """A message on one line, whole: a listed item (``- ...``) follows its heading.

    Reasons such as "the cuda backend is unavailable; tried:" end their first
    line with a colon and list the causes below it; the first line alone would
    stop mid-sentence.
    """
    head = ""
    for line in (raw.strip() for raw in text.strip().splitlines()):
        if not line:
            continue
        if line.startswith("- "):
            item = line[2:].strip()
            head = f"{head} {item}" if head.endswith(":") else f"{head}; {item}"
        else:
            head = f"{head} {line}" if head else line
    return head


def _console() -> Console:
    return Console(highlight=False)


# -- info ---------------------------------------------------------------------------
def _cmd_info(args: argparse.Namespace) -> int:
    del args
    console = _console()
    statuses = probe_backends()
    table = Table(title="aruntime backends", title_justify="left")
    table.add_column("backend", style="bold", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("device", min_width=16)
    table.add_column("memory", justify="right", no_wrap=True)
    table.add_column("compute units", justify="right")
    details = Table(title="device details", title_justify="left")
    details.add_column("device", style="bold", no_wrap=True)
    details.add_column("property", no_wrap=True)
    details.add_column("value", overflow="fold")
    missing = Table(title="why the unavailable ones are unavailable", title_justify="left")
    missing.add_column("backend", style="bold", no_wrap=True)
    missing.add_column("reason", overflow="fold")
    for status in statuses:
        if not status.available:
            table.add_row(status.name, "[red]unavailable[/]", "-", "-", "-")
            missing.add_row(status.name, _reason(status))
            continue
        for index, dev in enumerate(status.devices):
            table.add_row(
                status.name if index == 0 else "",
                "[green]available[/]" if index == 0 else "",
                f"{index}: {dev.name}",
                _gib(dev.total_memory),
                str(dev.compute_units),
            )
            for key, value in dev.extra:
                details.add_row(f"{status.name}:{index}", key, value)
    console.print(table)
    if details.row_count:
        console.print(details)
    if missing.row_count:
        console.print(missing)
    console.print(f"software drivers run kernels: [bold]{_sim_kernels()}[/]")
    pick, _ = _demo_choice(statuses)
    try:
        auto = resolve_auto()
    except AruntimeError as exc:  # a bad ARUNTIME_BACKEND
        auto = f"nothing ({_one_line(exc)})"
    console.print(f'open_backend("auto") opens: [bold]{auto}[/]')
    console.print(f"aruntime demo (--backend best) would run on: [bold]{pick}[/]")
    return 0


def _sim_kernels() -> str:
    """Which kernel builds the sims load (ARUNTIME_SIM_KERNELS), in words."""
    from ._kernel_images import sim_kernel_kind

    if sim_kernel_kind() == "host":
        return "host builds (ARUNTIME_SIM_KERNELS=host)"
    return "device code (PTX on cuda-sim, SPIR-V on levelzero-sim)"


def _gib(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):.1f} GiB" if nbytes >= 1 << 30 else f"{nbytes / _MIB:.0f} MiB"


# -- demo ---------------------------------------------------------------------------
def _reason(status: BackendStatus) -> str:
    """Why a backend is unavailable, without the repeated ``"name: "`` prefix."""
    text = status.reason.strip() or "unavailable"
    return text.removeprefix(f"{status.name}: ")


def _short(status: BackendStatus) -> str:
    """The gist of :func:`_reason` in whole clauses, for the demo's one-line note.

    A reason that lists what was tried is summed up by its last item that is
    more than an unset variable (the last fallback got furthest).  A long item
    is cut at its first clause ("libcuda.so.1 cannot be loaded"), never in the
    middle of one; ``aruntime info`` prints everything.
    """
    lines = [line.strip() for line in _reason(status).splitlines() if line.strip()]
    items = [line[2:].strip() for line in lines[1:] if line.startswith("- ")]
    telling = [item for item in items if not item.endswith(": not set")]
    text = (telling or items or lines)[-1]
    text = re.sub(r" \([^()]*\)", "", text).split(".  ", 1)[0].rstrip(".;: ")
    if len(text) <= _GIST:
        return text
    clause = text.split(": ", 1)[0]
    return clause


#: The longest gist of a backend's reason the demo prints.
_GIST = 100


def _demo_choice(statuses: list[BackendStatus]) -> tuple[str, str | None]:
    """The demo's backend and, when it is a sim or the mock, a line saying why."""
    by_name = {s.name: s for s in statuses}
    for name in DEMO_ORDER:
        status = by_name.get(name)
        if status is not None and status.available:
            break
    else:
        name = "mock"
    if name in ("cuda", "levelzero"):
        return name, None
    skipped = [n for n in DEMO_ORDER[: DEMO_ORDER.index(name)] if n in by_name]
    why = "; ".join(f"{n}: {_short(by_name[n])}" for n in skipped)
    kind = (
        "the mock (host-only, nothing overlaps)"
        if name == "mock"
        else f"the {name} software driver"
    )
    return name, f"Falling back to {kind}: {why} (details: aruntime info)."


def _cmd_demo(args: argparse.Namespace) -> int:
    import anyio

    console = _console()
    _check_demo(args.parser, args)
    chunk_bytes = _chunk_bytes(args.chunk_mb)
    config = DemoConfig(chunks=args.chunks, chunk_bytes=chunk_bytes, streams=args.streams)

    name = args.backend
    note = None
    forced = os.environ.get("ARUNTIME_BACKEND", "")
    if name is None and forced and forced != "auto":
        if forced not in BACKEND_NAMES:
            raise CommandError(
                f"ARUNTIME_BACKEND={forced!r} is not a backend; choose one of "
                f"{', '.join(BACKEND_NAMES)}"
            )
        name = forced
        note = f"Using {name} (from ARUNTIME_BACKEND)."
    if name == "auto":
        name = resolve_auto()
        note = f'Using {name}: what open_backend("auto") opens here.'
    if name is None or name == "best":
        name, note = _demo_choice(probe_backends())
    if args.loop == "trio" and importlib.util.find_spec("trio") is None:
        raise CommandError("trio is not installed (pip install 'aruntime[trio]')")
    if note:
        console.print(f"[yellow]{note}[/]", soft_wrap=True)

    gpu = open_backend(name)
    try:
        _check_device_memory(args.parser, args, gpu.total_memory(), gpu.name)
    except SystemExit:
        gpu.close()
        raise
    trace_path = None
    if not args.no_trace:
        if args.trace is not None and not can_trace(gpu):
            gpu.close()
            raise CommandError("--trace: this build of aruntime has no tracing (gpu.trace)")
        trace_path = args.trace or str(Path(tempfile.gettempdir()) / "aruntime-demo-trace.json")
    console.print(
        f"Pipeline on [bold]{gpu.name}[/] ({gpu.device.name}), under {args.loop}: "
        f"{config.chunks} chunks of {_size(chunk_bytes)} float32 over {config.streams} "
        f"streams; each chunk: H2D copy -> scale_f32 kernel (x2.5) -> D2H copy, with "
        "timing events around each stage; every op enqueued at once, then the downloads "
        "awaited.  The same work runs first on 1 stream (no overlap: each stage's own "
        f"time), then over {config.streams} streams."
    )
    progress = Progress(
        TextColumn("{task.description:>10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=args.no_progress,
    )

    async def run() -> DemoResult:
        async with gpu:
            with progress:
                tasks = {
                    "serial": progress.add_task("1 stream", total=config.chunks),
                    "pipelined": progress.add_task(
                        f"{config.streams} streams", total=config.chunks
                    ),
                }
                return await run_demo(
                    gpu, config, lambda phase, i: progress.advance(tasks[phase]), trace_path
                )

    result = anyio.run(run, backend=args.loop)
    _print_summary(console, result)
    if not result.correct:
        worst = max(result.serial.max_error, result.pipelined.max_error)
        raise CommandError(f"the results differ from numpy (max abs error {worst:g})")
    return 0


def _size(nbytes: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    if nbytes >= _MIB:
        return f"{nbytes / _MIB:.4g} MiB"
    return f"{nbytes / 1024:.4g} KiB" if nbytes >= 1024 else f"{nbytes} B"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print_summary(console: Console, r: DemoResult) -> None:
    stages = Table(
        title="stages on 1 stream (device time from timing events)", title_justify="left"
    )
    for col in ("stage", "engine", "ops", "bytes", "time (ms)", "GB/s"):
        stages.add_column(col, justify="left" if col in ("stage", "engine") else "right")
    for s in r.stages:
        rate = "-"
        if s.nbytes and s.ms:
            rate = f"{s.nbytes / (s.ms / 1e3) / 1e9:.2f}"
        stages.add_row(
            s.name, s.engine, str(s.ops), _size(s.nbytes) if s.nbytes else "-", _ms(s.ms), rate
        )
    console.print(stages)

    summary = Table(title="summary", title_justify="left", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    one, many = r.serial, r.pipelined
    summary.add_row("backend", f"{r.backend} ({r.device})")
    summary.add_row("bytes moved per pass", f"{_size(r.bytes_moved)} (H2D + D2H)")
    summary.add_row("wall time, 1 stream", f"{one.wall_ms:.3f} ms")
    summary.add_row(f"wall time, {many.streams} streams", f"{many.wall_ms:.3f} ms")
    share_one, share_many = one.overlap, many.overlap
    if not r.overlaps:
        # Its "device" times are the host's around each op: nothing to compare.
        summary.add_row(f"overlap, {many.streams} streams", overlap_verdict(r))
    elif share_one is not None and share_many is not None and one.span_ms and many.span_ms:
        summary.add_row("device time, 1 stream (no overlap)", f"{one.span_ms:.3f} ms")
        summary.add_row(f"device time, {many.streams} streams", f"{many.span_ms:.3f} ms")
        summary.add_row(
            "overlap, 1 stream: busiest engine busy / device time",
            f"{share_one:.2f}",
        )
        summary.add_row(
            f"overlap, {many.streams} streams: busiest engine ({r.busiest_engine}) busy / "
            "device time",
            f"{share_many:.2f}, {overlap_verdict(r)}",
        )
    else:
        summary.add_row("overlap", "not measurable: this backend has no timing events")
    worst = max(one.max_error, many.max_error)
    check = "[green]match numpy[/]" if r.correct else "[red]DIFFER from numpy[/]"
    summary.add_row("results", f"{check} (max abs error {worst:g})")
    if r.trace_path:
        summary.add_row("trace (Perfetto, chrome://tracing)", r.trace_path)
    console.print(summary)
    if share_many is not None and r.overlaps:
        console.print(
            "Overlap is the share of a pass's device time in which its busiest engine (H2D "
            "copy, compute or D2H copy) had work, from that pass's own timing events: 1.00 "
            "means the pass was as short as that engine allows, about 0.33 means no overlap "
            "of three equal stages.  On a shared or loaded machine it varies from run to run "
            "(other processes take the cores the engines need)."
        )
    if not r.overlaps:
        console.print(
            f"{r.backend} runs each op when it is enqueued, so nothing overlaps there: the "
            "pass on several streams shows the cost of the runtime, not a speed-up."
        )


def overlap_verdict(r: DemoResult) -> str:
    """The pipelined pass's overlap against :data:`OVERLAP_TARGET`, and its speed-up.

    The target is met only where the streams made the pass faster: a high
    overlap beside a pass no faster than one stream's is no overlap won (the
    one-stream pass already kept its busiest engine as busy).  On a backend
    whose streams cannot overlap there is no target and no speed-up.
    """
    if not r.overlaps:
        return (
            f"not possible: {r.backend} runs each op when it is enqueued, so its streams "
            "cannot overlap (no target, no speed-up)"
        )
    share_one, share_many, speedup = r.serial.overlap, r.pipelined.overlap, r.speedup
    if share_one is None or share_many is None or speedup is None:
        return "not measurable: this backend has no timing events"
    target = f"target >= {OVERLAP_TARGET:g}"
    faster = f"speed-up over 1 stream {speedup:.2f}x"
    already = ""
    if share_one >= OVERLAP_TARGET:
        already = (
            f"; 1 stream already kept its busiest engine busy {share_one:.2f} of the time, "
            "so there was little to overlap"
        )
    if speedup <= 1.0:
        streams = r.pipelined.streams
        return (
            f"{target} [red]MISSED[/]: {streams} streams were no faster than 1 ({faster}{already})"
        )
    if share_many >= OVERLAP_TARGET:
        return f"{target} [green]met[/] ({faster}{already})"
    return f"{target} [red]MISSED[/] ({faster})"


# -- bench --------------------------------------------------------------------------
def _bench_dir(given: Path | None) -> Path:
    """``--dir``, else the copy installed in the package, else a checkout's ``benchmarks/``."""
    if given is not None:
        if not given.is_dir():
            raise CommandError(f"--dir {given}: not a folder")
        return given
    package = Path(__file__).resolve().parent
    # A checkout's own folder first: it is what its tests and edits use, while
    # _benchmarks (written by the install) may be stale there.
    for folder in (package.parent / "benchmarks", package / "_benchmarks"):
        if (folder / "_harness.py").is_file():
            return folder
    raise CommandError(
        f"no benchmarks in {package / '_benchmarks'} (written by pip install) nor in "
        f"{package.parent / 'benchmarks'} (a source checkout): reinstall aruntime with "
        "pip, or pass --dir with the benchmarks/ folder of a checkout"
    )


def _cmd_bench(args: argparse.Namespace) -> int:
    console = _console()
    folder = _bench_dir(args.dir)
    scripts = sorted(folder.glob("bench_*.py"))
    if args.names:
        wanted = {n.removeprefix("bench_").removesuffix(".py") for n in args.names}
        unknown = wanted - {p.stem.removeprefix("bench_") for p in scripts}
        if unknown:
            known = ", ".join(p.stem.removeprefix("bench_") for p in scripts)
            raise CommandError(f"no benchmark named {', '.join(sorted(unknown))} (have: {known})")
        scripts = [p for p in scripts if p.stem.removeprefix("bench_") in wanted]
    if args.list:
        for p in scripts:
            console.print(p.stem.removeprefix("bench_"))
        return 0
    if not scripts:
        raise CommandError(f"no bench_*.py in {folder}")
    failed: list[str] = []
    sys.path.insert(0, str(folder))  # for the scripts' shared helpers
    try:
        for path in scripts:
            console.rule(path.stem)
            start = time.perf_counter()
            error = _run_script(path, quick=args.quick)
            if error == _NO_QUICK:
                console.print(f"({path.stem} has no quick mode (QUICK_ARGV); skipped)")
            elif error == _SKIPPED:
                console.print(f"({path.stem} cannot run here (see above); skipped)")
            elif error:
                failed.append(f"{path.stem}: {error}")
                console.print(f"[red]{path.stem} failed:[/] {error}")
            else:
                console.print(f"({path.stem}: {time.perf_counter() - start:.1f} s)")
    finally:
        sys.path.remove(str(folder))
    if failed:
        raise CommandError(f"{len(failed)} of {len(scripts)} benchmarks failed: {failed[0]}")
    return 0


_NO_QUICK = "no quick mode"
_SKIPPED = "cannot run here"

#: The status a benchmark's ``main`` returns when it cannot run on this machine
#: (a missing optional package, no real GPU), after printing why: a skip, not a failure.
SKIPPED = 77


def _run_script(path: Path, *, quick: bool) -> str | None:
    """Import one benchmark and run its ``main(argv)``; the reason if it failed.

    A full run passes no arguments.  A quick run passes the module's
    ``QUICK_ARGV`` (a list of arguments for a smoke run) and skips a module
    that has none.
    """
    spec = importlib.util.spec_from_file_location(f"_aruntime_bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        return "cannot be imported"
    module = importlib.util.module_from_spec(spec)
    # A module that is not in sys.modules while it runs breaks whatever looks
    # itself up there by name, @dataclass among them.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        entry = getattr(module, "main", None)
        if entry is None:
            return "has no main(argv)"
        argv: list[str] = []
        if quick:
            quick_argv = getattr(module, "QUICK_ARGV", None)
            if quick_argv is None:
                return _NO_QUICK
            argv = list(quick_argv)
        status = entry(argv)
    except SystemExit as exc:
        status = exc.code
    except Exception as exc:
        if os.environ.get("ARUNTIME_DEBUG"):
            traceback.print_exc()  # the benchmark's own traceback, not the CLI's
        return _one_line(exc)
    finally:
        sys.modules.pop(spec.name, None)
    if status == SKIPPED:
        return _SKIPPED
    if status not in (None, 0):
        return f"exited with status {status}"
    return None
