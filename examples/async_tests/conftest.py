"""Fixtures: aruntime's (mock_backend, async_mock_backend, backend, leak_check)
and anyio's backend parameter, so every async test runs on asyncio and trio."""

from __future__ import annotations

import pytest

pytest_plugins = ["aruntime.testing"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
