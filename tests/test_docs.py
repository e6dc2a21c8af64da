"""The documentation site (docs/): docstrings, API coverage, runnable examples, the knobs table.

The site itself is built by ``.ci/run`` with warnings as errors:
``.venv/bin/python -m sphinx -W --keep-going -b html docs site``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import aruntime
import aruntime.testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
KNOBS_PAGE = DOCS / "backends.md"
KNOB = re.compile(r"ARUNTIME_[A-Z0-9_]*[A-Z0-9]")


def _public() -> list[tuple[str, Any]]:
    names = [(f"aruntime.{n}", getattr(aruntime, n)) for n in aruntime.__all__]
    testing = aruntime.testing
    names += [(f"aruntime.testing.{n}", getattr(testing, n)) for n in testing.__all__]
    return names


def _comment_doc(qualname: str, value: Any) -> str:
    """A constant's ``#:`` comment (what autodoc shows), in whichever aruntime module assigns it."""
    attr = qualname.rpartition(".")[2]
    assigned = re.compile(rf"^{re.escape(attr)}\s*(:[^=]*)?=")
    for modname, module in sorted(sys.modules.items()):
        if modname.split(".")[0] == "aruntime" and getattr(module, attr, None) is value:
            lines = inspect.getsource(module).splitlines()
            for i, line in enumerate(lines):
                if assigned.match(line) and i and lines[i - 1].startswith("#:"):
                    return lines[i - 1][2:].strip()
    return ""


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for qualname, value in _public():
        if inspect.isclass(value):
            doc = vars(value).get("__doc__")  # its own, not a base class's
        elif callable(value):
            doc = value.__doc__
        else:
            doc = _comment_doc(qualname, value)
        if not (doc or "").strip():
            missing.append(qualname)
    assert missing == [], (
        f"public names without a docstring (a constant needs a '#:' comment above "
        f"its assignment): {', '.join(missing)}"
    )


def _fields(cls: type) -> list[str]:
    """The public fields of ``cls``: dataclass and NamedTuple fields, annotations, slots."""
    names: list[str] = []
    if dataclasses.is_dataclass(cls):
        names += [f.name for f in dataclasses.fields(cls)]
    names += list(getattr(cls, "_fields", ()))
    names += list(vars(cls).get("__annotations__", {}))
    slots = vars(cls).get("__slots__", ())
    names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def _source_field_docs(cls: type) -> set[str]:
    """The fields of ``cls`` with a ``#:`` comment or a docstring in its source (as autodoc reads).

    A field is assigned or annotated in the class body, or assigned to
    ``self.<name>`` in one of its methods; its description is the ``#:``
    comment right above, a ``#:`` comment at the end of the line, or a string
    right after.
    """
    path = inspect.getsourcefile(cls)
    assert path is not None
    source = Path(path).read_text()
    lines = source.splitlines()
    (node,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.ClassDef) and n.name == cls.__qualname__
    ]

    def described(body: list[ast.stmt], self_name: str | None) -> set[str]:
        found = set()
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            elif isinstance(stmt, ast.Assign):
                targets = list(stmt.targets)
            else:
                continue
            names = [
                t.id if isinstance(t, ast.Name) else t.attr
                for t in targets
                if (isinstance(t, ast.Name) and self_name is None)
                or (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == self_name
                )
            ]
            above = lines[stmt.lineno - 2].strip() if stmt.lineno >= 2 else ""
            inline = "#:" in lines[stmt.end_lineno - 1 if stmt.end_lineno else stmt.lineno - 1]
            after = body[i + 1] if i + 1 < len(body) else None
            string_after = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            if above.startswith("#:") or inline or string_after:
                found.update(names)
        return found

    found = described(node.body, None)
    for method in node.body:
        if isinstance(method, ast.FunctionDef) and method.args.args:
            found |= described(method.body, method.args.args[0].arg)
    return found


def _reference_field_docs(qualname: str) -> set[str]:
    """The attributes docs/api.md describes by hand inside ``qualname``'s autoclass."""
    text = (DOCS / "api.md").read_text()
    match = re.search(
        rf"^\.\. autoclass:: {re.escape(qualname)}\n((?:[ \t]+.*\n|\n)*)", text, re.MULTILINE
    )
    if not match:
        return set()
    block = match.group(1)
    return {
        name
        for name, body in re.findall(
            r"^   \.\. py:attribute:: (\w+)\n((?:      .*\n|\n)*)", block, re.MULTILINE
        )
        if any(line.strip() and not line.strip().startswith(":") for line in body.splitlines())
    }


