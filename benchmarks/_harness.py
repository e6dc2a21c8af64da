"""Shared plumbing for the scripts in benchmarks/: argument parsing, medians, tables.

Every ``bench_*.py`` here defines ``main(argv: list[str] | None = None) -> int``,
prints its own tables, and asserts nothing about time.  ``aruntime bench``
imports and runs them with no arguments; ``aruntime bench --quick`` passes the
module's ``QUICK_ARGV`` (arguments for a smoke run with small sizes, used by the
tests) and skips a module that does not define it.  A ``main`` that cannot run
on this machine (an optional package missing) prints why and returns
:data:`SKIPPED`, which ``aruntime bench`` reports as skipped, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()

#: ``main``'s status when the benchmark cannot run here (aruntime.cli.SKIPPED).
SKIPPED = 77


def parse_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds to take the median of")
    return parser.parse_args(argv)


def reason(exc: BaseException) -> str:
    """An exception's message on one line, whole.

    A backend's "unavailable; tried:" heading is followed by its listed causes
    (``- ...``), joined with "; ", so that the line does not stop at "tried:".
    """
    text = ""
    for line in (raw.strip() for raw in str(exc).splitlines()):
        if line.startswith("- "):
            text += (" " if text.endswith(":") else "; ") + line[2:].strip()
        elif line:
            text = f"{text} {line}" if text else line
    return text or type(exc).__name__


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def verdict(ratio: float, target: float, *, at_most: bool) -> str:
    """'met' or 'MISSED' against a target, for the table's last column (as :func:`mark`)."""
    ok = ratio <= target if at_most else ratio >= target
    bound = f"<= {target:g}x" if at_most else f">= {target:g}x"
    return f"[green]met[/] ({bound})" if ok else f"[red]MISSED[/] ({bound})"


def mark(ok: bool) -> str:
    """A plain-text verdict for a row with a target: a missed one says so."""
    return "met" if ok else "MISSED"


#: One line under a table of timings taken on a machine that others share.
NOISE = (
    "Timings vary from run to run on a shared or loaded machine (other processes take the "
    "cores the engines and waiters need); a missed target there is a hint, not a verdict."
)


def table(title: str, columns: Sequence[str]) -> Table:
    t = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        t.add_column(name, justify="left" if i == 0 else "right")
    return t


#: What a worker process prints before its one JSON line of results.
WORKER_MARK = "@@aruntime-bench-worker@@ "


def worker_result(result: Any) -> None:
    """In a worker process: hand ``result`` (JSON-able) to :func:`run_worker`."""
    print(WORKER_MARK + json.dumps(result), flush=True)


def run_worker(
    script: str, args: Sequence[str], env: Mapping[str, str] = {}
) -> dict[str, Any] | str:
    """Run ``script --worker ARGS`` in a fresh interpreter; its results, or why there are none.

    A fresh process per measurement: the sims' engine threads and knobs live
    as long as the process.  From a checkout the worker imports the
    checkout's aruntime; an installed copy (aruntime/_benchmarks) is
    importable already.
    """
    full = dict(os.environ, **env)
    here = Path(script).resolve().parent
    if (here.parent / "aruntime").is_dir():
        root = str(here.parent)
        full["PYTHONPATH"] = os.pathsep.join(p for p in (root, full.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, str(Path(script).resolve()), "--worker", *args]
    proc = subprocess.run(cmd, env=full, capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith(WORKER_MARK):
            result: dict[str, Any] = json.loads(line[len(WORKER_MARK) :])
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()
    return f"failed (exit {proc.returncode}): {tail[-1] if tail else 'no output'}"


def add_backend_rows(
    out: Table,
    script: str,
    backends: Sequence[str],
    worker_args: Callable[[str], Sequence[str]],
    ops: Sequence[str],
    cell: Callable[[Any], str],
) -> None:
    """One row per backend, each measured by ``script``'s worker in a fresh process.

    The worker's result maps each of ``ops`` to what ``cell`` formats; a
    backend whose worker gave no result gets its reason in the first cell.
    """
    for backend in backends:
        result = run_worker(script, worker_args(backend))
        if isinstance(result, str):
            out.add_row(backend, f"- ({result[:40]})", *["-"] * (len(ops) - 1))
        else:
            out.add_row(backend, *(cell(result[op]) for op in ops))
