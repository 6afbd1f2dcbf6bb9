"""First contact: whatever a host sends, whatever options say, the run keeps going for the
other hosts, every fault is one line for its host, and no key is ever printed or written."""

from __future__ import annotations

import copy
import json
import re
import socket
import threading
import time

import pytest

TWO_TESTS = """
def test_version(sglang):
    assert sglang.version

def test_effective(effective):
    assert effective.max_running_requests > 0
"""


@pytest.fixture
def good(canned, real_server_info, real_model_info):
    return canned().serve_sglang(real_server_info, real_model_info)


def one_line_error_for_that_host_only(result, bad: str, message: str) -> None:
    """The bad host's two tests error with ``message``; the good host's two tests pass."""
    result.assert_outcomes(passed=2, errors=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out and "During handling" not in out, out
    errors = [line for line in result.stdout.lines if message in line]
    assert errors, out
    assert all(bad in line or line.startswith("E ") or message in line for line in errors)


# ---- every fault is one line for that host only ---------------------------------------------


def test_a_host_name_with_an_empty_label_fails_that_host_only(pytester, good):
    pytester.makepyfile(TWO_TESTS)
    bad = "http://gpu1..example.com:30000"
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad)
    one_line_error_for_that_host_only(result, bad, "the host name 'gpu1..example.com' has an empty label")


def test_a_host_label_over_63_characters_fails_that_host_only(pytester, good):
    pytester.makepyfile(TWO_TESTS)
    bad = f"http://{'a' * 64}.example.com:30000"
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad)
    one_line_error_for_that_host_only(result, bad, "has a label longer than 63 characters")


def test_a_body_nested_500_deep_fails_that_host_only(pytester, good, canned, real_server_info, real_model_info):
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    info = dict(real_server_info, internal_states=deep)
    bad = canned().serve_sglang(info, real_model_info)
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad.url)
    one_line_error_for_that_host_only(result, bad.url, "the body nests deeper than 64 levels")


def test_a_body_nested_past_the_json_parsers_limit_fails_that_host_only(pytester, good, canned, real_model_info):
    bad = canned().serve_sglang({}, real_model_info)
    bad.routes["/server_info"] = (200, b"[" * 100_000 + b"]" * 100_000, 0.0)
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad.url)
    one_line_error_for_that_host_only(result, bad.url, "the body nests deeper than 64 levels")


def test_an_unexpected_exception_while_reading_a_host_is_that_hosts_one_line_error(pytester, good, monkeypatch):
    """The boundary itself: a bug or a library error inside collection fails that host only."""
    pytester.makeconftest(
        "import pytest_sglang.normaliser.snapshot as n\n"
        "real = n.normalise\n"
        "def boom(facts):\n"
        "    if 'boom' in facts.target:\n"
        "        raise RuntimeError('something inside broke')\n"
        "    return real(facts)\n"
        "import pytest_sglang.collect.http as h\n"
        "real_collect = h.collect_http\n"
        "def collect(client, **kw):\n"
        "    if '127.0.0.2' in client.base_url:\n"
        "        raise RuntimeError('something inside broke')\n"
        "    return real_collect(client, **kw)\n"
        "import pytest_sglang.target.sources.live as t\n"
        "t.collect_http = collect\n"
    )
    port = good.url.rsplit(":", 1)[1]
    bad = f"http://127.0.0.2:{port}"
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad)
    one_line_error_for_that_host_only(result, bad, "reading the target failed (RuntimeError: something inside broke)")


def test_a_key_a_header_cannot_carry_fails_that_host_only(pytester, good, monkeypatch):
    monkeypatch.setenv("GPU2_KEY", "sk-caf\u00e9-\u2603-KEY")
    port = good.url.rsplit(":", 1)[1]
    bad = f"http://127.0.0.1:{port}/other?api_key_env=GPU2_KEY"
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad)
    one_line_error_for_that_host_only(result, "http://127.0.0.1:" + port + "/other", "has a character outside Latin-1 at position 9")
    assert "\u2603" not in result.stdout.str()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sglang-timeout", "1e12"], "--sglang-timeout must be at most 86400 seconds (one day)"),
        (["--sglang-command-timeout", "1e300"], "--sglang-command-timeout must be at most 86400 seconds"),
        (["--sglang-api-key", "sk-\u2603-snowman"], "the api key for --sglang-api-key has a character outside Latin-1 at position 4"),
        (["--sglang-ssh-key", "/nonexistent/key"], "--sglang-ssh-key /nonexistent/key: no such file"),
        (["--sglang-ssh-known-hosts", "/"], "--sglang-ssh-known-hosts / is a directory: give the file"),
        (["--sglang-host", "https://gpu1:30000?verify=maybe"], "?verify=maybe is not understood: write verify=true, verify=false or verify=/path/to/ca-bundle.pem"),
        (["--sglang-host", "http://gpu1:30000/v1"], "give the server's root, not an endpoint"),
        (
            ["--sglang-host", "http://gpu1:30000?api_key_env=A", "--sglang-host", "http://gpu1:30000?api_key_env=B"],
            "--sglang-host http://gpu1:30000 is given twice with different options (api_key_env): give it once",
        ),
    ],
    ids=["timeout", "command-timeout", "api-key", "ssh-key", "known-hosts-dir", "verify", "v1", "twice"],
)
def test_option_errors_stop_the_run_before_any_test_in_one_line(pytester, args, message):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "\u2603" not in result.stderr.str()


