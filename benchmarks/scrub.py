"""What scrubbing costs: registering secrets, scrubbing text with them, and ``scrub(text, extra)``.

    python benchmarks/scrub.py

The registry builds its scrubber (every form of every secret, compiled patterns) lazily, at
the first scrub after a change; before, each ``register`` rebuilt it, so registering N secrets
one at a time cost N builds of a growing set (quadratic). ``eager`` below is that former
behaviour, measured with the same scrubber class, for comparison. ``scrub(text, extra)``
builds one scrubber per distinct set of ``extra`` secrets (cached); ``uncached`` builds it on
every call, as a scrub that compiled its pattern per call would. The scrubber also searches a
folded copy of a text that holds anything to decode (entities, ``%XX``, ``\\uXXXX``, line breaks,
invisible characters): the "other texts" rows measure that copy.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pytest_sglang.base import secrets
from pytest_sglang.base.secrets import Registry, _Matcher, clip

SECRET = "sk-bench-{:06d}-Q7zX93kW"


class EagerRegistry(Registry):
    """The former registry: the scrubber rebuilt on every add."""

    def add(self, *values: object) -> None:
        super().add(*values)
        if self._values:
            self._matcher, self._built_for = _Matcher(self._values), self._values


def seconds(call: Callable[[], object], rounds: int = 1) -> float:
    """The median wall time of ``call`` over ``rounds`` runs, in seconds."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def register_one_by_one(kind: type[Registry], n: int) -> Callable[[], object]:
    def run() -> object:
        registry = kind()
        for i in range(n):
            registry.add(SECRET.format(i))
        return registry.scrub("a text without any of them")

    return run


def main() -> int:
    print("registering N secrets one at a time, then one scrub")
    print(f"{'N':>6} {'lazy ms':>10} {'eager ms':>10}")
    for n in (10, 100, 300):
        secrets._forms_of.cache_clear()
        lazy = seconds(register_one_by_one(Registry, n))
        secrets._forms_of.cache_clear()
        eager = seconds(register_one_by_one(EagerRegistry, n))
        print(f"{n:>6} {lazy * 1000:>10.1f} {eager * 1000:>10.1f}")

    print()
    print("scrubbing text with N registered secrets (two of them in the text, one cut at an ellipsis)")
    print(f"{'N':>6} {'text':>10} {'ms':>10} {'MB/s':>8}")
    for n in (10, 100):
        registry = Registry()
        registry.add(*(SECRET.format(i) for i in range(n)))
        for size in (4 * 1024, 1024 * 1024):
            words = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
            text = SECRET.format(1) + " " + words + " " + SECRET.format(n - 1)[:12] + "… " + words[:100]
            registry.scrub(text)  # the first scrub builds the scrubber
            took = seconds(lambda: registry.scrub(text), rounds=5)
            print(f"{n:>6} {len(text):>10} {took * 1000:>10.2f} {len(text) / took / 1e6:>8.1f}")

    print()
    print("scrubbing 1 MB of other texts with 100 registered secrets: what the folded copy costs")
    print(f"{'text':>34} {'ms':>10} {'MB/s':>8}")
    registry = Registry()
    registry.add(*(SECRET.format(i) for i in range(100)))
    line = "2026-01-01 12:00:00 INFO scheduler: decode batch, #running-req: 26, token usage: 0.41\n"
    texts = {
        "log lines (a line break each 86)": (line * (1024 * 1024 // len(line) + 1))[: 1024 * 1024],
        "%-encoded (every character)": "".join(f"%{b:02X}" for b in (b"lorem ipsum dolor " * 20000))[: 1024 * 1024],
        "HTML entities (every character)": "".join(f"&#{b};" for b in (b"lorem ipsum dolor " * 12000))[: 1024 * 1024],
    }
    for name, text in texts.items():
        registry.scrub(text)
        took = seconds(lambda: registry.scrub(text), rounds=3)
        print(f"{name:>34} {took * 1000:>10.2f} {len(text) / took / 1e6:>8.1f}")

    print()
    print("scrub(text, extra) with the same 20 extra secrets, 4 KB of text")
    extra = [SECRET.format(10_000 + i) for i in range(20)]
    text = ("an error body that echoes " + extra[3] + " and more words ") * 100
    secrets.scrub(text, extra)
    cached = seconds(lambda: secrets.scrub(text, extra), rounds=50)
    uncached = seconds(lambda: _Matcher(frozenset(extra)).scrub(secrets.SECRETS.scrub(text)), rounds=50)
    print(f"{'cached ms':>10} {'uncached ms':>12}")
    print(f"{cached * 1000:>10.3f} {uncached * 1000:>12.3f}")

    print()
    print("clip(text, 300, extra=...) of a 64 KB body (scrub, cut, scrub)")
    body = text * 16
    clip(body, 300, extra=extra)
    print(f"{seconds(lambda: clip(body, 300, extra=extra), rounds=20) * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
