"""Progress lines for the real tier's long first-time steps (installing SGLang, downloading
release wheels, making the tiny models), shown on the terminal even while pytest captures
output, so a CI log shows what the first minutes are spent on. Outside pytest (the scripts run
by hand) they go to stderr. Nothing is written when nothing needs installing."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

_config: Any = None


def attach(config: Any) -> None:
    """Write through this pytest run's terminal (``pytest_configure`` of the tier's conftest)."""
    global _config
    _config = config


def detach() -> None:
    global _config
    _config = None


def say(message: str) -> None:
    config = _config
    if config is None:  # a script run by hand
        print(message, file=sys.stderr, flush=True)
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    # An xdist worker has no terminal of its own; its stderr, uncaptured, is the run's.
    worker = hasattr(config, "workerinput")
    reporter = None if worker else config.pluginmanager.getplugin("terminalreporter")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        if reporter is None:  # the controller may be mid-line (its progress dots)
            print("\n" + message, file=sys.stderr, flush=True)
        else:
            writer = getattr(reporter, "_tw", None)
            if writer is not None and writer.width_of_current_line:
                reporter.write("\n")  # after the progress dots of -q, which write_line would not end
            reporter.write_line(message)
            reporter.flush()


def shown(path: Path) -> str:
    """A path as a person reads it: under the home directory as ``~/...``."""
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if text == home or text.startswith(home + os.sep) else text
