"""``python -m aruntime``: the same as the ``aruntime`` command."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