def test_every_public_field_has_a_description() -> None:
    """The reference once had 38 blank entries: the fields of TraceSpan, DeviceInfo..."""
    missing = []
    checked = 0
    for qualname, value in _public():
        if not inspect.isclass(value) or issubclass(value, BaseException):
            continue
        fields = _fields(value)
        checked += len(fields)
        documented = _source_field_docs(value) | _reference_field_docs(qualname)
        missing += [f"{qualname}.{name}" for name in fields if name not in documented]
    assert checked >= 38
    assert missing == [], (
        "public fields without a description (put a '#:' comment above the field, or "
        f"an attribute in its autoclass block of docs/api.md): {', '.join(missing)}"
    )


def test_api_reference_covers_every_public_name() -> None:
    text = (DOCS / "api.md").read_text()
    documented = set(re.findall(r"^\.\. auto\w+:: ([\w.]+)", text, re.MULTILINE))
    missing = [name for name, _ in _public() if name not in documented]
    assert missing == [], f"add these to docs/api.md (an autodoc directive each): {missing}"


#: The classes whose every public method and property the reference must show (issue 22).
API_CLASSES = (
    aruntime.Backend,
    aruntime.Stream,
    aruntime.Event,
    aruntime.Graph,
    aruntime.DeviceArray,
    aruntime.Completion,
    aruntime.Module,
    aruntime.Kernel,
)


def _directives(text: str) -> dict[str, dict[str, str]]:
    """``.. autoclass:: NAME`` (and automethod) -> its options, from the reference's source."""
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        head = re.match(r"^\.\. auto(\w+):: ([\w.]+)", line)
        if head:
            current = found.setdefault(head.group(2), {"kind": head.group(1)})
        elif current is not None and (option := re.match(r"^\s+:([\w-]+):\s*(.*)$", line)):
            current[option.group(1)] = option.group(2).strip()
        else:
            current = None
    return found


def _shown_members(cls: type, directives: dict[str, dict[str, str]]) -> set[str]:
    """What autodoc lists for ``cls`` (members and undoc-members are on by default in conf.py)."""
    from tests.test_docstrings import _own_classes

    options = directives.get(f"aruntime.{cls.__name__}")
    shown: set[str] = set()
    if options is not None:
        if options.get("members"):
            shown = {n.strip() for n in options["members"].split(",")}
        else:
            shown = set(vars(cls))
        if "inherited-members" in options:
            for base in _own_classes(cls)[1:]:
                shown |= set(vars(base))
        shown -= {n.strip() for n in options.get("exclude-members", "").split(",")}
    prefix = f"aruntime.{cls.__name__}."
    shown |= {n[len(prefix) :] for n, o in directives.items() if n.startswith(prefix)}
    return shown


def test_api_reference_lists_every_public_method_and_property() -> None:
    from tests.test_docstrings import _members

    directives = _directives((DOCS / "api.md").read_text())
    missing = [
        f"{cls.__name__}.{name}"
        for cls in API_CLASSES
        for name, _ in _members(cls)
        if name not in _shown_members(cls, directives)
    ]
    assert missing == [], (
        "members missing from docs/api.md (give the class :inherited-members:, or an "
        f"automethod/autoproperty each): {missing}"
    )


def test_compute_ops_have_their_own_section_in_the_reference() -> None:
    from aruntime._compute import ComputeOps

    text = (DOCS / "api.md").read_text()
    section = text.split("## Compute operations", 1)[1].split("\n## ", 1)[0]
    ops = [n for n, raw in vars(ComputeOps).items() if not n.startswith("_") and callable(raw)]
    assert len(ops) >= 6
    for op in ops:
        assert f".. automethod:: aruntime.Backend.{op}" in section, op
    readme = (ROOT / "README.md").read_text()
    assert "aruntime/_compute.py" not in readme, "point the README to the API reference"


def test_the_reference_hides_internal_constructor_arguments() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_aruntime_docs_conf", DOCS / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    for cls in (*API_CLASSES, aruntime.DevicePtr, aruntime.HostBuffer, aruntime.Trace):
        assert conf._hide_internal_signature(None, "class", "", cls, {}, "(op)", None) == (
            "",
            None,
        ), cls
    for record in (aruntime.DeviceInfo, aruntime.BackendStatus, aruntime.DriverError):
        assert conf._hide_internal_signature(None, "class", "", record, {}, "(x)", None) is None


def test_concepts_and_free_agree_that_a_free_is_deferred() -> None:
    """concepts.md once said to await a stream before freeing; free() never needed it."""
    doc = aruntime.Backend.free.__doc__ or ""
    assert "only\n        after the work already queued has finished" in doc
    text = " ".join((DOCS / "concepts.md").read_text().split())
    assert "before reusing or freeing" not in text
    assert "**Freeing** it needs no wait: `gpu.free(ptr)` is deferred" in text


