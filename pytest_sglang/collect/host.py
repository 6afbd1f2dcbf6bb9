"""Collect host facts (GPUs, the SGLang process and its launch command, the logs of the
current run) over a :class:`~pytest_sglang.collect.shell.Shell`, in one round trip.

Everything sent is read-only. Values reach the script through ONE path: :func:`assignments`
puts each of them at the top as ``sg_name='value'`` (:func:`shlex.quote`), and the rest of the
script is fixed text that only ever says ``"$sg_name"``, whatever the values are. A value is
therefore always one argument, never shell text. The only free text is a ``cmd:`` log source,
the user's own command, which the script runs with ``eval "$sg_log"``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.collect.shell import Shell
from pytest_sglang.model.facts import GpuFact, HostFacts
from pytest_sglang.parse.lines import clean_line
from pytest_sglang.parse.logs import KEEP, PREVIOUS_RUN, STARTUP, LogSource, SGLangLogs, current_run
from pytest_sglang.parse.redact import redact_command, redact_log_line

MARK = "@@pytest-sglang:"
EXIT_MARK = "@@pytest-sglang-exit "
GPU_FIELDS = "index,name,compute_cap,memory.total,driver_version,uuid"
GPU_FIELDS_OLD = "index,name,memory.total,driver_version,uuid"  # drivers before compute_cap
SGLANG_PROCESS = "sglang[.]launch_server|sglang[ ]serve"

# Reads a file from its end and stops once past this run's start-up line: a 1 GB log costs
# one backwards scan of its tail, and only the matching lines cross the connection.
_AWK_CURRENT_RUN = (
    "BEGIN{state=0;n=0}"
    "{if(state==1){n++; if($0 ~ prev || n>200) exit; if($0 ~ keep) print; next}"
    " if($0 ~ keep) print; if(index($0, start)>0) state=1}"
)
# Keeps the lines worth bringing back from a command's output; the command's exit status comes
# last (a line starting with the exit mark), and a failure is reported with the last other line
# (the command's own error message).
_AWK_FILTER = (
    "{if(index($0, exitmark)==1){code=substr($0, length(exitmark)+1); next}"
    " if($0 ~ keep) print; else if($0 != \"\") last=$0}"
    " END{if(code != \"\" && code != \"0\") printf \"@@log-failed %s %s\\n\", code, last}"
)

# ---- the script: fixed text; every value is a "$sg_..." variable assigned by assignments() ----

_BODY = r"""
__s() { printf '\n%s%s@@\n' "$sg_mark" "$1"; }
__s gpus
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi "--query-gpu=$sg_gpu_fields" --format=csv,noheader,nounits </dev/null 2>&1 ||
    { __s gpus-old; nvidia-smi "--query-gpu=$sg_gpu_fields_old" --format=csv,noheader,nounits </dev/null 2>&1; }
  __s gpu-apps; nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader </dev/null 2>&1
else echo '@@missing nvidia-smi'; fi
__s systemd; pid=
if [ -n "$sg_unit" ]; then
  if command -v systemctl >/dev/null 2>&1; then
    systemctl show -p MainPID -p InvocationID -p ActiveEnterTimestamp -p ActiveState -p ExecStart -- "$sg_unit" </dev/null 2>&1
    pid=$(systemctl show -p MainPID --value -- "$sg_unit" </dev/null 2>/dev/null)
  else echo '@@missing systemctl'; fi
fi
case "$pid" in *[!0-9]*) pid= ;; esac
if [ -z "$pid" ] || [ "$pid" = 0 ]; then
  pid=
  for p in $(pgrep -f -- "$sg_process" 2>/dev/null); do
    args=" $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) "
    case "$args" in *" --port $sg_port "*|*" --port=$sg_port "*) pid=$p; break ;; esac
  done
  [ -n "$pid" ] || pid=$(pgrep -o -f -- "$sg_process" 2>/dev/null | head -n 1)
  case "$pid" in *[!0-9]*) pid= ;; esac
