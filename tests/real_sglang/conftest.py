"""The real-SGLang tier: real SGLang 0.5.23 servers on CPU, started once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import progress  # noqa: E402
from harness import API_KEY  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    # Installing SGLang and downloading wheels the first time takes minutes: say so on the
    # terminal, past output capture.
    progress.attach(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    progress.detach()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Under xdist the tier runs in one worker: see pytest_xdist_make_scheduler in tests/conftest.py.
    if config.getoption("--real-sglang"):
        return
    skip = pytest.mark.skip(reason="real SGLang tier: run with --real-sglang (installs SGLang 0.5.23 for CPU once)")
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    try:
        return harness.ensure_environment()
    except harness.HarnessError as exc:
        pytest.fail(f"cannot install SGLang {harness.SGLANG_VERSION} for CPU: {exc}", pytrace=False)


def _serve(name: str, kind: str, tmp_path_factory: pytest.TempPathFactory, sglang_python: Path, **kw):  # type: ignore[no-untyped-def]
    """Launch and wait for readiness. SGLang on a loaded two-core machine can, rarely, come up
    with a scheduler that never answers (or lose its port between our pick and its bind): the
    first failure is shown with its log tail and the server is launched once more, on a new
    port; a second failure fails the tests that need it."""
    model = harness.ensure_model(kind)
    for attempt in (1, 2):
        server = harness.launch(name, model, log_dir=tmp_path_factory.mktemp("logs"), **kw)
        try:
            harness.wait_ready(server)
            return server
        except harness.HarnessError as exc:
            server.stop()
            if attempt == 2:
                pytest.fail(f"{name} did not start twice; the second time: {exc}", pytrace=False)
            progress.say(f"{name} did not start; launching it once more. {exc}")
        except BaseException:
            server.stop()
            raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def real_llama(tmp_path_factory, sglang_python):  # type: ignore[no-untyped-def]
    # SGLang publishes sglang:num_running_reqs at a prefill (the requests already running) and
    # every decode_log_interval-th decode step (default 40). Requests that start together also
    # end together, so at the default a whole level of 8-token requests can publish nothing but
    # 0; a decode log on every step makes the running requests visible to the /metrics watch.
    server = _serve("llama-tp1", "llama", tmp_path_factory, sglang_python, extra=["--decode-log-interval", "1"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def real_llama_with_key(tmp_path_factory, sglang_python):  # type: ignore[no-untyped-def]
    server = _serve("llama-tp1-key", "llama", tmp_path_factory, sglang_python, api_key=API_KEY)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def real_qwen_moe_tp2(tmp_path_factory, sglang_python):  # type: ignore[no-untyped-def]
    server = _serve("qwen3moe-tp2", "qwen3moe", tmp_path_factory, sglang_python, tp=2)
    yield server
    server.stop()
