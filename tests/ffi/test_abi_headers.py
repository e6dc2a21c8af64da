"""Each API's types agree between the cffi declarations and the sim's header.

The binding's declarations (``ffi/<api>/decl``) and the software driver's own
header (``ffi/cuda/sim/cuda_types.h``, ``ffi/levelzero/sim/ze_abi.h``) are two
spellings of the same ABI: the binding needs no compiler, and the sim must
build without the vendor's headers.  This test keeps them from drifting.
Both sides are parsed (the sim's header after the C preprocessor, for its
macros), and every name they share must agree: a typedef on its type, a
struct or union on its field names, order and types, an enum constant on its
value, and an enum type on its list of constants.  Types are compared after
resolving typedef names, so ``ze_init_flags_t`` spelled through ``ze_flags_t``
on one side and straight as ``uint32_t`` on the other agree, but ``int``
against ``unsigned int`` or ``uint64_t`` against ``unsigned long long`` do not.

The declarations are checked against the real ``cuda.h`` and ``ze_api.h`` by
``test_cuda_decl.py`` and ``test_levelzero_decl.py``; the constants the sims
define beyond them are checked against the real headers here, where those
exist.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pycparser = pytest.importorskip("pycparser")
from pycparser import c_ast, c_generator  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CUDA_DECL = ROOT / "ffi" / "cuda" / "decl"
CUDA_SIM = ROOT / "ffi" / "cuda" / "sim" / "cuda_types.h"
ZE_DECL = ROOT / "ffi" / "levelzero" / "decl"
ZE_SIM = ROOT / "ffi" / "levelzero" / "sim" / "ze_abi.h"
ZE_DECL_ORDER = ("types.h", "driver_device.h", "context_memory.h", "command.h", "sync.h")
CUDA_INCLUDE = Path("/usr/local/cuda/include")
ZE_INCLUDE = Path("/usr/include")

# Both sides see the same fixed-width types, as on 64-bit Linux.
_FAKE_STDINT = """
typedef unsigned char uint8_t; typedef unsigned short uint16_t;
typedef unsigned int uint32_t; typedef unsigned long uint64_t;
typedef signed char int8_t; typedef short int16_t;
typedef int int32_t; typedef long int64_t; typedef unsigned long size_t;
typedef unsigned long uintptr_t;
"""
_FAKE_NAMES = set(re.findall(r"(\w+);", _FAKE_STDINT))


@dataclass
class Abi:
    """What a header declares: canonical types, struct layouts, constants."""

    typedefs: dict[str, str] = field(default_factory=dict)
    structs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _preprocess(text: str) -> str:
    """A sim header through ``cc -E``, its system includes left out."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc})")
    body = re.sub(r"^\s*#\s*include\s*<[^>]*>\s*$", "", text, flags=re.M)
    out = subprocess.run(
        [cc, "-E", "-P", "-x", "c", "-"], input=body, capture_output=True, text=True, check=True
    )
    return out.stdout


_SPELLING = {
    ("unsigned",): "unsigned int",
    ("signed",): "int",
    ("signed", "int"): "int",
    ("signed", "char"): "signed char",
}


def _base_name(names: list[str]) -> str:
    words = [w for w in names if w != "int" or not {"short", "long"} & set(names)]
    key = tuple(words)
    return _SPELLING.get(key, " ".join(words))


