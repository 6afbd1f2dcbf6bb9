"""Stand-in for `python3 -m sglang.launch_server` on the test host.

A real process tree without a GPU: the main process starts four "TP scheduler" children the way
SGLang does (multiprocessing, spawn), writes their pids next to the package and sleeps until it is
told to stop (SIGTERM/SIGINT), or until the process that started the test host is gone.
"""

import ctypes
import json
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / "standin.json"
PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1


def _prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scheduler(rank, parent):
    """A TP rank: sleeps; leaves with its parent."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(PR_SET_NAME, ctypes.c_char_p(f"sglang::sch_TP{rank}".encode()[:15]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while os.getppid() == parent:
        time.sleep(0.5)


def main():
    config = json.loads(CONFIG.read_text())
    ctx = mp.get_context("spawn")
    procs = []

    def stop(*_):
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=2)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for rank in range(int(config.get("tp", 4))):
        p = ctx.Process(target=scheduler, args=(rank, os.getpid()), name=f"TP{rank}", daemon=True)
        p.start()
        procs.append(p)
    out = Path(config["children_file"])
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps([p.pid for p in procs]))
    os.replace(tmp, out)
    watch = config.get("watch_pid")
    while True:
        time.sleep(0.5)
        if watch and not _alive(watch):
            stop()


if __name__ == "__main__":
    main()
