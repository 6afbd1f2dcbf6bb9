"""How long explaining takes (goals: loading the knowledge base < 100 ms; explaining a target,
a launch command or a start-up line < 50 ms once it is loaded; the cause line of a failing
test's value < 1 ms once its target was explained).

    python benchmarks/explain.py

Loading is measured in a fresh interpreter (the first load of a process: reading, validating
and compiling every rule file, after the package is imported; the import, mostly pydantic, is
shown on its own line) and warm (the same again, caches cleared). Explaining a target is measured on the bundled
candidate deployment after its facts were collected (collection is measured elsewhere:
benchmarks/host_facts.py); each round recomputes the findings. A target without a launch
command (and a start-up line) is explained by one evaluation per value a rule sets, plus one.
The cause lines of a failing test are measured as the failure section gets them: the target's
explanation is cached on the target (the first failure of a host pays for explaining it,
knowledge base loaded; every later one only looks up).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_sglang import connect
from pytest_sglang.judge.explain import engine, kb
from pytest_sglang.judge.explain.api import explain, explain_launch
from pytest_sglang.judge.explain.cause import causes
from pytest_sglang.judge.explain.situation import from_target
from pytest_sglang.judge.explain.startup import explain_reported, explain_startup_line
from pytest_sglang.simulator.host import simulated_host
from pytest_sglang.simulator.profile import load_profile

GOALS = {"load": 100.0, "explain": 50.0, "cause": 1.0}


def timed(func, rounds: int) -> list[float]:
    func()
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        out.append((time.perf_counter() - start) * 1000)
    return out


def show(name: str, times: list[float], goal: float) -> bool:
    median, worst = statistics.median(times), max(times)
    ok = median < goal
    print(f"{name:<58} median {median:7.2f} ms   max {worst:7.2f} ms   goal < {goal:g} ms   {'ok' if ok else 'SLOW'}")
    return ok


def fresh_interpreter(rounds: int = 5) -> tuple[list[float], list[float]]:
    """(importing the explain package, then its first load), each in a new interpreter."""
    code = (
        "import time; t = time.perf_counter(); "
        "from pytest_sglang.judge.explain import kb; t1 = time.perf_counter(); kb.load(); "
        "print((t1 - t) * 1000, (time.perf_counter() - t1) * 1000)"
    )
    imports, loads = [], []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        imports.append(float(out[0]))
        loads.append(float(out[1]))
    return imports, loads


def first_cause_in_a_process(rounds: int = 3) -> list[float]:
    """The first cause line of a pytest process, each in a new interpreter, after the target
    was collected: importing explain, loading the knowledge base, explaining the target."""
    code = (
        "import time\n"
        "from pytest_sglang import connect\n"
        "with connect('sim://qwen35-122b-a10b-4xrtx6000-candidate') as t:\n"
        "    t.snapshot\n"
        "    s = time.perf_counter()\n"
        "    from pytest_sglang.judge.explain.cause import causes\n"
        "    causes(t, 'effective', 'max_running_requests', 26)\n"
        "    print((time.perf_counter() - s) * 1000)\n"
    )
    return [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1]) for _ in range(rounds)]


def main() -> int:
    ok = True
    base = kb.load()
    print(f"knowledge base: {len(base)} rules, SGLang {base.oldest}-{base.newest}")

    def warm_load() -> None:
        kb.load.cache_clear()
        kb.load()

    imports, loads = fresh_interpreter()
    print(f"{'import pytest_sglang.judge.explain, fresh interpreter (pydantic included)':<58} median {statistics.median(imports):7.2f} ms   (not a goal: paid once per process)")
    ok &= show("first load in a fresh interpreter (read, validate, compile)", loads, GOALS["load"])
    ok &= show("load, warm (parse + validate + compile)", timed(warm_load, 30), GOALS["load"])
    knowledge = kb.load()

    command = load_profile("qwen35-122b-a10b-4xrtx6000-candidate").launch_command
    ok &= show(
        "explain_launch: the seed candidate, 4x RTX PRO 6000, 0.5.12",
        timed(lambda: explain_launch(command, gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", sglang_version="0.5.12", model="Qwen3_5MoeForConditionalGeneration", kb=knowledge), 200),
        GOALS["explain"],
    )
    ok &= show(
        "explain_launch: the seed candidate pasted, release unknown",
        timed(lambda: explain_launch(command, gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", model="Qwen3_5MoeForConditionalGeneration", kb=knowledge), 50),
        GOALS["explain"],
    )
    ok &= show(
        "explain_launch: a checkpoint path only, release unknown",
        timed(lambda: explain_launch("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --max-running-requests 64", kb=knowledge), 50),
        GOALS["explain"],
    )
    with connect("sim://qwen35-122b-a10b-4xrtx6000-candidate") as target:
        target.snapshot  # collected once, as in a pytest session
        ok &= show(
            "explain(target): sim candidate, facts already collected",
            timed(lambda: engine.explain_situation(from_target(knowledge, target)), 200),
            GOALS["explain"],
        )

        def first_cause() -> None:  # a fresh explanation each round: the first failure on a host
            target.__dict__.pop("_explanations", None)
            causes(target, "effective", "max_running_requests", 26)

        ok &= show("cause line, first failure on a host (explains the target)", timed(first_cause, 100), GOALS["explain"])
        ok &= show("cause line, every later failure (explanation cached)", timed(lambda: causes(target, "effective", "max_running_requests", 26), 1000), GOALS["cause"])
        first = first_cause_in_a_process()
        print(f"{'first cause line of a process (import, load, explain)':<58} median {statistics.median(first):7.2f} ms   (not a goal: paid once per process, only when a test fails)")
        explain(target)

    profile = json.loads((Path(load_profile.__code__.co_filename).parent / "profiles" / "qwen35-122b-a10b-4xrtx6000-candidate.json").read_text())
    profile.pop("launch_command")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "candidate-without-launch-command.json"
        path.write_text(json.dumps(profile))
        with connect(f"sim://{path}") as target:
            target.snapshot
            ok &= show(
                "explain(target) without a launch command (reported values)",
                timed(lambda: explain_reported(from_target(knowledge, target)), 100),
                GOALS["explain"],
            )
    log = "\n".join(simulated_host(load_profile("qwen35-122b-a10b-4xrtx6000-candidate")).log_lines)
    ok &= show(
        "explain_startup_line: the seed candidate's start-up log",
        timed(lambda: explain_startup_line(log, gpu="RTX PRO 6000", gpus=4, model="Qwen3_5MoeForConditionalGeneration", sglang_version="0.5.12", kb=knowledge), 100),
        GOALS["explain"],
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
