"""Collect host facts (GPUs, the SGLang process and its launch command, the logs of the
current run) over a :class:`~pytest_sglang.shell.Shell`, in one round trip.

Everything sent is read-only and built with quoted arguments; the only free text is a
``cmd:`` log source, which is the user's own command.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from .facts import GpuFact, HostFacts
from .logs import KEEP, PREVIOUS_RUN, STARTUP, LogSource, current_run
from .parse import clean_line
from .redact import redact_command, redact_log_line
from .shell import Shell, command

MARK = "@@pytest-sglang:"
GPU_FIELDS = "index,name,compute_cap,memory.total,driver_version,uuid"
GPU_FIELDS_OLD = "index,name,memory.total,driver_version,uuid"  # drivers before compute_cap

# Reads a file from its end and stops once past this run's start-up line: a 1 GB log costs
# one backwards scan of its tail, and only the matching lines cross the connection.
_AWK_CURRENT_RUN = (
    "BEGIN{state=0;n=0}"
    "{if(state==1){n++; if($0 ~ prev || n>200) exit; if($0 ~ keep) print; next}"
    " if($0 ~ keep) print; if(index($0, start)>0) state=1}"
)


@dataclass(frozen=True)
class HostOptions:
    unit: str | None = None
    logs: LogSource | None = None
    timeout: float = 30.0
    port: int | None = None  # the target's HTTP port: picks the right process when several run


def collection_script(options: HostOptions) -> str:
    """One POSIX sh script that prints every host fact in marked sections."""
    unit = options.unit or (options.logs.target if options.logs and options.logs.kind == "journald" else "")
    parts = [
        f"unit={shlex.quote(unit)}",
        f"port={shlex.quote(str(options.port or ''))}",
        f"__s() {{ printf '\\n{MARK}%s@@\\n' \"$1\"; }}",
        "__s gpus",
        "if command -v nvidia-smi >/dev/null 2>&1; then",
        f"  {command('nvidia-smi', f'--query-gpu={GPU_FIELDS}', '--format=csv,noheader,nounits')} 2>&1 ||"
        f" {{ __s gpus-old; {command('nvidia-smi', f'--query-gpu={GPU_FIELDS_OLD}', '--format=csv,noheader,nounits')} 2>&1; }}",
        f"  __s gpu-apps; {command('nvidia-smi', '--query-compute-apps=pid,gpu_uuid', '--format=csv,noheader')} 2>&1",
        "else echo '@@missing nvidia-smi'; fi",
        "__s systemd; pid=",
        'if [ -n "$unit" ]; then',
        "  if command -v systemctl >/dev/null 2>&1; then",
        '    systemctl show -p MainPID -p InvocationID -p ActiveEnterTimestamp -p ActiveState -p ExecStart "$unit" 2>&1',
        '    pid=$(systemctl show -p MainPID --value "$unit" 2>/dev/null)',
        "  else echo '@@missing systemctl'; fi",
        "fi",
        # Without a unit (or a unit without a main process), find the launcher by its command
        # line: the one serving the target's port, else the oldest.
        'if [ -z "$pid" ] || [ "$pid" = 0 ]; then',
        "  pid=",
        "  for p in $(pgrep -f 'sglang[.]launch_server|sglang[ ]serve' 2>/dev/null); do",
        "    args=\" $(tr '\\0' ' ' < \"/proc/$p/cmdline\" 2>/dev/null) \"",
        '    case "$args" in *" --port $port "*|*" --port=$port "*) pid=$p; break;; esac',
        "  done",
        "  [ -n \"$pid\" ] || pid=$(pgrep -o -f 'sglang[.]launch_server|sglang[ ]serve' 2>/dev/null | head -n 1)",
        "fi",
        '__s pid; echo "$pid"',
        'if [ -n "$pid" ] && [ "$pid" != 0 ]; then',
        "  __s cmdline; tr '\\0' '\\n' < \"/proc/$pid/cmdline\" 2>&1",
        # Only this variable is read from the environment, which may hold secrets.
        "  __s visible; tr '\\0' '\\n' < \"/proc/$pid/environ\" 2>/dev/null | grep '^CUDA_VISIBLE_DEVICES=' || true",
        "  __s processes; ps -eo pid=,ppid= 2>/dev/null",
        "fi",
    ]
    if options.logs is not None:
        parts += ["__s logs", _log_script(options.logs)]
    return "\n".join(parts) + "\n"


def _log_script(source: LogSource) -> str:
    keep = shlex.quote(KEEP)
    if source.kind == "journald":
        # --all: without it, -o json prints fields over 4096 bytes (the server_args line) as null.
        unit = shlex.quote(source.target)
        return "\n".join(
            [
                f"inv=$(systemctl show -p InvocationID --value {unit} 2>/dev/null)",
                'if [ -n "$inv" ]; then',
                '  echo "@@invocation $inv"',
                f'  journalctl -u {unit} "_SYSTEMD_INVOCATION_ID=$inv" -o json --all --output-fields=MESSAGE --no-pager --grep {keep} 2>&1',
                "else",
                "  echo '@@no-invocation-id'",
                f"  journalctl -u {unit} -o json --all --output-fields=MESSAGE --no-pager --grep {keep} 2>&1",
                "fi",
            ]
        )
    if source.kind == "file":
        path = shlex.quote(source.target)
        awk = command("awk", "-v", f"keep={KEEP}", "-v", f"prev={PREVIOUS_RUN}", "-v", f"start={STARTUP}", _AWK_CURRENT_RUN)
        return f"if [ -r {path} ]; then echo '@@reversed'; tac {path} | {awk}; else echo '@@unreadable {source.target}'; fi"
    if source.kind == "docker":
        name = shlex.quote(source.target)
        return f"started=$(docker inspect -f '{{{{.State.StartedAt}}}}' {name} 2>&1) && docker logs --since \"$started\" {name} 2>&1 | grep -E {keep}"
    if source.kind == "kubectl":
        namespace, pod, *container = source.target.split("/")
        argv = ["kubectl", "logs", "-n", namespace, pod] + (["-c", container[0]] if container else [])
        return f"{command(*argv)} 2>&1 | grep -E {keep}"
    # cmd: the user's own command line, run as written.
    return f"( {source.target} ) 2>&1 | grep -E {keep}"


def parse_output(text: str, *, where: str, options: HostOptions) -> HostFacts:
    sections = _sections(text)
    missing = [line.split(" ", 1)[1] for body in sections.values() for line in body.splitlines() if line.startswith("@@missing ")]
    gpus, gpu_source = _gpus(sections, where)
    pid = sections.get("pid", "").strip()
    pid = pid if pid.isascii() and pid.isdigit() else ""  # anything else is not a process id
    in_use = _gpus_in_use(sections, pid, gpus)
    visible = next((line.split("=", 1)[1] for line in sections.get("visible", "").splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")), None)
    launch, launch_source = _launch_command(sections, pid, where)
    systemd = _key_values(sections.get("systemd", ""))
    lines, log_source = _logs(sections.get("logs"), options.logs, where)
    # ANSI colours and carriage-return residue go; secrets are redacted before anything keeps them.
    lines = [redact_log_line(clean_line(line)) for line in lines]
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


def _logs(body: str | None, source: LogSource | None, where: str) -> tuple[list[str], str | None]:
    if body is None or source is None:
        return [], None
    lines = body.splitlines()
    label = f"{source} on {where}"
    if lines and lines[0].startswith("@@invocation "):
        label = f"{source} on {where}, invocation {lines[0].split(' ', 1)[1]}"
        return _journal_messages(lines[1:]), label
    if lines and lines[0] == "@@no-invocation-id":
        return current_run(_journal_messages(lines[1:])), f"{source} on {where}, from the last start-up"
    if lines and lines[0] == "@@reversed":
        return list(reversed(lines[1:])), f"{source} on {where}, from the last start-up"
    if lines and lines[0].startswith("@@unreadable"):
        return [], f"{source} on {where}: not readable"
    if source.kind == "docker":
        return lines, f"{source} on {where}, since the container started"
    return current_run(lines), label


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
