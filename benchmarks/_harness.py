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
import statistics
from collections.abc import Sequence

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
    """'met' or 'missed' against a target, for the table's last column."""
    ok = ratio <= target if at_most else ratio >= target
    bound = f"<= {target:g}x" if at_most else f">= {target:g}x"
    return f"[green]met[/] ({bound})" if ok else f"[red]missed[/] ({bound})"


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
