"""Serve examples/async_server/app.py: uvicorn under asyncio, hypercorn under trio.

    pip install 'aruntime[examples]'
    python examples/async_server [--backend NAME] [--devices 0,1|all] [--trio] [--port 8000]

then, from another shell (see README.md for more)::

    curl -s localhost:8000/health
    python -c "import numpy as np; np.arange(4, dtype='<f4').tofile('x.f32')"
    curl -s --data-binary @x.f32 'localhost:8000/scale?factor=3' | od -f

``--backend`` (or ``ARUNTIME_BACKEND``) picks the backend, ``auto`` by default;
``--devices`` lists the devices to serve from (``all``: every device of the
backend; the software drivers have ``ARUNTIME_SIM_DEVICES`` of them);
``--latency S`` makes each mock op take S seconds, as device work would.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for `python -m` as well

from app import Limits, create_app


def _devices(text: str) -> list[int] | None:
    if text == "all":
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected ordinals like 0,1 or 'all', got {text!r}"
        ) from None


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="The async GPU HTTP service example.")
    parser.add_argument("--backend", default=os.environ.get("ARUNTIME_BACKEND", "auto"))
    parser.add_argument("--trio", action="store_true", help="serve with hypercorn under trio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--streams", type=int, default=Limits.streams)
    parser.add_argument("--latency", type=float, default=None, help="mock op latency (s)")
    parser.add_argument(
        "--devices", default="0", type=_devices, help="device ordinals, e.g. 0,1, or all"
    )
    args = parser.parse_args(argv)
    options: dict[str, Any] = {}
    if args.latency is not None:
        options["latency"] = args.latency
    app = create_app(args.backend, Limits(streams=args.streams), args.devices, **options)
    if args.trio:
        import trio
        from hypercorn.config import Config
        from hypercorn.trio import serve

        config = Config()
        config.bind = [f"{args.host}:{args.port}"]
        config.accesslog = None
        print(f"hypercorn (trio) serving on http://{args.host}:{args.port}", flush=True)
        trio.run(serve, app, config)  # type: ignore[arg-type]
    else:
        import uvicorn

        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