def test_a_public_key_given_as_the_ssh_key_stops_the_run_before_any_test(pytester, tmp_path):
    pub = tmp_path / "id_ed25519.pub"
    pub.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDwn0xk7p7a8Q0v5m3m7X0Xh0p5m0m6m8k0b2v4d3s1q user@host\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--sglang-ssh-key", str(pub))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: --sglang-ssh-key {pub} is a public key: give the private one (without .pub)" in result.stderr.lines


def test_the_same_host_twice_with_the_same_options_runs_once(pytester, good):
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", good.url + "/")
    result.assert_outcomes(passed=2)


# ---- the timeout bounds the whole request -------------------------------------------------


class Drip:
    """Answers every request with headers, then one byte of body every 0.2 s (up to 300)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.sent: list[int] = []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        self.sent.append(0)  # bytes of body sent on this connection so far, kept up to date
        slot = len(self.sent) - 1
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n")
            while self.sent[slot] < 300 and not self.stop.is_set():
                conn.sendall(b" ")
                self.sent[slot] += 1
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() above; close() alone would not
        except OSError:
            pass
        self.sock.close()


def test_a_server_that_drips_its_answer_is_cut_off_at_the_timeout(pytester, good):
    drip = Drip()
    try:
        pytester.makepyfile(TWO_TESTS)
        result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", drip.url, "--sglang-timeout", "2")
        # "did not finish its answer within 2s" (or, on a loaded machine where even the headers
        # came late, "did not answer within 2s")
        one_line_error_for_that_host_only(result, drip.url, "within 2s: raise --sglang-timeout")
        # 2 s at a byte per 0.2 s is about 10 bytes; the whole answer would have taken 60 s.
        assert drip.sent and max(drip.sent) < 60, drip.sent
    finally:
        drip.close()


# ---- redirects ------------------------------------------------------------------------------


def test_a_redirect_to_another_host_is_refused_and_named(pytester, good, canned):
    port = good.url.rsplit(":", 1)[1]
    bad = canned()
    elsewhere = f"http://127.0.0.2:{port}/server_info?token=sk-REDIRECT-TOKEN"
    bad.routes["/server_info"] = (302, b"", 0.0)
    bad.headers = {"Location": elsewhere}
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad.url)
    one_line_error_for_that_host_only(result, bad.url, f"redirects to another host (http://127.0.0.2:{port}/server_info)")
    assert "sk-REDIRECT-TOKEN" not in result.stdout.str()


def test_a_redirect_within_the_target_is_followed(pytester, canned, real_server_info, real_model_info):
    server = canned().serve_sglang(real_server_info, real_model_info)
    server.routes["/server_info"] = (307, b"", 0.0)
    server.headers = {"Location": "/get_server_info"}
    pytester.makepyfile(TWO_TESTS)
    pytester.runpytest("--sglang-host", server.url).assert_outcomes(passed=2)


# ---- no key is ever printed or written -------------------------------------------------------

KEY = "sk-MY-SECRET-KEY-4242"


def assert_nowhere(result, *paths, secrets=(KEY,)) -> None:
    texts = [result.stdout.str(), result.stderr.str()] + [p.read_text(errors="replace") for p in paths if p.exists()]
    for text in texts:
        for secret in secrets:
            for form in {secret, secret.replace(" ", "%20"), secret.replace(" ", "+"), repr(secret)[1:-1]}:
                assert form not in text, f"{form!r} leaked:\n{text}"


def test_a_server_error_that_echoes_the_authorization_header_never_shows_the_key(pytester, good, canned, real_model_info):
    bad = canned().serve_sglang({}, real_model_info)
    bad.routes["/server_info"] = (500, f"internal error: request had Bearer {KEY} and failed".encode(), 0.0)
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-host", bad.url, "--sglang-api-key", KEY)
    one_line_error_for_that_host_only(result, bad.url, "internal error: request had Bearer <redacted> and failed")
    assert_nowhere(result)


def test_a_non_json_preview_that_echoes_the_key_never_shows_it(pytester, canned, real_model_info):
    bad = canned().serve_sglang({}, real_model_info)
    bad.routes["/server_info"] = (200, f"{KEY} <html>".encode(), 0.0)
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", bad.url, "--sglang-api-key", KEY)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*the body is not JSON (starts '<redacted> <html>')*"])
    assert_nowhere(result)


def test_a_key_with_a_trailing_carriage_return_is_sent_without_it_and_never_shown(pytester, good):
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", good.url, "--sglang-api-key", KEY + "\r", "-v")
    result.assert_outcomes(passed=2)
    assert {h.get("Authorization") for _, _, h in good.requests} == {f"Bearer {KEY}"}
    assert_nowhere(result, secrets=(KEY, KEY + "\r"))


PRINTS_THE_LAUNCH = """
def test_launch(sglang):
    print("launch:", sglang.launch_command, sglang.raw["server_info"])
    assert sglang.launch_command is None, sglang.launch_command
