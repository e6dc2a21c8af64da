"""Peer copies and cross-device waits on every backend with two devices (docs/design.md).

The other device is the backend's device 1 (or 0, when it is device 1 itself).
A backend with one device here skips, saying so: a one-GPU machine, the mock,
and the sims unless ``ARUNTIME_SIM_DEVICES`` >= 2 (tests/multi/test_peer.py
runs the sims with two devices in processes of their own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


@pytest.fixture
async def peer(backend: ar.Backend) -> AsyncIterator[ar.Backend]:
    devices = ar.available_backends().get(backend.name, [])
    if len(devices) < 2:
        pytest.skip(f"{backend.name} has {len(devices)} device(s) here; a peer copy needs two")
    other = 1 if backend.driver.ordinal == 0 else 0
    async with ar.open_backend(backend.name, device=other) as gpu:
        yield gpu


async def test_peer_copy_each_way(backend: ar.Backend, peer: ar.Backend) -> None:
    n = 1 << 20
    data = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)
    mine, theirs = backend.alloc(n), peer.alloc(n)
    try:
        await backend.copy_h2d_async(data, mine)
        await backend.copy_d2d_async(mine, theirs, n)
        out = await peer.copy_d2h_async(theirs, np.empty_like(data))
        np.testing.assert_array_equal(out, data)
        await peer.memset_async(theirs, 0x5A, n)
        await peer.copy_d2d_async(theirs, mine, n)
        assert (await backend.copy_d2h_async(mine, np.empty_like(data)) == 0x5A).all()
        assert backend.can_access_peer(peer) == peer.can_access_peer(backend)
        assert not backend.can_access_peer(backend)
    finally:
        backend.free(mine)
        peer.free(theirs)


async def test_a_stream_waits_for_the_other_devices_event(
    backend: ar.Backend, peer: ar.Backend
) -> None:
    n = 1 << 20
    data = np.random.default_rng(8).integers(0, 256, n, dtype=np.uint8)
    mine, theirs = backend.alloc(n), peer.alloc(n)
    s0, s1 = backend.create_stream(), peer.create_stream()
    uploaded = backend.create_event()
    try:
        backend.copy_h2d_async(data, mine, stream=s0)
        backend.record_event(uploaded, s0)
        peer.stream_wait_event(s1, uploaded)
        peer.copy_d2d_async(mine, theirs, n, stream=s1)
        out = await peer.copy_d2h_async(theirs, np.empty_like(data), stream=s1)
        np.testing.assert_array_equal(out, data)
    finally:
        backend.destroy_event(uploaded)
        s0.close()
        s1.close()
        backend.free(mine)
        peer.free(theirs)


async def test_a_pointer_used_on_the_other_device_names_both(
    backend: ar.Backend, peer: ar.Backend
) -> None:
    theirs = peer.alloc(64)
    try:
        with pytest.raises(ar.InvalidArgumentError, match="device") as caught:
            backend.memset_async(theirs, 0, 64)
        text = str(caught.value)
        assert f"device {backend.driver.ordinal}" in text
        assert f"device {peer.driver.ordinal}" in text
    finally:
        peer.free(theirs)
