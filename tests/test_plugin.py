"""The plugin as users run it: pytest, options, fixtures, ids, errors, secrets."""

from __future__ import annotations

import copy
import re
import time

import pytest

SUITE = """
def test_version(sglang):
    assert sglang.version == "0.5.23"

def test_effective(effective):
    assert effective.max_running_requests == 2048

def test_args(server_args):
    assert server_args.tp_size == 1

def test_model(model_info):
    assert model_info.architectures == ["LlamaForCausalLM"]

def test_no_host_needed():
    pass
"""


@pytest.fixture
def sglang_server(canned, real_server_info, real_model_info):
    return canned().serve_sglang(real_server_info, real_model_info)


def no_traceback(result):
    text = result.stdout.str()
    assert "Traceback" not in text and "site-packages" not in text, text


def test_without_a_host_a_run_that_needs_one_fails_in_one_line_before_any_test(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: 4 collected test(s) need an SGLang host and none was given: pass --sglang-host=http://HOST:PORT "
        "(or sim://PROFILE), set SGLANG_HOST, or add sglang_hosts to the ini file; to skip them on purpose, "
        "pass --sglang-allow-no-host (ini: sglang_allow_no_host = true)"
    ]
    assert "passed" not in result.stdout.str()  # not even the test that needs no host ran
    no_traceback(result)