"""


@pytest.mark.parametrize(
    "key, launch",
    [
        ("horse battery staple 4242", "python -m sglang.launch_server --model-path /m --api-key {key} --port 30000"),
        ("sk-BASH-WRAPPED-4242", 'bash -c "python -m sglang.launch_server --model-path /m --api-key {key} --port 30000"'),
        ("sk-ENV-WRAPPED-4242", "env SGLANG_API_KEY={key} python -m sglang.launch_server --model-path /m --port 30000"),
    ],
    ids=["spaces-joined-unquoted", "bash-c", "env-prefix"],
)
def test_a_key_inside_the_servers_launch_command_never_shows(pytester, canned, real_server_info, real_model_info, key, launch, tmp_path):
    info = copy.deepcopy(real_server_info)
    info["api_key"] = key
    info["launch_command"] = launch.format(key=key)
    server = canned().serve_sglang(info, real_model_info)
    pytester.makepyfile(PRINTS_THE_LAUNCH)
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest("--sglang-host", server.url, "-rA", "-l", f"--junitxml={xml}", "-o", "junit_logging=all")
    result.assert_outcomes(failed=1)
    assert_nowhere(result, xml, secrets=(key, *key.split()[1:3]))


LOCALS = """
def test_locals(sglang):
    client = sglang.client
    headers = dict(client.session.headers)
    key = client._api_key
    options = __import__("pytest_sglang").TargetOptions(api_key=str(key))
    print("headers", headers)
    assert headers["Authorization"] == "nope"
"""


def test_locals_and_full_traces_never_show_the_key(pytester, good, tmp_path):
    pytester.makepyfile(LOCALS)
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest(
        "--sglang-host", good.url, "--sglang-api-key", KEY, "-l", "--fulltrace", "--tb=long", f"--junitxml={xml}", "-o", "junit_logging=all"
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert re.search(r"headers\s+= \{", out) and "Bearer <redacted>" in out  # the locals are shown, the key is not
    assert_nowhere(result, xml)


def test_a_spec_typo_never_echoes_the_simulator_key(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    for spec in (f"qwen35-122b?api_key={KEY}", f"sim://no-such-profile?api_key={KEY}", f"sim://x?api_key={KEY}&colour=red"):
        result = pytester.runpytest("--sglang-host", spec)
        assert_nowhere(result)


# ---- reports --------------------------------------------------------------------------------

FAILS = """
def test_running_requests(effective):
    assert effective.max_running_requests >= 4096
"""


def test_junit_xml_carries_the_values_read_by_a_failing_test(pytester, good, tmp_path):
    pytester.makepyfile(FAILS)
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest("--sglang-host", good.url, f"--junitxml={xml}")
    result.assert_outcomes(failed=1)
    failure = xml.read_text()
    assert "SGLang values read by this test" in failure
    assert "effective.max_running_requests = 2048" in failure
    # And once on the terminal, not twice.
    assert result.stdout.str().count("SGLang values read by this test") == 1


def test_junit_xml_carries_the_values_read_under_xdist(pytester, good, tmp_path):
    pytester.makepyfile(FAILS)
    xml = tmp_path / "junit.xml"
    result = pytester.runpytest("--sglang-host", good.url, f"--junitxml={xml}", "-n", "1", "-p", "xdist")
    result.assert_outcomes(failed=1)
    assert "effective.max_running_requests = 2048" in xml.read_text()


def test_host_access_options_with_a_simulated_target_say_they_are_not_used(pytester):
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("--sglang-host", "sim://qwen35-122b-a10b-4xrtx6000-baseline", "--sglang-ssh", "root@gpu1")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["sglang: sim://qwen35-122b-a10b-4xrtx6000-baseline: WARNING --sglang-ssh is not used for a simulated target*"]
    )


def test_the_api_key_is_hidden_from_reprs():
    from pytest_sglang import TargetOptions
    from pytest_sglang.base.secrets import Secret

    options = TargetOptions(api_key=KEY)
    assert KEY not in repr(options)
    assert isinstance(options.api_key, Secret) and options.api_key == KEY
    assert repr(Secret(KEY)) == "'<redacted>'" and f"Bearer {Secret(KEY)}" == f"Bearer {KEY}"


def test_the_scrubber_removes_every_form_of_a_registered_secret():
    from urllib.parse import quote, quote_plus

    from pytest_sglang.base.secrets import register, scrub

    secret = "pa ss/wörd\r\"x"
    register(secret)
    for form in (secret, quote(secret, safe=""), quote_plus(secret), repr(secret)[1:-1], json.dumps(secret)[1:-1], secret.strip()):
        assert "<redacted>" in scrub(f"before {form} after") and form not in scrub(f"before {form} after")
    assert scrub("nothing secret here") == "nothing secret here"