fi
__s pid; printf '%s\n' "$pid"
if [ -n "$pid" ] && [ "$pid" != 0 ]; then
  __s cmdline; tr '\0' '\n' < "/proc/$pid/cmdline" 2>&1
  __s visible; tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep '^CUDA_VISIBLE_DEVICES=' || true
  __s processes; ps -eo pid=,ppid= 2>/dev/null
fi
"""
# (Only CUDA_VISIBLE_DEVICES is read from the process's environment, which may hold secrets.)

_FILTERED = '| awk -v "keep=$sg_keep" -v "exitmark=$sg_exit" "$sg_filter"'

_LOG_BODY = {
    # --all: without it, -o json prints fields over 4096 bytes (the server_args line) as null.
    "journald": r"""
if command -v journalctl >/dev/null 2>&1; then
  inv=
  if command -v systemctl >/dev/null 2>&1; then
    inv=$(systemctl show -p InvocationID --value -- "$sg_log" </dev/null 2>/dev/null)
  fi
  case "$inv" in *[!0-9a-fA-F]*) inv= ;; esac
  if [ -n "$inv" ]; then
    printf '@@invocation %s\n' "$inv"
    journalctl -u "$sg_log" "_SYSTEMD_INVOCATION_ID=$inv" -o json --all --output-fields=MESSAGE --no-pager --grep "$sg_keep" </dev/null 2>&1
  else
    echo '@@no-invocation-id'
    journalctl -u "$sg_log" -o json --all --output-fields=MESSAGE --no-pager --grep "$sg_keep" </dev/null 2>&1
  fi
else echo '@@log-missing-tool journalctl'; fi
""",
    "file": r"""
if command -v tac >/dev/null 2>&1 && command -v awk >/dev/null 2>&1; then
  if [ -d "$sg_log" ]; then echo '@@log-directory'
  elif [ -r "$sg_log" ]; then
    echo '@@reversed'
    tac -- "$sg_log" </dev/null | awk -v "keep=$sg_keep" -v "prev=$sg_prev" -v "start=$sg_start" "$sg_current_run"
  elif [ -e "$sg_log" ]; then echo '@@log-unreadable'
  else echo '@@log-no-file'; fi
else
  for t in tac awk; do command -v "$t" >/dev/null 2>&1 || printf '@@log-missing-tool %s\n' "$t"; done
fi
""",
    "docker": r"""
if command -v docker >/dev/null 2>&1; then
  if started=$(docker inspect --type container --format "$sg_docker_started" -- "$sg_log" </dev/null 2>&1); then
    echo '@@since-start'
    { docker logs --since "$started" -- "$sg_log" </dev/null 2>&1; printf '%s%s\n' "$sg_exit" "$?"; } FILTERED
  else
    echo '@@log-docker-inspect'; printf '%s\n' "$started"
  fi
else echo '@@log-missing-tool docker'; fi
""".replace("FILTERED", _FILTERED),
    "kubectl": r"""
if command -v kubectl >/dev/null 2>&1; then
  echo '@@output'
  if [ -n "$sg_container" ]; then
    { kubectl logs -n "$sg_namespace" -c "$sg_container" -- "$sg_pod" </dev/null 2>&1; printf '%s%s\n' "$sg_exit" "$?"; } FILTERED
  else
    { kubectl logs -n "$sg_namespace" -- "$sg_pod" </dev/null 2>&1; printf '%s%s\n' "$sg_exit" "$?"; } FILTERED
  fi
else echo '@@log-missing-tool kubectl'; fi
""".replace("FILTERED", _FILTERED),
    # cmd: the user's own command line, run as written (the one free text; see the module doc).
    "cmd": r"""