def test_without_a_host_the_run_fails_under_xdist_too(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-n", "2", "-p", "xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "need an SGLang host and none was given" in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("how", [["--sglang-allow-no-host"], ["-o", "sglang_allow_no_host=true"]], ids=["option", "ini"])
def test_skipping_host_tests_without_a_host_is_an_explicit_choice(pytester, how):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-rs", *how)
    result.assert_outcomes(passed=1, skipped=4)
    result.stdout.fnmatch_lines(["*no SGLang host given (--sglang-allow-no-host): pass --sglang-host=http://HOST:PORT*"])


def test_a_suite_that_needs_no_host_runs_without_one(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_fixtures_resolve_against_a_live_server_and_ids_name_the_host(pytester, sglang_server):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", sglang_server.url, "-v")
    result.assert_outcomes(passed=5)
    host = sglang_server.url
    result.stdout.fnmatch_lines([f"sglang: {host}: SGLang 0.5.23, /models/tiny-llama (LlamaForCausalLM), GPU unknown, tp 1", f"*test_version[[]{host}[]] PASSED*"])


def test_each_endpoint_is_read_once_per_session(pytester, sglang_server):
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.parametrize('i', range(30))\n"
        "def test_many(i, effective, server_args, model_info, sglang):\n"
        "    assert effective.max_running_requests == 2048\n"
    )
    result = pytester.runpytest("--sglang-host", sglang_server.url)
    result.assert_outcomes(passed=30)
    paths = [path for _, path, _ in sglang_server.requests]
    assert paths.count("/server_info") == 1
    assert paths.count("/model_info") == 1
    # /v1/loads and /v1/models are absent on this canned server: one try each, no retries.
    assert paths.count("/v1/loads") == 1 and paths.count("/v1/models") == 1


def test_one_unreachable_host_does_not_affect_the_others(pytester, sglang_server, free_port):
    pytester.makepyfile(SUITE)
    bad = f"http://127.0.0.1:{free_port}"
    result = pytester.runpytest("--sglang-host", sglang_server.url, "--sglang-host", bad, "--sglang-timeout", "2")
    result.assert_outcomes(passed=5, errors=4)
    result.stdout.fnmatch_lines([f"cannot connect to {bad} (connection refused): is the SGLang server running, and is the port right?*"])
    no_traceback(result)


@pytest.mark.parametrize(
    "routes, args, message",
    [
        ({}, [], "answered 404 on /server_info and /get_server_info: this is probably not an SGLang server"),
        ({"/server_info": (401, {"error": "Unauthorized"}, 0)}, [], "requires an api key (401): pass --sglang-api-key"),
        ({"/server_info": (401, {"error": "Unauthorized"}, 0)}, ["--sglang-api-key", "wrong-key-value"], "rejected the api key (401)"),
        ({"/server_info": (200, b"<html>hello</html>", 0)}, [], "the body is not JSON (starts '<html>hello</html>')"),
        ({"/server_info": (200, {"hello": "world"}, 0)}, [], "answered JSON that is not SGLang's server info"),
        ({"/server_info": (500, b"Internal Server Error", 0)}, [], "/server_info: Internal Server Error"),
        ({"/server_info": (200, {"version": "0.5.23"}, 3.0)}, ["--sglang-timeout", "0.5"], "did not answer within 0.5s: raise --sglang-timeout"),
        ({"/health": (503, b"", 0)}, ["--sglang-wait-ready", "0.6"], "was not ready within 0.6s (--sglang-wait-ready); last: /health answered 503"),
    ],
    ids=["not-sglang", "401-no-key", "401-wrong-key", "not-json", "other-json", "500", "slow", "never-ready"],
)
def test_a_bad_target_is_one_clear_line(pytester, canned, routes, args, message):
    server = canned()
    server.routes.update(routes)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", server.url, *args)
    result.assert_outcomes(passed=1, errors=4)
    result.stdout.fnmatch_lines([f"*{message}*"])
    no_traceback(result)
    assert "wrong-key-value" not in result.stdout.str()


def test_wait_ready_waits_through_warm_up(pytester, canned, real_server_info, real_model_info):
    server = canned().serve_sglang(real_server_info, real_model_info)
    server.routes["/health"] = (503, b"", 0.0)
    import threading

    def warm_up() -> None:  # ready only once the plugin has been told "503" at least once
        for _ in range(400):
            if any(p == "/health" for _, p, _ in server.requests):
                break
            time.sleep(0.025)
        time.sleep(0.2)
        server.routes["/health"] = (200, b"", 0.0)

    threading.Thread(target=warm_up, daemon=True).start()
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", server.url, "--sglang-wait-ready", "10")
    result.assert_outcomes(passed=5)
    assert sum(1 for _, p, _ in server.requests if p == "/health") >= 2


def test_the_api_key_is_sent_as_bearer_and_never_printed(pytester, canned, real_server_info, real_model_info, monkeypatch):
    server = canned().serve_sglang(real_server_info, real_model_info)
    monkeypatch.setenv("SGLANG_API_KEY", "sk-from-env-123")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", server.url, "-v")
    result.assert_outcomes(passed=5)
    assert all(h.get("Authorization") == "Bearer sk-from-env-123" for _, _, h in server.requests)
    assert "sk-from-env-123" not in result.stdout.str()


def test_per_host_key_from_a_named_variable(pytester, canned, real_server_info, real_model_info, monkeypatch):
    server = canned().serve_sglang(real_server_info, real_model_info)
    monkeypatch.setenv("GPU1_KEY", "sk-gpu1")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", f"{server.url}?api_key_env=GPU1_KEY", "-v")
    result.assert_outcomes(passed=5)
    assert server.requests[0][2]["Authorization"] == "Bearer sk-gpu1"
    result.stdout.fnmatch_lines([f"*test_version[[]{server.url}[]] PASSED*"])


SECRETS = ("sk-live-SECRET1", "adm-SECRET2", "pw-SECRET3", "wm-SECRET4")


def test_secrets_the_server_returns_never_reach_output(pytester, canned, real_server_info, real_model_info):
    info = copy.deepcopy(real_server_info)
    info.update(api_key=SECRETS[0], admin_api_key=SECRETS[1], ssl_keyfile_password=SECRETS[2], watermark_key=SECRETS[3])
    info["launch_command"] = f"--model-path m --api-key {SECRETS[0]} --admin-api-key={SECRETS[1]}"
    info["internal_states"][0].update(api_key=SECRETS[0], admin_api_key=SECRETS[1])
    server = canned().serve_sglang(info, real_model_info)
    pytester.makepyfile(
        """
        def test_prints_everything(sglang, server_args, effective):
            print(sglang.raw)
            print(server_args.as_dict(), sglang.launch_command, sglang.internal_states)
            assert server_args.api_key == "nope"

        def test_compares_dicts(server_args):
            assert server_args.as_dict() == {}

        def test_launch_command(sglang):
            assert sglang.launch_command == ""
        """
    )
    result = pytester.runpytest("--sglang-host", server.url, "-vv", "-rA", "--sglang-api-key", SECRETS[0])
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    for secret in SECRETS:
        assert secret not in out
    assert "<redacted>" in out


def test_a_failed_assertion_shows_each_value_read_and_its_source(pytester, sglang_server):
    pytester.makepyfile(
        """
        def test_capacity(effective, server_args):
            assert server_args.tp_size == 1
            assert effective.max_running_requests >= 4096
        """
    )
    result = pytester.runpytest("--sglang-host", sglang_server.url)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert 2048 >= 4096*",
            "*SGLang values read by this test*",
            sglang_server.url,
            "  server_args.tp_size = 1",
            "      from /server_info tp_size",
            "  effective.max_running_requests = 2048",
            "      from /server_info internal_states[[]0[]].effective_max_running_requests_per_dp",
            "      requested nothing: the launch command leaves SGLang's default, /server_info launch_command",
        ]
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("gpu1:30000", "--sglang-host 'gpu1:30000' has no scheme: did you mean http://gpu1:30000?"),
        ("ftp://gpu1:30000", "scheme 'ftp' is not supported"),
        ("http://gpu1:99999", "--sglang-host http://gpu1:99999: the port is not a number in 1-65535"),
        ("http://gpu1:3000O", "--sglang-host http://gpu1:3000O: the port is not a number in 1-65535"),
        ("http://[::1:30000", "--sglang-host http://[::1:30000: Invalid IPv6 URL (an IPv6 address is written http://[::1]:30000)"),
        ("http://admin:hunter2@gpu1:30000", "must not carry credentials"),
        ("http://gpu1:30000?sh=root", "unknown option(s) sh"),
        ("sim://no-such-profile", "unknown simulator profile 'no-such-profile'; bundled profiles: "),
    ],
)
def test_a_bad_spec_is_a_one_line_usage_error(pytester, spec, message):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", spec)
    message = re.sub(r"[\[\]]", lambda m: f"[{m.group()}]", message)  # literal brackets for fnmatch
    assert "hunter2" not in result.stdout.str() + result.stderr.str()
    # An unknown simulator profile too: one usage error before any test, not one error per test.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *{message}*"])
    no_traceback(result)


