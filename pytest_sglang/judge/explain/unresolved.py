"""Rules undecided because the launch command's shell text does not give a value they read.

``--max-running-requests $MAX_RUNNING_REQUESTS`` with the variable never set in the text: the
field is not judged as the text ``$MAX_RUNNING_REQUESTS`` (see
:mod:`pytest_sglang.parse.shellscript`); every rule that reads it is undecided, and one finding
per field names the value and the rules waiting for it.
"""

from __future__ import annotations

import re

from pytest_sglang.judge.explain.findings import Finding
from pytest_sglang.parse.launch import LaunchCommand

_NAME = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def unresolved_gap(fact: str, ids: list[str], launch: LaunchCommand) -> Finding:
    """The undecided finding for ``unresolved.FIELD`` (``unresolved.env.NAME``)."""
    field = fact.removeprefix("unresolved.")
    shown = launch.unresolved.get(field, field)
    why = launch.unresolved_why.get(field, f"`{shown}` is not known here")
    listed = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    rules = f"{len(ids)} rule{'s' if len(ids) != 1 else ''}"
    return Finding(
        id=f"gap.{fact}",
        rule=f"gap.{fact}",
        severity="info",
        status="undecided",
        setting=field,
        title=f"{why}: rules that read {field} are undecided",
        summary=f"{field} is written as {shown} in the launch command, and its value is not known here, so {rules} could not be decided ({listed})",
        cause="A value the shell text does not give (a variable it never sets, a command's output, a script argument) is never judged as the text it was written as: a rule that reads it is neither applied nor assumed away.",
        needs=[fact],
        how_to_provide=[_how(shown, why)],
        related=ids,
    )


def unresolved_help(fact: str) -> str:
    field = fact.removeprefix("unresolved.")
    return f"the value of {field}: write it in the launch command in place of the shell expansion, or set the variable in the script before the command"


def _how(shown: str, why: str) -> str:
    name = _NAME.fullmatch(shown)
    if name is not None and "is not set in this file" in why:
        return f"set {name.group(1)}=... in the script before the command, or write the value in place of {shown}"
    return f"write the value in place of {shown}"
