"""Enables aruntime's fixtures: mock_backend, async_mock_backend, backend, leak_check."""

from __future__ import annotations

pytest_plugins = ["aruntime.testing"]
