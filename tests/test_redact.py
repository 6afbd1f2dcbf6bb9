"""What counts as a secret, and how launch commands are redacted."""

from __future__ import annotations

import pytest

from pytest_sglang.redact import REDACTED, is_secret_key, redact_command, redact_mapping


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
    ],
)
def test_launch_commands_keep_everything_but_the_secret_values(command, expected):
    assert redact_command(command) == expected