class _Reader:
    def __init__(self, ast: c_ast.FileAST) -> None:
        self.abi = Abi()
        self._aliases: dict[str, c_ast.Node] = {}
        self._gen = c_generator.CGenerator()
        for ext in ast.ext:
            if isinstance(ext, c_ast.Typedef):
                self._aliases[ext.name] = ext.type
                self._collect(ext.type)
            elif isinstance(ext, c_ast.Decl):
                self._collect(ext.type)
        for name, node in self._aliases.items():
            if name not in _FAKE_NAMES:
                self.abi.typedefs[name] = self.type_text(node)

    def _collect(self, node: c_ast.Node) -> None:
        """Struct bodies and enum constants anywhere inside a declaration."""
        if isinstance(node, (c_ast.Struct, c_ast.Union)) and node.decls is not None:
            kind = "struct" if isinstance(node, c_ast.Struct) else "union"
            if node.name:
                self.abi.structs[f"{kind} {node.name}"] = self._fields(node)
            for d in node.decls:
                self._collect(d.type)
        elif isinstance(node, c_ast.Enum) and node.values is not None:
            value = -1
            members = {}
            for e in node.values.enumerators:
                value = self._eval(e.value) if e.value is not None else value + 1
                self.abi.constants[e.name] = members[e.name] = value
            if node.name:
                self.abi.enums[f"enum {node.name}"] = members
        elif isinstance(node, (c_ast.TypeDecl, c_ast.PtrDecl, c_ast.ArrayDecl)):
            self._collect(node.type)

    def _fields(self, node: c_ast.Struct | c_ast.Union) -> list[tuple[str, str]]:
        return [(d.name or "", self.type_text(d.type)) for d in node.decls or []]

    def _eval(self, node: c_ast.Node) -> int:
        if isinstance(node, c_ast.Constant):
            return int(node.value.rstrip("uUlL"), 0)
        if isinstance(node, c_ast.ID):
            return self.abi.constants[node.name]
        if isinstance(node, c_ast.UnaryOp):
            v = self._eval(node.expr)
            return {"-": -v, "+": v, "~": ~v}[node.op]
        if isinstance(node, c_ast.BinaryOp):
            a, b = self._eval(node.left), self._eval(node.right)
            ops = {"+": a + b, "-": a - b, "*": a * b, "|": a | b, "&": a & b}
            if node.op in ops:
                return ops[node.op]
            return {"<<": lambda: a << b, ">>": lambda: a >> b}[node.op]()
        if isinstance(node, c_ast.Cast):
            return self._eval(node.expr)
        raise ValueError(f"cannot evaluate {self._gen.visit(node)}")

    def type_text(self, node: c_ast.Node) -> str:
        """The type with every typedef name resolved; tags kept."""
        quals = " ".join(getattr(node, "quals", []) or [])
        prefix = f"{quals} " if quals else ""
        if isinstance(node, c_ast.TypeDecl):
            return prefix + self.type_text(node.type)
        if isinstance(node, c_ast.IdentifierType):
            if len(node.names) == 1 and node.names[0] in self._aliases:
                return self.type_text(self._aliases[node.names[0]])
            return _base_name(node.names)
        if isinstance(node, c_ast.PtrDecl):
            return f"{self.type_text(node.type)} *{quals}".rstrip()
        if isinstance(node, c_ast.ArrayDecl):
            try:
                dim = str(self._eval(node.dim)) if node.dim is not None else ""
            except (ValueError, KeyError):
                dim = self._gen.visit(node.dim)
            return f"{self.type_text(node.type)}[{dim}]"
        if isinstance(node, c_ast.FuncDecl):
            params = node.args.params if node.args else []
            args = ", ".join(self.type_text(p.type) for p in params if not _is_void(p))
            return f"{self.type_text(node.type)} ({args})"
        if isinstance(node, (c_ast.Struct, c_ast.Union)):
            kind = "struct" if isinstance(node, c_ast.Struct) else "union"
            if node.name:
                return f"{kind} {node.name}"
            return f"{kind} {{{'; '.join(f'{t} {n}' for n, t in self._fields(node))}}}"
        if isinstance(node, c_ast.Enum):
            if node.name:
                return f"enum {node.name}"
            return "enum {" + ", ".join(e.name for e in node.values.enumerators) + "}"
        raise ValueError(f"unexpected type node {type(node).__name__}")


def _is_void(p: c_ast.Node) -> bool:
    t = getattr(p, "type", None)
    return (
        isinstance(t, c_ast.TypeDecl)
        and isinstance(t.type, c_ast.IdentifierType)
        and t.type.names == ["void"]
    )


def read_abi(c_text: str) -> Abi:
    ast = pycparser.CParser().parse(_FAKE_STDINT + _strip_comments(c_text))
    return _Reader(ast).abi


def differences(decl: Abi, sim: Abi) -> list[str]:
    """Each shared name whose two definitions disagree, described."""
    out = []
    for name in sorted(decl.typedefs.keys() & sim.typedefs.keys()):
        a, b = decl.typedefs[name], sim.typedefs[name]
        if a != b:
            out.append(f"typedef {name}: declarations say {a!r}, sim says {b!r}")
    for tag in sorted(decl.structs.keys() & sim.structs.keys()):
        a_fields, b_fields = decl.structs[tag], sim.structs[tag]
        if a_fields != b_fields:
            out.append(f"{tag}: declarations {a_fields}\n    sim {b_fields}")
    for tag in sorted(decl.enums.keys() & sim.enums.keys()):
        only_decl = sorted(decl.enums[tag].keys() - sim.enums[tag].keys())
        only_sim = sorted(sim.enums[tag].keys() - decl.enums[tag].keys())
        if only_decl or only_sim:
            out.append(f"{tag}: only the declarations have {only_decl}, only the sim {only_sim}")
    for name in sorted(decl.constants.keys() & sim.constants.keys()):
        a_value, b_value = decl.constants[name], sim.constants[name]
        if a_value != b_value:
            out.append(f"{name}: declarations {a_value:#x}, sim {b_value:#x}")
    return out


