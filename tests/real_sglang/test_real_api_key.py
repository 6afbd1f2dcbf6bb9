"""The plugin against a real SGLang 0.5.23 server launched with an api key (run with --real-sglang)."""

from __future__ import annotations

import pytest
import requests
from harness import API_KEY, FIXTURE_SUITE


@pytest.mark.parametrize(
    "args, outcome, message",
    [
        ([], {"errors": 1}, "requires an api key (401): pass --sglang-api-key"),
        (["--sglang-api-key", "sk-WRONG-1"], {"errors": 1}, "rejected the api key (401): the key given is wrong"),
        (["--sglang-api-key", API_KEY], {"passed": 1}, None),
    ],
    ids=["missing", "wrong", "right"],
)
def test_api_key_enforcement_matches_the_simulator(pytester, real_llama_with_key, args, outcome, message):
    pytester.makepyfile(FIXTURE_SUITE)
    result = pytester.runpytest("--sglang-host", real_llama_with_key.url, *args, "-p", "no:cacheprovider")
    result.assert_outcomes(**outcome)
    if message:
        result.stdout.fnmatch_lines([f"*{message}*"])
    # /health stays open, as the simulator's does
    assert requests.get(f"{real_llama_with_key.url}/health", timeout=30).status_code == 200


def test_secrets_given_at_launch_never_appear_in_the_plugins_output(pytester, real_llama_with_key):
    raw = requests.get(f"{real_llama_with_key.url}/server_info", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10).json()
    assert raw["api_key"] == API_KEY and API_KEY in raw["launch_command"]  # the server does return it
    pytester.makepyfile(
        """
        def test_everything(sglang, server_args, effective):
            print(sglang.raw, sglang.launch_command, sglang.facts.model_dump_json())
            assert server_args.as_dict() == {}
        """
    )
    result = pytester.runpytest("--sglang-host", real_llama_with_key.url, "--sglang-api-key", API_KEY, "-vv", "-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert API_KEY not in result.stdout.str() + result.stderr.str()
    assert "--api-key <redacted>" in result.stdout.str()
