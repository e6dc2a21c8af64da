"""The README's example runs unchanged, under asyncio and under trio."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    runnable = [b for b in blocks if "anyio.run(main" in b]
    assert len(runnable) == 1, "the README should have exactly one runnable example"
    return runnable[0]


def test_readme_opens_with_two_commands() -> None:
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    assert first_block is not None
    commands = [line for line in first_block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "aruntime demo" in commands[0]
    assert "pytest" in commands[1]


def test_readme_commands_use_the_virtual_environment_it_sets_up() -> None:
    """After ``python3 -m venv .venv``, every pip and python command is .venv/bin's (issue 22)."""
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", README.read_text(), flags=re.S)
    commands = [
        part.strip().removeprefix("$ ")
        for block in blocks
        for line in block.splitlines()
        for part in line.split("#", 1)[0].split("&&")
        if part.strip()
    ]
    assert any("sphinx" in c for c in commands), "the README shows how to build the docs"
    bare = [
        c
        for c in commands
        if re.match(r"(pip|python)\b", c) and not c.startswith("python3 -m venv")
    ]
    assert bare == [], f"use .venv/bin/pip or .venv/bin/python: {bare}"


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_readme_example_runs(library: str, tmp_path: Path) -> None:
    source = _example()
    if library == "trio":
        source = source.replace("anyio.run(main)", 'anyio.run(main, backend="trio")')
    script = tmp_path / "example.py"
    script.write_text(source)
    env = {**os.environ, "ARUNTIME_BACKEND": "mock", "PYTHONWARNINGS": "error"}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