def _cuda_decl_text() -> str:
    return "\n".join(p.read_text() for p in sorted(CUDA_DECL.glob("*.h")) if p.name[0] != "9")


def _ze_decl_text() -> str:
    return "\n".join((ZE_DECL / name).read_text() for name in ZE_DECL_ORDER)


PAIRS = {
    "cuda": (_cuda_decl_text, CUDA_SIM),
    "levelzero": (_ze_decl_text, ZE_SIM),
}


def _pair(api: str) -> tuple[str, str]:
    decl_text, sim_path = PAIRS[api]
    return decl_text(), _preprocess(sim_path.read_text())


@pytest.mark.parametrize("api", sorted(PAIRS))
def test_declarations_and_sim_header_agree(api: str) -> None:
    decl_text, sim_text = _pair(api)
    decl, sim = read_abi(decl_text), read_abi(sim_text)
    shared = (
        (decl.typedefs.keys() & sim.typedefs.keys())
        | (decl.structs.keys() & sim.structs.keys())
        | (decl.constants.keys() & sim.constants.keys())
    )
    assert len(shared) > 20, f"only {sorted(shared)} shared: is a side not being read?"
    problems = differences(decl, sim)
    assert not problems, f"{api}: the two headers disagree:\n" + "\n".join(problems)


def _mutations(api: str) -> list[tuple[str, str, str]]:
    """(what, old, new): a one-sided edit of each kind the check must catch."""
    if api == "cuda":
        return [
            ("a field type", "    size_t srcPitch;", "    unsigned int srcPitch;"),
            ("a field order", "    size_t srcY;\n", ""),
            ("a typedef", "typedef int CUdevice;", "typedef long CUdevice;"),
        ]
    return [
        ("a field type", "    uint32_t numQueues;", "    uint64_t numQueues;"),
        ("a field name", "    uint32_t ordinal;", "    uint32_t ordinal_;"),
        (
            "an enum value",
            "ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES = 0x5",
            "ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES = 0x6",
        ),
    ]


@pytest.mark.parametrize("api", sorted(PAIRS))
def test_a_change_to_one_side_is_caught(api: str) -> None:
    decl_text, sim_text = _pair(api)
    sim = read_abi(sim_text)
    for what, old, new in _mutations(api):
        assert old in decl_text, f"{api}: the sample edit for {what} no longer applies"
        changed = read_abi(decl_text.replace(old, new, 1))
        assert differences(changed, sim), f"{api}: changing {what} went unnoticed"


# -- the sims' constants against the vendors' headers -----------------------

_INT_DEFINE = re.compile(
    r"^#define\s+([A-Z][A-Z0-9_]+)\s+\(?(0x[0-9a-fA-F]+|\d+)[uU]?\)?\s*$", re.M
)


def _sim_constants(sim_path: Path) -> dict[str, int]:
    text = sim_path.read_text()
    constants = dict(read_abi(_preprocess(text)).constants)
    constants.update({m.group(1): int(m.group(2), 0) for m in _INT_DEFINE.finditer(text)})
    return constants


REAL = {
    "cuda": (CUDA_SIM, CUDA_INCLUDE / "cuda.h", "cuda.h", CUDA_INCLUDE),
    "levelzero": (ZE_SIM, ZE_INCLUDE / "level_zero" / "ze_api.h", "level_zero/ze_api.h", None),
}


@pytest.mark.parametrize("api", sorted(REAL))
def test_sim_constants_match_the_real_header(api: str, tmp_path: Path) -> None:
    sim_path, header, include, include_dir = REAL[api]
    if not header.exists():
        pytest.skip(f"{header} is not installed")
    cc = os.environ.get("CC", "cc")
    real_text = header.read_text(errors="replace")
    constants = _sim_constants(sim_path)
    known = {k: v for k, v in constants.items() if re.search(rf"\b{k}\b", real_text)}
    assert len(known) > 20, f"only {sorted(known)} found in {header}"
    lines = [f"#include <{include}>"]
    lines += [
        f'_Static_assert((long long)({name}) == {value}LL, "{name} is not {value:#x}");'
        for name, value in sorted(known.items())
    ]
    src = tmp_path / "constants.c"
    src.write_text("\n".join(lines) + "\n")
    cmd = [cc, "-fsyntax-only", str(src)]
    if include_dir is not None:
        cmd.insert(1, f"-I{include_dir}")
    result = subprocess.run(cmd, capture_output=True, text=True)
    wrong = sorted(set(re.findall(r'"(\w+) is not (0x[0-9a-f]+)"', result.stderr)))
    report = [f"{name}: the sim says {value}, {header.name} differs" for name, value in wrong]
    assert result.returncode == 0, "\n".join(report) or result.stderr[-3000:]
