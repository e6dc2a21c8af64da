"""Sphinx configuration: MyST pages, the furo theme, the API from the docstrings.

Build (warnings are errors, as in CI):  .venv/bin/python -m sphinx -W --keep-going -b html docs site
"""

from __future__ import annotations

import sys
from pathlib import Path

# The checkout's aruntime, whether or not it is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aruntime

project = "aruntime"
author = "the aruntime developers"
release = version = aruntime.__version__
copyright = "the aruntime developers"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

html_theme = "furo"
html_title = f"aruntime {release}"


def _attribute_doc(name: str) -> list[str]:
    """The ``#:`` comment of a public constant, found in the module that assigns it.

    A constant re-exported by ``aruntime`` (``BACKEND_NAMES``) is assigned in
    a private module, where autodoc does not look.
    """
    from sphinx.pycode import ModuleAnalyzer

    public, _, attr = name.rpartition(".")
    value = getattr(sys.modules[public], attr)
    for modname, module in sorted(sys.modules.items()):
        ours = modname == public or modname.startswith("aruntime.")
        if ours and getattr(module, attr, None) is value:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
            if ("", attr) in docs:
                return list(docs["", attr])
    return []


def _constant_docs(app, what, name, obj, options, lines) -> None:  # type: ignore[no-untyped-def]
    # A constant's "docstring" is its type's (tuple, str): use its comment instead.
    if what == "data" and obj.__doc__ == type(obj).__doc__:
        lines[:] = _attribute_doc(name)


def made_by_a_backend(obj: object) -> bool:
    """Whether users get ``obj`` (a class) from aruntime's calls rather than construct it.

    Its constructor's arguments are internal (``Completion(op, hooks=...)``),
    so the reference shows none.  Records (dataclasses) and exceptions keep theirs.
    """
    import dataclasses

    return (
        isinstance(obj, type)
        and obj.__module__.split(".")[0] == "aruntime"
        and not dataclasses.is_dataclass(obj)
        and not issubclass(obj, BaseException)
    )


def _hide_internal_signature(app, what, name, obj, options, signature, annotation):  # type: ignore[no-untyped-def]
    if what == "class" and made_by_a_backend(obj):
        return "", annotation
    return None


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("autodoc-process-docstring", _constant_docs)
    app.connect("autodoc-process-signature", _hide_internal_signature)
