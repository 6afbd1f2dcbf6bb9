"""What counts as a secret, and how launch commands are redacted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sglang.parse.redact import MAX_DEPTH, REDACTED, TooDeep, is_secret_key, redact_command, redact_mapping


def test_exactly_the_credentials_of_a_real_0523_server_are_secret(real_server_info):
    secret = {k for k in real_server_info if is_secret_key(k)}
    assert secret == {"api_key", "admin_api_key", "ssl_keyfile_password", "watermark_key", "watermark_key_b", "watermark_config"}


@pytest.mark.parametrize("key", ["hub_api_key", "proxy_password", "hf_token", "storage_access_token", "client_secret"])
def test_a_future_field_named_like_a_credential_is_secret(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["bucket_time_to_first_token", "speculative_token_map", "tbo_token_distribution_threshold", "max_total_num_tokens", "ssl_keyfile", "tokenizer_path"]
)
def test_token_counts_and_paths_are_not_secret(key):
    assert not is_secret_key(key)


def test_unset_secrets_stay_unset_so_tests_can_tell():
    data = redact_mapping({"api_key": None, "admin_api_key": "x", "nested": [{"ssl_keyfile_password": "p"}]})
    assert data == {"api_key": None, "admin_api_key": REDACTED, "nested": [{"ssl_keyfile_password": REDACTED}]}


@pytest.mark.parametrize(
    "command, expected",
    [
        ("--model-path m --api-key sk-1 --tp 2", "--model-path m --api-key <redacted> --tp 2"),
        ("--api-key=sk-1 --admin-api-key adm", "--api-key=<redacted> --admin-api-key <redacted>"),
        ("HF_TOKEN=hf_x OPENAI_API_KEY=sk python -m sglang.launch_server --ssl-keyfile-password pw", "HF_TOKEN=<redacted> OPENAI_API_KEY=<redacted> python -m sglang.launch_server --ssl-keyfile-password <redacted>"),
        ("--watermark-config '{\"key\": 1}' --json-model-override-args '{\"a\": 1}'", "--watermark-config <redacted> --json-model-override-args '{\"a\": 1}'"),
        # argparse reads any unambiguous prefix: '--api sk-1' is '--api-key sk-1'.
        ("--api sk-1 --admin-api=adm --ssl-keyfile-pass pw", "--api <redacted> --admin-api=<redacted> --ssl-keyfile-pass <redacted>"),
        ("--ssl-keyfile /etc/k.pem --ssl-certfile /etc/c.pem", "--ssl-keyfile /etc/k.pem --ssl-certfile /etc/c.pem"),
    ],
)
def test_launch_commands_keep_everything_but_the_secret_values(command, expected):
    assert redact_command(command) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "[2026-05-20 10:11:12] server_args=ServerArgs(model_path='m', api_key='sk-1', admin_api_key=None, tp_size=4)",
            "[2026-05-20 10:11:12] server_args=ServerArgs(model_path='m', api_key='<redacted>', admin_api_key=None, tp_size=4)",
        ),
        ("server_args={'api_key': 'sk-1', 'ssl_keyfile_password': \"p'w\", 'tp_size': 4}", "server_args={'api_key': '<redacted>', 'ssl_keyfile_password': '<redacted>', 'tp_size': 4}"),
        ("launching: python -m sglang.launch_server --api-key sk-1 --tp 4", "launching: python -m sglang.launch_server --api-key <redacted> --tp 4"),
        ("launching: python -m sglang.launch_server --api-k sk-1 --tp 4", "launching: python -m sglang.launch_server --api-k <redacted> --tp 4"),
        ("max_total_num_tokens=8192, max_running_requests=48", "max_total_num_tokens=8192, max_running_requests=48"),
    ],
)
def test_log_lines_lose_their_secret_values_only(line, expected):
    from pytest_sglang.parse.redact import redact_log_line

    assert redact_log_line(line) == expected


def test_a_redacted_startup_line_still_parses():
    from pytest_sglang import parse_startup_line
    from pytest_sglang.parse.redact import redact_log_line

    line = parse_startup_line(redact_log_line("server_args=ServerArgs(api_key='sk-1', tp_size=4)"))
    assert line.complete and line.fields == {"api_key": REDACTED, "tp_size": 4}


@pytest.mark.parametrize("version", ["0.5.5", "0.5.12", "0.5.23"])
def test_a_parsed_launch_command_shows_no_secret_whatever_the_spelling(version):
    from pytest_sglang.parse.launch import parse_launch_command

    secrets = ["sk-abbrev", "sk-equals", "hf_unknown", "pw-unknown", "sk-custom"]
    launch = parse_launch_command(
        "HF_TOKEN=hf_env python -m sglang.launch_server --model-path m --api-ke sk-abbrev --admin-api=sk-equals "
        "--hf-token hf_unknown --ssl-keyfile-password pw-unknown --my-proxy-api-key sk-custom",
        sglang_version=version,
    )
    shown = repr(launch)  # every attribute: text, argv, env, requested, unknown, problems
    assert not [secret for secret in [*secrets, "hf_env"] if secret in shown]


def test_the_environment_of_a_launch_command_is_redacted_alike_in_its_text_and_its_env():
    from pytest_sglang.parse.launch import parse_launch_command

    launch = parse_launch_command("DB_PASSWD=pw-1 HUB_KEY=key-1 HF_TOKEN=hf-1 CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m")
    assert launch.env == {"DB_PASSWD": "<redacted>", "HUB_KEY": "<redacted>", "HF_TOKEN": "<redacted>", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert launch.text.startswith("DB_PASSWD=<redacted> HUB_KEY=<redacted> HF_TOKEN=<redacted> CUDA_VISIBLE_DEVICES=0,1 python")


def _nested(shape: list[bool], leaf: dict) -> object:
    """``leaf`` inside one container per entry of ``shape`` (True: a dict, False: a list)."""
    value: object = leaf
    for is_dict in reversed(shape):
        value = {"k": value, "n": 1} if is_dict else [value, "s"]
    return value


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=MAX_DEPTH + 8), st.sampled_from(["sk-0123456789abcdef", "", None]))
def test_data_is_refused_exactly_when_it_nests_deeper_than_the_limit_and_else_redacted_at_any_depth(shape, key):
    data = _nested(shape, {"api_key": key, "note": f"key {key} here"})
    depth = len(shape) + 1  # the leaf is a dict too
    if depth > MAX_DEPTH:
        with pytest.raises(TooDeep):
            redact_mapping(data)
        return
    out = redact_mapping(data)
    for is_dict in shape:
        out = out["k"] if is_dict else out[0]
    assert out["api_key"] == (REDACTED if key else key)
    assert (key or "never-there") not in out["note"]


_KEYS = st.sampled_from(["api_key", "admin_api_key", "hub_access_token", "model_path", "launch_command", "note", "n", "watermark_config"])
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(["", "short", "sk-0123456789abcdef", "--api-key sk-0123456789abcdef --port 1", "uses sk-0123456789abcdef inside", "pw-longer-than-eight"]),
)
_JSON = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_one_walk_redacts_as_finding_the_secrets_first_and_then_redacting(data):
    """What redact_mapping returns is its definition: every secret value found first, then
    the copy made with each of them removed from every string (two walks; it takes one when
    no secret needs looking for)."""
    from pytest_sglang.parse import redact

    reference = redact._redacted(data, redact._spellings(redact._secret_strings(data)))
    assert redact_mapping(data) == reference
