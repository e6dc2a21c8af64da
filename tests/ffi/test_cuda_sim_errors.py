"""cuda-sim's cuGetErrorName/cuGetErrorString know every CUresult of cuda.h.

Two references, each used where it exists: the ``CUresult`` enum parsed out
of the real ``cuda.h`` (toolkit or pip headers, found by ffi/cuda/headers.py)
and cuda-bindings' ``CUresult`` (generated from NVIDIA's header; it is in the
test extra, so CI always has one reference).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
from _cudasim_support import CUDA_SUCCESS, ffi, load_sim

ROOT = Path(__file__).resolve().parents[2]
CUDA_ERROR_INVALID_VALUE = 1


def _header_codes() -> dict[str, int] | None:
    spec = importlib.util.spec_from_file_location("_cuda_headers", ROOT / "ffi/cuda/headers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    include: Path | None = module.find_cuda_include()
    if include is None:
        return None
    text = (include / "cuda.h").read_text()
    body = re.search(r"typedef enum cudaError_enum \{(.*?)\} CUresult;", text, re.S)
    assert body is not None, f"no CUresult enum in {include / 'cuda.h'}"
    without_comments = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    pairs = re.findall(r"(CUDA_\w+)\s*=\s*(\d+)", without_comments)
    assert pairs, "the CUresult enum parsed to nothing"
    return {name: int(value) for name, value in pairs}


def _bindings_codes() -> dict[str, int] | None:
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return {member.name: int(member.value) for member in driver.CUresult}


def _sim_name(code: int) -> str | None:
    out = ffi.new("const char **")
    rc = load_sim().cuGetErrorName(code, out)
    if rc != CUDA_SUCCESS:
        assert rc == CUDA_ERROR_INVALID_VALUE
        assert out[0] == ffi.NULL
        return None
    return ffi.string(out[0]).decode()


def _sim_text(code: int) -> str | None:
    out = ffi.new("const char **")
    rc = load_sim().cuGetErrorString(code, out)
    if rc != CUDA_SUCCESS:
        assert rc == CUDA_ERROR_INVALID_VALUE
        assert out[0] == ffi.NULL
        return None
    return ffi.string(out[0]).decode()


def _sim_table() -> dict[int, str]:
    # CUresult codes are below 1000; 999 is CUDA_ERROR_UNKNOWN.
    return {code: name for code in range(1100) if (name := _sim_name(code)) is not None}


def _check_reference(reference: dict[str, int]) -> None:
    wrong = {
        name: (code, _sim_name(code)) for name, code in reference.items() if _sim_name(code) != name
    }
    assert not wrong, f"cuGetErrorName disagrees with the reference: {wrong}"
    for name, code in reference.items():
        text = _sim_text(code)
        assert text, f"cuGetErrorString({code}) ({name}) has no text"


def test_every_header_code_has_its_name() -> None:
    codes = _header_codes()
    if codes is None:
        if Path("/usr/local/cuda/include/cuda.h").exists():
            pytest.fail("/usr/local/cuda/include/cuda.h exists but the header finder missed it")
        if os.environ.get("CI") and _bindings_codes() is None:
            pytest.fail("CI has neither cuda.h nor cuda-bindings to check against")
        pytest.skip("no cuda.h here (cuda-bindings' enum is checked instead)")
    assert len(codes) >= 100  # CUDA 13.0 has 101, 13.5 has 106
    _check_reference(codes)


def test_every_cuda_bindings_code_has_its_name() -> None:
    codes = _bindings_codes()
    if codes is None:
        pytest.skip("pip install cuda-bindings (the test extra has it)")
    _check_reference(codes)


def test_the_sim_knows_no_code_the_references_lack() -> None:
    references = [r for r in (_header_codes(), _bindings_codes()) if r is not None]
    if not references:
        pytest.skip("no cuda.h and no cuda-bindings here")
    known = {code: name for reference in references for name, code in reference.items()}
    extra = {code: name for code, name in _sim_table().items() if known.get(code) != name}
    assert not extra, f"codes the sim names that no reference has: {extra}"


def test_texts_are_distinct_sentences() -> None:
    table = _sim_table()
    assert len(table) >= 106
    texts = {code: _sim_text(code) for code in table}
    assert all(t and t == t.strip() and not t.endswith(".") for t in texts.values())
    assert len(set(texts.values())) == len(texts), "two codes share one text"


@pytest.mark.parametrize("code", [-1, 9, 203, 706, 1000, 12345, 2**31 - 1])
def test_unknown_codes_are_invalid_value(code: int) -> None:
    assert _sim_name(code) is None
    assert _sim_text(code) is None


def test_a_null_out_pointer_is_invalid_value() -> None:
    lib = load_sim()
    assert lib.cuGetErrorName(0, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuGetErrorString(0, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
