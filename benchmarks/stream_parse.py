"""How long the load generator takes to parse one answer whose frame spans many pieces.

    python benchmarks/stream_parse.py [--sizes-mb 1,5,20,100] [--piece-kib 4,64] [--former-max-mb 20]

Each answer is one large ``/generate`` frame (a text of N MB) between two small ones, split into
pieces of the given size, as ``data_received`` would have stored them. ``ours`` is
``_Runner._read_stream`` (linear: a line spanning many pieces is gathered in a bytearray, and
only new bytes are searched for its end); ``former`` is the parser it replaced
(``pending += piece`` and a split of the whole pending line at every piece that holds a
newline, a copy of the whole pending line at every piece: quadratic), run only up to
``--former-max-mb``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from pytest_sglang.collect.bench import load as load_module
from pytest_sglang.model.bench import RequestRecord


def answer(size_mb: float, piece: int) -> list[tuple[float, bytes]]:
    def frame(data: Any) -> bytes:
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    text = "x" * int(size_mb * 2**20)
    data = frame({"text": "a", "meta_info": {"completion_tokens": 1}}) + frame({"text": text, "meta_info": {"completion_tokens": 2}}) + b"data: [DONE]\n\n"
    return [(float(i), data[pos : pos + piece]) for i, pos in enumerate(range(0, len(data), piece))]


def former(pieces: list[tuple[float, bytes]]) -> int:
    """The parser before: its framing only (the JSON decode is the same in both)."""
    pending, frames = b"", 0
    for _, piece in pieces:
        pending += piece
        if b"\n" not in piece:
            continue
        *lines, pending = pending.split(b"\n")
        frames += sum(1 for line in lines if line.startswith(b"data:"))
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mb", default="1,5,20,100")
    parser.add_argument("--piece-kib", default="4,64")
    parser.add_argument("--former-max-mb", type=float, default=20.0)
    args = parser.parse_args()
    runner = load_module._Runner("http://127.0.0.1:9", {}, load_module.load_spec(concurrency=[1]))
    print(f"{'frame MB':>9} {'piece KiB':>9} {'pieces':>7} {'ours s':>8} {'former s':>9}")
    for piece_kib in (int(p) for p in args.piece_kib.split(",")):
        for size in (float(s) for s in args.sizes_mb.split(",")):
            pieces = answer(size, piece_kib * 1024)
            record = RequestRecord(0, 0.0)
            started = time.perf_counter()
            runner._read_stream(record, pieces)
            ours = time.perf_counter() - started
            assert record.error is None and record.output_tokens == 2, record.error
            shown = "-"
            if size <= args.former_max_mb:
                started = time.perf_counter()
                former(pieces)
                shown = f"{time.perf_counter() - started:.2f}"
            print(f"{size:>9g} {piece_kib:>9} {len(pieces):>7} {ours:>8.3f} {shown:>9}")


if __name__ == "__main__":
    main()
