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
