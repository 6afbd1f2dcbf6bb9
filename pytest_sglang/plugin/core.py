"""The pytest layer: options, parametrisation over hosts, fixtures, markers, report.

Everything it hands to tests comes from the library (:class:`pytest_sglang.target.target.Target`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Generator, Iterator

import pytest

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SGLangError, SpecError
from pytest_sglang.base.secrets import scrub, scrub_object
from pytest_sglang.model.gpu import sm_from_capability
from pytest_sglang.plugin.markers import MARKERS, unmet
from pytest_sglang.plugin.settings import flag, from_ini, number, setting, spoken, spoken_error
from pytest_sglang.target.spec import HostSpec, parse_specs

if TYPE_CHECKING:  # the models and the HTTP stack load only when a test needs a target
    from pytest_sglang.model.config import Effective, ModelInfo, ServerArgs
    from pytest_sglang.parse.launch import LaunchCommand
    from pytest_sglang.parse.logs import SGLangLogs
    from pytest_sglang.target.target import GpuInfo, Target

HOST_FIXTURES = frozenset({"sglang", "server_args", "effective", "model_info", "gpu", "requested", "sglang_logs", "sglang_explain"})
HOW_TO_GIVE_HOST = "pass --sglang-host=http://HOST:PORT (or sim://PROFILE), set SGLANG_HOST, or add sglang_hosts to the ini file"
NO_HOST_REASON = f"no SGLang host given (--sglang-allow-no-host): {HOW_TO_GIVE_HOST}"


class _NoHost:
    display = "no-sglang-host"

    def __repr__(self) -> str:
        return "<no SGLang host>"


NO_HOST = _NoHost()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-host",
        action="append",
        dest="sglang_hosts",
        default=None,
        metavar="SPEC",
        help="SGLang target: http(s)://HOST:PORT or sim://PROFILE; repeat for several (ini: sglang_hosts, env: SGLANG_HOST)",
    )
    group.addoption(
        "--sglang-allow-no-host",
        dest="sglang_allow_no_host",
        action="store_true",
        default=None,
        help="skip tests that need an SGLang host when none is given (default: such a run fails, so a gate cannot pass by accident)",
    )
    group.addoption("--sglang-api-key", dest="sglang_api_key", default=None, metavar="KEY", help="api key sent as 'Authorization: Bearer' (env: SGLANG_API_KEY)")
    group.addoption("--sglang-timeout", dest="sglang_timeout", default=None, metavar="SECONDS", help="per-request timeout (default 10)")
    group.addoption(
        "--sglang-wait-ready",
        dest="sglang_wait_ready",
        default=None,
        metavar="SECONDS",
        help="poll /health until 200 for up to this long before reading (default 0: read at once)",
    )
    group.addoption("--sglang-sm", dest="sglang_sm", default=None, metavar="SM", help="GPU compute capability when the target cannot tell, e.g. 120 or 9.0")
    group.addoption("--sglang-ssh", dest="sglang_ssh", default=None, metavar="USER@HOST[:PORT]", help="host access over SSH (or 'local') for GPU facts, the launch command and logs (env: SGLANG_SSH)")
    group.addoption("--sglang-ssh-key", dest="sglang_ssh_key", default=None, metavar="PATH", help="SSH private key (default: ~/.ssh/config, the agent, ~/.ssh/id_*)")
    group.addoption("--sglang-ssh-known-hosts", dest="sglang_ssh_known_hosts", default=None, metavar="PATH", help="known_hosts file to verify host keys against (default ~/.ssh/known_hosts)")
    group.addoption("--sglang-ssh-config", dest="sglang_ssh_config", default=None, metavar="PATH", help="SSH config file (default ~/.ssh/config)")
    group.addoption("--sglang-ssh-insecure", dest="sglang_ssh_insecure", action="store_true", default=None, help="do not verify SSH host keys (reported in the header)")
    group.addoption("--sglang-unit", dest="sglang_unit", default=None, metavar="UNIT", help="systemd unit running SGLang: its main PID gives the launch command")
    group.addoption("--sglang-logs", dest="sglang_logs", default=None, metavar="SOURCE", help="logs of the current run: journald:UNIT, file:PATH, docker:NAME, kubectl:NS/POD or cmd:COMMAND")
    group.addoption("--sglang-command-timeout", dest="sglang_command_timeout", default=None, metavar="SECONDS", help="per-command timeout on the host (default 30)")
    parser.addini("sglang_hosts", "SGLang targets, one spec per line", type="linelist", default=[])
    parser.addini("sglang_allow_no_host", "skip tests that need an SGLang host when none is given", type="bool", default=False)
    parser.addini("sglang_api_key", "api key (prefer SGLANG_API_KEY: ini files are often committed)", default="")
    parser.addini("sglang_timeout", "per-request timeout in seconds", default="10")
    parser.addini("sglang_wait_ready", "seconds to wait for /health to answer 200", default="0")
    parser.addini("sglang_sm", "GPU compute capability when the target cannot tell", default="")
    parser.addini("sglang_ssh", "host access over SSH: USER@HOST[:PORT] or local", default="")
    parser.addini("sglang_ssh_key", "SSH private key", default="")
    parser.addini("sglang_ssh_known_hosts", "known_hosts file", default="")
    parser.addini("sglang_ssh_config", "SSH config file", default="")
    parser.addini("sglang_ssh_insecure", "do not verify SSH host keys", type="bool", default=False)
    parser.addini("sglang_unit", "systemd unit running SGLang", default="")
    parser.addini("sglang_logs", "log source of the current run", default="")
    parser.addini("sglang_command_timeout", "per-command timeout on the host, seconds", default="30")


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS.values():
        config.addinivalue_line("markers", f"{marker.signature}: {marker.help}")
    plugin = SGLangPlugin(config)
    config.stash[PLUGIN] = plugin
    config.pluginmanager.register(plugin, "sglang-session")


class SGLangPlugin:
    """Session state: the host specs and the targets opened for them (once each)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        raw_hosts = setting(config, "sglang_hosts", "SGLANG_HOST") or []
        if isinstance(raw_hosts, str):  # SGLANG_HOST: space-separated
            raw_hosts = raw_hosts.split()
        elif config.inipath is not None and from_ini(config, "sglang_hosts", "SGLANG_HOST"):
            raw_hosts = [_from_ini_dir(text, config) for text in raw_hosts]
        try:
            specs = parse_specs(raw_hosts)
        except SpecError as exc:
            raise pytest.UsageError(scrub(spoken(str(exc)))) from None
        if any(spec.is_simulated for spec in specs):
            from pytest_sglang.simulator import unknown_profile

            for spec in specs:
                problem = unknown_profile(spec.host) if spec.is_simulated else None
                if problem:  # one usage error now, not the same setup error in every test
                    raise pytest.UsageError(f"--sglang-host {problem}")
        self.specs = specs
        from pytest_sglang.target.options import TargetOptions, resolve_api_key
        from pytest_sglang.target.spec import register_secrets

        # The api key (resolved and registered once, here) and the keys the specs name are
        # secrets from the start, whatever later prints them; `pytest-sglang report` registers
        # the same ones.
        api_key = resolve_api_key(config.getoption("sglang_api_key"), ini=config.getini("sglang_api_key"))
        register_secrets(specs)
        sm_text = setting(config, "sglang_sm")
        try:
            sm = sm_from_capability(sm_text) if sm_text else None
        except SpecError as exc:
            raise pytest.UsageError(f"--sglang-sm: {exc}") from None
        self.options = TargetOptions(
            api_key=api_key,
            timeout=number(config, "sglang_timeout", default=10.0),
            wait_ready=number(config, "sglang_wait_ready", default=0.0, zero=True),
            sm=sm,
            ssh=setting(config, "sglang_ssh", "SGLANG_SSH"),
            ssh_key=setting(config, "sglang_ssh_key"),
            ssh_insecure=flag(config, "sglang_ssh_insecure"),
            ssh_known_hosts=setting(config, "sglang_ssh_known_hosts"),
            ssh_config=setting(config, "sglang_ssh_config"),
            unit=setting(config, "sglang_unit"),
            logs=setting(config, "sglang_logs"),
            command_timeout=number(config, "sglang_command_timeout", default=30.0),
        )
        try:
            self.options.validate()
            if self.options.logs:
                from pytest_sglang.parse.logs import LogSource

                LogSource.parse(self.options.logs)
        except SpecError as exc:
            raise pytest.UsageError(scrub(spoken(str(exc)))) from None
        self.allow_no_host = flag(config, "sglang_allow_no_host")
        self._targets: dict[str, Target | SGLangError] = {}

    def target(self, spec: HostSpec) -> Target:
        """The target for a spec, opened once per session; a failure is kept and re-raised."""
        from pytest_sglang.target.target import open_target

        found = self._targets.get(spec.display)
        if found is None:
            try:
                found = open_target(spec, self.options)
            except SGLangError as exc:
                found = spoken_error(exc)
            self._targets[spec.display] = found
        if isinstance(found, SGLangError):
            raise found
        return found

    def open_all(self) -> None:
        """Open every target not opened yet at once, one thread per host (each keeps its own error)."""
        pending = [spec for spec in self.specs if spec.display not in self._targets]
        if len(pending) > 1:
            from pytest_sglang.judge.fleet import open_targets

            opened = open_targets(pending, self.options)
            self._targets.update({name: spoken_error(found) if isinstance(found, SGLangError) else found for name, found in opened.items()})

    # ---- hooks ----------------------------------------------------------------------------
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [scrub(spoken(line)) for line in self._header(config)]

    def _header(self, config: pytest.Config) -> list[str]:
        if not self.specs:
            if self.allow_no_host:
                return ["sglang: no host (--sglang-allow-no-host: tests that need one are skipped)"]
            return ["sglang: no host"]
        if config.getoption("collectonly"):
            return [f"sglang: {spec.display}" for spec in self.specs]
        lines = []
        self.open_all()
        for spec in self.specs:
            try:
                target = self.target(spec)
            except SGLangError as exc:
                lines.append(f"sglang: {spec.display}: ERROR {exc}")
                continue
            lines.append(f"sglang: {spec.display}: {target.describe()}")
            lines += [f"sglang: {spec.display}: WARNING {warning}" for warning in target.warnings]
            note = _release_note(target.version)
            if note:
                lines.append(f"sglang: {spec.display}: NOTE {note}")
        return lines

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """A run whose tests need a host, given none, fails: a CI gate that forgot
        --sglang-host must not pass by skipping everything."""
        if hasattr(config, "workerinput"):
            return  # under xdist the controller decides, once (below)
        needing = [item.nodeid for item in items if getattr(getattr(item, "callspec", None), "params", {}).get("_sglang_host") is NO_HOST]
        message = self._no_host_message(needing)
        if message:
            raise pytest.UsageError(message)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        message = self._no_host_message([i for i in ids if f"[{NO_HOST.display}" in i or f"-{NO_HOST.display}" in i])
        dsession = self.config.pluginmanager.getplugin("dsession")
        if message and dsession is not None and not dsession.shouldstop:
            dsession.shouldstop = message

    def _no_host_message(self, needing: list[str]) -> str | None:
        if not needing or self.specs or self.allow_no_host or self.config.getoption("collectonly"):
            return None
        return (
            f"{len(needing)} collected test(s) need an SGLang host and none was given: {HOW_TO_GIVE_HOST}; "
            "to skip them on purpose, pass --sglang-allow-no-host (ini: sglang_allow_no_host = true)"
        )

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        uses_host = bool(HOST_FIXTURES & set(metafunc.fixturenames)) or "_sglang_host" in metafunc.fixturenames
        marked = any(True for name in MARKERS for _ in metafunc.definition.iter_markers(name=name))
        if not (uses_host or marked):
            return
        if "_sglang_host" not in metafunc.fixturenames:
            metafunc.fixturenames.append("_sglang_host")
        params: list[Any] = list(self.specs) or [NO_HOST]
        metafunc.parametrize("_sglang_host", params, ids=[p.display for p in params], scope="session")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        _reads.start()
        try:
            yield
        finally:
            item.stash[READS] = _reads.stop()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is not None and report.failed:
            from pytest_sglang.model.config import FieldNotInRelease

            if isinstance(call.excinfo.value, FieldNotInRelease):
                report.longrepr = _one_line(item, call.excinfo)  # the field and release say it all
        reads = item.stash.get(READS, None)
        if report.when == "call" and report.failed and reads:
            from pytest_sglang.render.values import values_read

            text = spoken(values_read(reads, self._causes))
            if text:
                # In the failure text itself, so JUnit XML and xdist carry it too.
                if hasattr(report.longrepr, "addsection"):
                    report.longrepr.addsection("SGLang values read by this test", text)
                else:
                    report.sections.append(("SGLang values read by this test", text))
        error = call.excinfo.value if call.excinfo is not None else None
        if report.skipped or isinstance(error, SGLangError):  # not a test's own assertion about a message
            speak_report(report)
        scrub_report(report)

    def _causes(self, obj: Any, name: str, value: Any) -> list[str]:
        """The rules that set a value a failing test read (its target explained once, cached)."""
        from pytest_sglang.target.target import Target

        target = self._targets.get(getattr(obj, "_target", ""))
        if not isinstance(target, Target):
            return []
        from pytest_sglang.judge.explain.cause import causes

        return causes(target, getattr(obj, "_label", ""), name, value)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, None]:
        outcome = yield
        scrub_report(outcome.get_result())

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for found in self._targets.values():
            if not isinstance(found, SGLangError):
                found.close()
        self._targets.clear()