echo '@@output'
{ ( eval "$sg_log" ) </dev/null 2>&1; printf '%s%s\n' "$sg_exit" "$?"; } FILTERED
""".replace("FILTERED", _FILTERED),
}


@dataclass(frozen=True)
class HostOptions:
    unit: str | None = None
    logs: LogSource | None = None
    timeout: float = 30.0
    port: int | None = None  # the target's HTTP port: picks the right process when several run


_OPTION_OF = {"unit": setting("unit"), "log": setting("logs"), "namespace": setting("logs"), "pod": setting("logs"), "container": setting("logs")}


def assignments(values: dict[str, str]) -> str:
    """The one way a value enters a host script: ``sg_NAME='value'`` lines, each value quoted
    by :func:`shlex.quote`. The script reads them only as ``"$sg_NAME"`` (one argument)."""
    lines = []
    for name, value in values.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ValueError(f"bad script variable name {name!r}")
        value = str(value)
        if "\0" in value:
            option = _OPTION_OF.get(name, "a value for the host")
            raise SpecError(f"{option} holds a NUL character, which no command on the host can receive: remove it")
        lines.append(f"sg_{name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def script_values(options: HostOptions) -> dict[str, str]:
    """Every value the collection script uses: the constants and what the user gave."""
    logs = options.logs
    unit = options.unit or (logs.target if logs and logs.kind == "journald" else "")
    values = {
        "mark": MARK,
        "exit": EXIT_MARK,
        "gpu_fields": GPU_FIELDS,
        "gpu_fields_old": GPU_FIELDS_OLD,
        "process": SGLANG_PROCESS,
        "unit": unit,
        "port": str(options.port) if options.port is not None else "",
        "keep": KEEP,
        "prev": PREVIOUS_RUN,
        "start": STARTUP,
        "current_run": _AWK_CURRENT_RUN,
        "filter": _AWK_FILTER,
        "docker_started": "{{.State.StartedAt}}",
        "log": logs.target if logs else "",
    }
    if logs is not None and logs.kind == "kubectl":
        namespace, pod, *container = logs.target.split("/")
        values.update(namespace=namespace, pod=pod, container=container[0] if container else "")
    return values


def collection_script(options: HostOptions) -> str:
    """One POSIX sh script that prints every host fact in marked sections: the values first
    (:func:`assignments`), then fixed text."""
    script = assignments(script_values(options)) + _BODY
    if options.logs is not None:
        script += "__s logs\n" + _LOG_BODY[options.logs.kind].lstrip("\n")
    return script


def parse_output(text: str, *, where: str, options: HostOptions) -> HostFacts:
    """The facts in the script's output. Raises :class:`TargetError` when the log source
    cannot be read (missing tool, file or container): an error, never empty logs."""
    sections = _sections(text)
    missing = [line.split(" ", 1)[1] for body in sections.values() for line in body.splitlines() if line.startswith("@@missing ")]
    gpus, gpu_source = _gpus(sections, where)
    pid = sections.get("pid", "").strip()
    pid = pid if pid.isascii() and pid.isdigit() else ""  # anything else is not a process id
    in_use = _gpus_in_use(sections, pid, gpus)
    visible = next((line.split("=", 1)[1] for line in sections.get("visible", "").splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")), None)
    launch, launch_source = _launch_command(sections, pid, where)
    systemd = _key_values(sections.get("systemd", ""))
    lines, log_source, warnings = _logs(sections.get("logs"), options.logs, where)
    # ANSI colours and carriage-return residue go; secrets are redacted before anything keeps them.
    lines = [redact_log_line(clean_line(line)) for line in lines]
    warnings = [redact_log_line(w) for w in warnings] + _port_warning(lines, options.port)
    return HostFacts(
        gpus=gpus,
        gpu_source=gpu_source,
        gpus_in_use=in_use,
        cuda_visible_devices=visible,
        launch_command=launch,
        launch_command_source=launch_source,
        pid=int(pid) if pid and pid != "0" else None,
        invocation_id=systemd.get("InvocationID") or None,
        log_lines=lines,
        log_source=log_source,
        log_warnings=warnings,
        missing_tools=sorted(set(missing)),
        where=where,
    )


def _sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    name = None
    chunk: list[str] = []
    for line in text.split("\n"):
        if line.startswith(MARK) and line.endswith("@@"):
            if name is not None:
                out[name] = "\n".join(chunk).strip("\n")
            name, chunk = line[len(MARK) : -2], []
        elif name is not None:
            chunk.append(line)
    if name is not None:
        out[name] = "\n".join(chunk).strip("\n")
    return out


def _gpus(sections: dict[str, str], where: str) -> tuple[list[GpuFact], str | None]:
    old = "gpus-old" in sections
    body = sections.get("gpus-old" if old else "gpus", "")
    if body.startswith("@@missing"):
        return [], None
    gpus = []
    for row in body.splitlines():
        cells = [c.strip() for c in row.split(",")]
        try:
            if old and len(cells) >= 5:
                index, name, memory, driver, uuid = cells[:5]
                cap = None
            elif not old and len(cells) >= 6:
                index, name, cap, memory, driver, uuid = cells[:6]
            else:
                continue
            gpus.append(GpuFact(index=int(index), name=name, compute_capability=cap or None, memory_mib=int(float(memory)), driver=driver, uuid=uuid))
        except ValueError:
            continue
    if not gpus:
        return [], None
    return gpus, f"nvidia-smi on {where}" + (" (no compute_cap: name table)" if old else "")


def _gpus_in_use(sections: dict[str, str], pid: str, gpus: list[GpuFact]) -> list[int]:
    """GPUs on which the SGLang process (``pid``, "" when unknown) or its descendants run (its TP schedulers)."""
    if not pid or not gpus:
        return []
    children: dict[str, list[str]] = {}
    for row in sections.get("processes", "").splitlines():
        parts = row.split()
        if len(parts) == 2:
            children.setdefault(parts[1], []).append(parts[0])
    family, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in family:
                family.add(child)
                todo.append(child)
    by_uuid = {g.uuid: g.index for g in gpus if g.uuid}
    used = set()
    for row in sections.get("gpu-apps", "").splitlines():
        cells = [c.strip() for c in row.split(",")]
        if len(cells) >= 2 and cells[0] in family and cells[1] in by_uuid:
            used.add(by_uuid[cells[1]])
    return sorted(used)


def _launch_command(sections: dict[str, str], pid: str, where: str) -> tuple[str | None, str | None]:
    argv = [a for a in sections.get("cmdline", "").split("\n") if a]
    if argv and not argv[0].startswith("tr:"):
        # Flags, and field=value text a wrapper may carry (python -c "...api_key='...'").
        return redact_command(shlex.join(redact_log_line(a) for a in argv)), f"/proc/{pid}/cmdline on {where}"
    exec_start = _key_values(sections.get("systemd", "")).get("ExecStart", "")
    if "argv[]=" in exec_start:
        words = exec_start.split("argv[]=", 1)[1].split(" ;", 1)[0]
        return redact_command(redact_log_line(words.strip())), f"systemd ExecStart on {where}"
    return None, None


def _key_values(body: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line and not line.startswith("@@"))


# What to do when a log source's tool is not on the host.
_INSTEAD = {
    "journalctl": f"read the log another way, e.g. {setting('logs')} file:PATH or cmd:COMMAND",
    "docker": f"install it, or read the log another way, e.g. {setting('logs')} file:PATH or cmd:COMMAND",
    "kubectl": f"reach the pod from a host that has kubectl, or give {setting('logs')} cmd:COMMAND",
    "tac": f"give {setting('logs')} cmd:COMMAND that prints the log (e.g. cmd:cat PATH)",
    "awk": f"give {setting('logs')} cmd:COMMAND that prints the log (e.g. cmd:cat PATH)",
}
_FILE_PROBLEMS = {
    "@@log-no-file": "no such file (give the path of the SGLang log on that host)",
    "@@log-directory": "a directory, not a file (give the path of the SGLang log file)",
    "@@log-unreadable": "the file is not readable by the user the plugin runs as there (give that user read permission, or give another path)",
}
_FAILED_COMMAND = {"docker": "docker logs", "kubectl": "kubectl logs", "cmd": "the command"}


def _logs(body: str | None, source: LogSource | None, where: str) -> tuple[list[str], str | None, list[str]]:
    """(lines, where they came from, warnings); a source that cannot be read raises TargetError."""
    if body is None or source is None:
        return [], None, []
    lines = body.splitlines()
    first = lines[0] if lines else ""
    shown = redact_log_line(str(source))

    def error(problem: str) -> TargetError:
        return TargetError(f"{setting('logs')} {shown} on {where}: {problem}")

    if first.startswith("@@log-missing-tool "):
        tool = first.split(" ", 1)[1].strip()
        raise error(f"{tool} is not installed there (or not on the PATH of a non-interactive shell): {_INSTEAD.get(tool, 'install it')}")
    if first in _FILE_PROBLEMS:
        raise error(_FILE_PROBLEMS[first])
    if first == "@@log-docker-inspect":
        said = _one_line(next((line for line in lines[1:] if line.strip()), "no output"))
        raise error(f"docker inspect failed: {said} (is the container name right, and may that user use docker?)")
    warnings: list[str] = []
    if lines and lines[-1].startswith("@@log-failed "):
        _, code, last = (lines.pop().split(" ", 2) + [""])[:3]
        what = f"{_FAILED_COMMAND.get(source.kind, 'the command')} failed (exit {code}{': ' + _one_line(last) if last.strip() else ''})"
        if not lines[1:]:  # nothing but the marker line
            raise error(what)
        warnings.append(f"{setting('logs')} {shown} on {where}: {what}; the lines it printed before are used")
    label = f"{shown} on {where}"
    if first.startswith("@@invocation "):
        return _journal(lines[1:], error), f"{label}, invocation {first.split(' ', 1)[1]}", warnings
    if first == "@@no-invocation-id":
        return current_run(_journal(lines[1:], error)), f"{label}, from the last start-up", warnings
    if first == "@@reversed":
        return list(reversed(lines[1:])), f"{label}, from the last start-up", warnings
    if first == "@@since-start":
        return lines[1:], f"{label}, since the container started", warnings
    if first == "@@output":
        return current_run(lines[1:]), label, warnings
    return current_run(lines), label, warnings


def _one_line(text: str) -> str:
    from pytest_sglang.base.secrets import clip

    return clip(redact_log_line(clean_line(text)), 200)


def _journal(rows: list[str], error: Callable[[str], TargetError]) -> list[str]:
    messages = _journal_messages(rows)
    if not messages:
        notes = " ".join(row for row in rows if not row.startswith("{"))
        if "insufficient permissions" in notes:
            raise error("the journal is not readable by the user the plugin runs as there (add it to the systemd-journal or adm group)")
        if "without pattern matching" in notes:
            raise error(f"journalctl there cannot --grep (built without pattern matching): give {setting('logs')} cmd:journalctl -u UNIT -o cat")
    return messages


def _port_warning(lines: list[str], port: int | None) -> list[str]:
    """A start-up line for another port than the target's: the log is likely another server's."""
    if port is None or not lines:
        return []
    startup = SGLangLogs(source="log", lines=lines).startup_line
    logged = startup.fields.get("port") if startup is not None else None
    if isinstance(logged, int) and not isinstance(logged, bool) and logged != port:
        return [f"the log's start-up line is for port {logged}, not the target's port {port}: {setting('logs')} may point at another server's log"]
    return []


def _journal_messages(rows: list[str]) -> list[str]:
    out = []
    for row in rows:
        try:
            entry = json.loads(row)
        except ValueError:
            continue  # journalctl's own notes, e.g. "-- No entries --"
        if not isinstance(entry, dict):
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, list):  # journald stores non-UTF-8 messages as byte arrays
            try:
                message = bytes(message).decode(errors="replace")
            except (TypeError, ValueError):
                continue
        if isinstance(message, str):
            out.append(message)
    return out


def collect_host(shell: Shell, options: HostOptions, *, where: str) -> HostFacts:
    """Every host fact, in one round trip over ``shell``."""
    result = shell.run(collection_script(options), timeout=options.timeout)
    return parse_output(result.stdout, where=where, options=options)
