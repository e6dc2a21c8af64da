"""Several devices of one driver: who is whose peer, and how a pointer's device is named.

Two backends are peers when their drivers are two devices of the same driver
(two ``open_backend("cuda", device=i)``, say).  Between peers, and only
there, ``copy_d2d_async`` copies (src and dst on two devices) and
``stream_wait_event`` orders one device's stream after the other's event
(docs/scaling.md, "One node, several devices: a pool").  Every other use of
a pointer on a device that does not own it is refused, naming both devices.
"""

from __future__ import annotations

from typing import Any

from ._exceptions import InvalidArgumentError

__all__ = ["describe_device", "peer_driver"]


def describe_device(owner: object) -> str:
    """``"cuda-sim device 1"``: a backend as the messages about devices name it."""
    name = getattr(owner, "name", type(owner).__name__)
    driver = getattr(owner, "driver", None)
    ordinal = getattr(driver, "ordinal", None)
    return f"{name} device {ordinal}" if ordinal is not None else str(name)


def peer_driver(mine: Any, other: Any, fn: str, what: str) -> Any:
    """``other``'s driver if ``other`` (a Backend) is an open peer of ``mine``, else an error.

    ``mine`` and ``other`` are Backends; the error names both devices.
    """
    driver = getattr(other, "driver", None)
    if driver is None or not mine.driver.is_peer(driver):
        raise InvalidArgumentError(
            f"{fn}: {what} belongs to another backend ({describe_device(other)}), not this "
            f"one ({describe_device(mine)}), and the two are not devices of one driver"
        )
    if other.closed:
        raise InvalidArgumentError(f"{fn}: {what} belongs to {describe_device(other)}, now closed")
    return driver