def test_every_page_is_in_the_table_of_contents() -> None:
    # Sphinx -W (in .ci/run) fails on a page outside every toctree; say so sooner.
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"^([\w-]+)$", index, re.MULTILINE))
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, f"add {sorted(pages - listed)} to a toctree in docs/index.md"


def _examples() -> list[Any]:
    params = []
    for page in sorted(DOCS.glob("*.md")):
        blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.DOTALL | re.MULTILINE)
        params += [
            pytest.param(page.name, code, id=f"{page.stem}-{i}") for i, code in enumerate(blocks)
        ]
    return params


@pytest.mark.parametrize(("page", "code"), _examples())
def test_docs_example_runs(page: str, code: str, tmp_path: Path) -> None:
    """Each ```python block, alone, in a fresh interpreter; a block of tests runs under pytest."""
    env = {k: v for k, v in os.environ.items() if k not in ("ARUNTIME_BACKEND", "ARUNTIME_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    script = tmp_path / "test_example.py"
    script.write_text(code)
    if re.search(r"^(async )?def test_", code, re.MULTILINE):
        (tmp_path / "conftest.py").write_text('pytest_plugins = ["aruntime.testing"]\n')
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    else:
        cmd = [sys.executable, "-W", "error", str(script)]
    result = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{page}:\n{code}\n{result.stdout}{result.stderr}"


def _knobs_read() -> dict[str, str]:
    """Every ARUNTIME_* name in the sources of aruntime/ and ffi/, with where it first appears."""
    found: dict[str, str] = {}
    for folder in (ROOT / "aruntime", ROOT / "ffi"):
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".py", ".c", ".h") or "_lib" in path.parts:
                continue
            for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                for name in KNOB.findall(line):
                    found.setdefault(name, f"{path.relative_to(ROOT)}:{lineno}")
    return found


def _knobs_table() -> tuple[set[str], int]:
    """The knobs in the list-table of docs/backends.md, and the line where it starts."""
    text = KNOBS_PAGE.read_text()
    match = re.search(r"^```\{list-table\}.*?^```", text, re.DOTALL | re.MULTILINE)
    assert match, f"{KNOBS_PAGE.relative_to(ROOT)} has no knobs table (a list-table)"
    return set(KNOB.findall(match.group(0))), text.count("\n", 0, match.start()) + 1


def test_every_knob_is_in_the_knobs_table() -> None:
    documented, line = _knobs_table()
    missing = {name: where for name, where in _knobs_read().items() if name not in documented}
    assert not missing, "\n".join(
        f"{name} (read at {where}) is not documented: add a line "
        f"'- `{name}`: what it does (default)' to its component's row of the knobs "
        f"table in docs/backends.md (the list-table at line {line})"
        for name, where in sorted(missing.items())
    )


def test_every_documented_knob_is_read_somewhere() -> None:
    documented, line = _knobs_table()
    stale = sorted(documented - set(_knobs_read()))
    assert stale == [], (
        f"docs/backends.md (knobs table, line {line}) lists knobs that nothing in "
        f"aruntime/ or ffi/ reads any more; remove them: {stale}"
    )


_CITE = re.compile(r"\b((?:docs|ffi)/[A-Za-z0-9_/.-]+\.md)(?:, \"([^\"]+)\")?")
_CITING = ("aruntime", "ffi", "tests", "examples", "benchmarks", "docs", ".ci")
_SUFFIXES = {".py", ".md", ".c", ".h", ".def", ".sh", ".toml"}


def test_every_cited_document_and_section_exists() -> None:
    """The repository cites only files it has, and headings those files have."""
    missing = []
    paths = [ROOT / "README.md"]
    for top in _CITING:
        paths += [p for p in (ROOT / top).rglob("*") if p.suffix in _SUFFIXES]
    for path in paths:
        if "_generated" in path.parts or not path.is_file():
            continue
        for match in _CITE.finditer(path.read_text(errors="replace")):
            target, section = ROOT / match[1], match[2]
            where = f"{path.relative_to(ROOT)} cites {match[0]}"
            if not target.is_file():
                missing.append(where)
            elif section is not None:
                headings = {
                    line.lstrip("#").strip()
                    for line in target.read_text().splitlines()
                    if line.startswith("#")
                }
                if section not in headings:
                    missing.append(f"{where} (no such heading)")
    assert not missing, "\n".join(missing)