def test_hosts_from_ini_and_environment(pytester, sglang_server, monkeypatch):
    pytester.makepyfile(SUITE)
    pytester.makeini(f"[pytest]\nsglang_hosts =\n    {sglang_server.url}\n")
    pytester.runpytest().assert_outcomes(passed=5)
    monkeypatch.setenv("SGLANG_HOST", sglang_server.url)
    pytester.makeini("[pytest]\n")
    pytester.runpytest().assert_outcomes(passed=5)


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--sglang-timeout", "0", "--sglang-timeout must be more than 0 seconds, not '0'"),
        ("--sglang-command-timeout", "-5", "--sglang-command-timeout must be more than 0 seconds, not '-5'"),
        ("--sglang-wait-ready", "-1", "--sglang-wait-ready must be 0 or more seconds, not '-1'"),
        ("--sglang-timeout", "nan", "--sglang-timeout must be a finite number of seconds, not 'nan'"),
    ],
)
def test_timeouts_out_of_range_are_usage_errors(pytester, option, value, message):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", "http://127.0.0.1:9", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_a_bad_ini_timeout_names_the_ini_key_and_the_option_overrides_it(pytester, sglang_server):
    pytester.makepyfile(SUITE)
    pytester.makeini("[pytest]\nsglang_timeout = inf\n")
    result = pytester.runpytest("--sglang-host", sglang_server.url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini sglang_timeout must be a finite number of seconds, not 'inf'"])
    pytester.runpytest("--sglang-host", sglang_server.url, "--sglang-timeout", "5").assert_outcomes(passed=5)


def test_option_values_that_are_not_numbers_are_usage_errors(pytester, sglang_server):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", sglang_server.url, "--sglang-timeout", "soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --sglang-timeout must be a number of seconds, not 'soon'"])
    result = pytester.runpytest("--sglang-host", sglang_server.url, "--sglang-sm", "blackwell")
    result.stderr.fnmatch_lines(["ERROR: --sglang-sm: 'blackwell' is not a compute capability*"])
