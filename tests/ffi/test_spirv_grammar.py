"""Every SPIR-V number levelzero-sim uses agrees with Khronos' grammar.

The SPIR-V executor (``ffi/sim/spirv``) takes its opcodes, capabilities,
decorations, built-ins, storage classes, execution modes, scopes, group
operations and OpenCL.std instruction numbers from ``spv_grammar.h``, which
``gen_spv_grammar.py`` writes from ``spirv.core.grammar.json`` and
``extinst.opencl.std.100.grammar.json`` (Debian's ``spirv-headers``).  The
header is committed so that the sim builds without them; this test holds each
of its constants to the grammar wherever the grammar is installed, and keeps
numbers from being typed by hand again in the loader's sources.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPIRV = ROOT / "ffi" / "sim" / "spirv"
HEADER = SPIRV / "spv_grammar.h"
GRAMMAR_DIR = Path("/usr/include/spirv/unified1")
CORE = GRAMMAR_DIR / "spirv.core.grammar.json"
OPENCL = GRAMMAR_DIR / "extinst.opencl.std.100.grammar.json"

# The loader's sources, where a SPIR-V number must be a grammar name.
SOURCES = (
    "spv_module.c",
    "spv_decode.c",
    "spv_function.c",
    "spv_promote.c",
    "spv_compile_mem.c",
    "spv_compile_builtin.c",
    "spv_compile_alu.c",
    "spv_compile_ext.c",
    "spv_math.c",
    "spv_group.c",
    "spv_link.c",
    "spv_link_ids.c",
)


def _header_constants() -> dict[str, int]:
    text = HEADER.read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"^\s+(SPV_\w+) = (\d+),$", text, re.M)}


def _grammar_constants() -> dict[str, int]:
    core = json.loads(CORE.read_text())
    ocl = json.loads(OPENCL.read_text())
    names = {f"SPV_Op{i['opname'][2:]}": i["opcode"] for i in core["instructions"]}
    for kind in core["operand_kinds"]:
        for e in kind.get("enumerants", ()):
            value = e["value"]
            if isinstance(value, int):
                names[f"SPV_{kind['kind']}_{e['enumerant']}"] = value
    names.update({f"SPV_CL_{i['opname']}": i["opcode"] for i in ocl["instructions"]})
    return names


needs_grammar = pytest.mark.skipif(
    not (CORE.exists() and OPENCL.exists()),
    reason=f"the SPIR-V grammar is not installed ({GRAMMAR_DIR}: apt-get install spirv-headers)",
)


@needs_grammar
def test_every_constant_of_the_generated_header_is_the_grammars() -> None:
    ours = _header_constants()
    theirs = _grammar_constants()
    assert len(ours) > 1000
    wrong = {n: (v, theirs.get(n)) for n, v in ours.items() if theirs.get(n) != v}
    assert not wrong, f"spv_grammar.h disagrees with the grammar (ours, grammar): {wrong}"
    # The capabilities issue 31 found shifted by one.
    assert ours["SPV_Capability_Vector16"] == 7
    assert ours["SPV_Capability_Float16Buffer"] == 8
    assert ours["SPV_Capability_Float16"] == 9


@needs_grammar
def test_the_capability_names_for_messages_are_the_grammars() -> None:
    core = json.loads(CORE.read_text())
    caps = next(k for k in core["operand_kinds"] if k["kind"] == "Capability")
    first: dict[int, str] = {}
    for e in caps["enumerants"]:
        first.setdefault(e["value"], e["enumerant"])
    assert _namer("spv_capability_name") == first


def _namer(fn: str) -> dict[int, str]:
    """The cases of the header's name function ``fn``."""
    text = HEADER.read_text()
    body = text[text.index(f"{fn}(") :]
    body = body[: body.index("default:")]
    return {int(v): n for v, n in re.findall(r'case (\d+): return "(\w+)";', body)}


@needs_grammar
def test_the_builtin_names_for_messages_are_the_grammars() -> None:
    core = json.loads(CORE.read_text())
    kind = next(k for k in core["operand_kinds"] if k["kind"] == "BuiltIn")
    first: dict[int, str] = {}
    for e in kind["enumerants"]:
        first.setdefault(e["value"], e["enumerant"])
    assert _namer("spv_builtin_name") == first
    assert _namer("spv_builtin_name")[28] == "GlobalInvocationId"


@needs_grammar
def test_the_opencl_std_names_for_messages_are_the_grammars() -> None:
    ocl = json.loads((OPENCL).read_text())
    assert _namer("spv_cl_name") == {i["opcode"]: i["opname"] for i in ocl["instructions"]}


@needs_grammar
def test_the_opcode_table_names_grammar_opcodes() -> None:
    core = json.loads(CORE.read_text())
    opnames = {i["opname"][2:] for i in core["instructions"]}
    rows = re.findall(r"^SPV_OP\((\w+),", (SPIRV / "spv_opcodes.def").read_text(), re.M)
    assert len(rows) > 200
    assert set(rows) <= opnames, sorted(set(rows) - opnames)


def test_the_opcode_table_types_no_number() -> None:
    rows = re.findall(r"^SPV_OP\(([^,]+),", (SPIRV / "spv_opcodes.def").read_text(), re.M)
    assert rows
    assert not [r for r in rows if r.strip().isdigit()]


@pytest.mark.parametrize("source", SOURCES)
def test_no_spirv_number_is_typed_by_hand_in_a_case_label(source: str) -> None:
    """A ``case 17:`` in the loader is a SPIR-V number typed by hand."""
    text = (SPIRV / source).read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    cases = re.findall(r"\bcase\s+(\d+)\s*:", text)
    assert not cases, f"{source}: case labels with numbers {cases}; use spv_grammar.h's names"


def test_the_header_is_what_the_generator_writes() -> None:
    if not (CORE.exists() and OPENCL.exists()):
        pytest.skip("the SPIR-V grammar is not installed")
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_spv_grammar", SPIRV / "gen_spv_grammar.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = gen.render(GRAMMAR_DIR)
    if fresh != HEADER.read_text():
        # Another grammar release: its constants are still checked one by one above.
        pytest.skip("the installed grammar is another release than the header was written from")


def _generator(name: str):  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, SPIRV / f"{name}.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


@needs_grammar
def test_the_operand_header_is_what_its_generator_writes() -> None:
    # spv_operands.h says where the ids are in each instruction (the linker
    # renumbers them); a hand edit, or a generator change not run, shows here.
    fresh = _generator("gen_spv_operands").render(GRAMMAR_DIR)
    ours = (SPIRV / "spv_operands.h").read_text()
    if fresh != ours:
        # Its first line names the grammar release it was written from.
        same_release = fresh.splitlines()[0] == ours.splitlines()[0]
        assert not same_release, "spv_operands.h is not what gen_spv_operands.py writes: run it"
        pytest.skip("the installed grammar is another release than the header was written from")


@needs_grammar
def test_every_core_instruction_has_its_operands() -> None:
    core = json.loads(CORE.read_text())
    text = (SPIRV / "spv_operands.h").read_text()
    rows = dict(re.findall(r'^    \{(\d+), "Op\w+", "([^"]*)"\},$', text, re.M))
    assert {int(k) for k in rows} == {i["opcode"] for i in core["instructions"]}
    # Spot checks: OpLoad's optional memory operands, OpSwitch's pairs,
    # OpDecorateId's ids after its enumerant, OpExtInst's per-set operands.
    assert rows["61"] == "TRIM?"
    assert rows["251"] == "IIL*"
    assert rows["332"] == "IWA"
    assert rows["12"] == "TRIWE"
