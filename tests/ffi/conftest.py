"""Fixtures of the native-library tests (see _cudasim_support)."""

from __future__ import annotations

from _cudasim_support import cu

__all__ = ["cu"]