def _from_ini_dir(text: str, config: pytest.Config) -> str:
    """``replay:FILE`` in the ini file: a relative FILE is the ini file's neighbour (as
    ``pytest-sglang init`` writes it), given here relative to the current directory."""
    if text[:7].lower() != "replay:" or text[7:].startswith(("/", "~")) or "://" in text:
        return text
    assert config.inipath is not None
    path = config.inipath.parent / text[7:]
    return f"replay:{os.path.relpath(path, config.invocation_params.dir)}"


def _one_line(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """``FILE:LINE: message``, at the test's own line that read the value."""
    mine = [entry for entry in excinfo.traceback if entry.path == item.path]
    where = f"{item.path.name}:{mine[-1].lineno + 1}: " if mine else ""
    return f"{where}{excinfo.value}"


def _release_note(version: str | None) -> str | None:
    """For a host whose SGLang the knowledge base does not cover: whose rules are used, and
    how that release itself can answer (the note explain gives too)."""
    from pytest_sglang.model.knowledge.fields import release_fields
    from pytest_sglang.model.versions import outside_note, parse_version

    parsed = parse_version(version)
    return outside_note(parsed, list(release_fields())) if parsed is not None else None


def speak_report(report: Any) -> None:
    """A skip reason, or the failure a library error made (a client's timeout raised in a
    test), with the settings the library names given as this plugin's options."""
    if report.passed or report.longrepr is None:
        return
    if isinstance(report.longrepr, (str, tuple)):
        report.longrepr = scrub_object(report.longrepr, text=spoken)
    else:
        scrub_object(report.longrepr, text=spoken)


def scrub_report(report: Any) -> None:
    """Every string a report carries (failure text, locals, captured output, skip reasons)
    through the one scrubber, so no known secret reaches the terminal, JUnit XML or a log."""
    from pytest_sglang.base.secrets import SECRETS

    if not len(SECRETS):
        return
    if isinstance(report.longrepr, (str, tuple)):
        report.longrepr = scrub_object(report.longrepr)
    elif report.longrepr is not None:
        scrub_object(report.longrepr)
        if SECRETS.found_in(str(report.longrepr)):  # a shape the walk does not know: keep the text, scrubbed
            report.longrepr = scrub(str(report.longrepr))
    report.sections = [(scrub(title), scrub(text)) for title, text in report.sections]


PLUGIN = pytest.StashKey[SGLangPlugin]()
READS = pytest.StashKey[dict]()


# ---- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sglang(_sglang_host: Any, request: pytest.FixtureRequest) -> Target:
    """The SGLang target under test: spec, version, raw responses and parsed models."""
    if _sglang_host is NO_HOST:
        plugin = request.config.stash[PLUGIN]
        if not plugin.allow_no_host:
            pytest.fail(plugin._no_host_message([request.node.nodeid]) or NO_HOST_REASON, pytrace=False)
        pytest.skip(NO_HOST_REASON)
    try:
        return request.config.stash[PLUGIN].target(_sglang_host)
    except SGLangError as exc:
        error = exc
    # Outside the except block, so pytest shows this one line and no chained exception.
    message = str(error) if _sglang_host.display in str(error) else f"{_sglang_host.display}: {error}"
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def server_args(sglang: Target) -> ServerArgs:
    """Every argument the target reports (after SGLang's own start-up adjustments)."""
    return sglang.server_args


@pytest.fixture(scope="session")
def effective(sglang: Target) -> Effective:
    """The values in force, each with where it came from."""
    return sglang.effective


@pytest.fixture(scope="session")
def model_info(sglang: Target) -> ModelInfo:
    """``/model_info``: model path, architectures, modalities."""
    return sglang.model_info


@pytest.fixture(scope="session")
def gpu(sglang: Target) -> GpuInfo:
    """The target's GPUs: name, compute capability, count, the devices in use, the source."""
    from pytest_sglang.target.target import GpuInfo

    info = GpuInfo.of(sglang)
    if info is None:
        pytest.skip(spoken(f"no GPU facts for {sglang.name}: {sglang.gpu_unknown_reason()}"))
    return info


@pytest.fixture(scope="session")
def requested(sglang: Target) -> LaunchCommand:
    """The launch command, parsed into the fields it requests."""
    if sglang.requested is None:
        pytest.skip(spoken(f"the launch command of {sglang.name} is unknown: {sglang.launch_unknown_reason()}"))
    return sglang.requested


@pytest.fixture(scope="session")
def sglang_logs(sglang: Target) -> SGLangLogs:
    """The lines of the current run's log that matter: start-up, capacity, pools, adjustments."""
    if sglang.logs is None:
        how = "give --sglang-logs journald:UNIT|file:PATH|docker:NAME|kubectl:NS/POD|cmd:COMMAND"
        if sglang.facts.host is None:
            how += " (with --sglang-ssh USER@HOST or local)"
        pytest.skip(f"no logs for {sglang.name}: {how}")
    return sglang.logs


@pytest.fixture(autouse=True)
def _sglang_requirements(request: pytest.FixtureRequest) -> Iterator[None]:
    marks = [(m.name, tuple(m.args)) for name in MARKERS for m in request.node.iter_markers(name=name)]
    if marks:
        problem = _marker_problem(marks)
        if problem:  # outside any except block: one line, no chained exception
            pytest.fail(problem, pytrace=False)
        target: Target = request.getfixturevalue("sglang")
        reason = unmet(target, marks)
        if reason:
            pytest.skip(spoken(reason))
    yield


def _marker_problem(marks: list[tuple[str, tuple[Any, ...]]]) -> str | None:
    for name, args in marks:
        try:
            MARKERS[name].validate(args)
        except SpecError as exc:
            return str(exc)
    return None
