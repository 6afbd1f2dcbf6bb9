"""The simulator's 0.5.23 answers have the shapes a real SGLang 0.5.23 server's have.

The real shapes (keys and kinds, not values) are in ``tests/data/real-0.5.23-shapes.json``,
captured by ``tests/real_sglang/capture_shapes.py``; the real tier checks they are current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import shape_differences

from pytest_sglang.simulator import load_profile
from pytest_sglang.simulator.server import SimServer

sys.path.insert(0, str(Path(__file__).parent / "real_sglang"))
from capture_shapes import DATA, capture  # noqa: E402

REAL = json.loads(DATA.read_text())


@pytest.fixture(scope="module")
def simulated() -> dict:
    with SimServer(load_profile("qwen35-122b-a10b-4xrtx6000-0.5.23")) as server:
        return capture(server.url)


ANSWERS = sorted(k for k, v in REAL.items() if isinstance(v, dict) and k not in ("metrics", "malformed_json", "not_found"))


@pytest.mark.parametrize("answer", ANSWERS)
def test_each_answer_has_the_real_shape(simulated, answer):
    assert shape_differences(simulated[answer], REAL[answer]) == []


@pytest.mark.parametrize("answer", [k for k, v in REAL.items() if not isinstance(v, dict)])
def test_streams_end_and_unknown_models_are_treated_as_the_real_server_does(simulated, answer):
    assert simulated[answer] == REAL[answer]


def test_errors_have_the_real_status_and_shape(simulated):
    assert simulated["not_found"] == REAL["not_found"]
    assert simulated["malformed_json"]["status"] == REAL["malformed_json"]["status"]
    assert shape_differences(simulated["malformed_json"]["shape"], REAL["malformed_json"]["shape"]) == []


def test_every_metric_the_simulator_exports_is_a_real_one_of_the_same_type(simulated):
    wrong = {name: kind for name, kind in simulated["metrics"].items() if REAL["metrics"].get(name) != kind}
    assert wrong == {}
    core = {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput", "sglang:token_usage", "sglang:max_total_num_tokens", "sglang:time_to_first_token_seconds"}
    assert core <= simulated["metrics"].keys()
