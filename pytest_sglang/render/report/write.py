"""Writing the run's reports: the JSON document, its Markdown summary and its HTML page, each
through the scrubber and the one safe writer, each problem one line. Used by the pytest plugin at
the end of a run and by ``pytest-sglang report`` from a saved JSON document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from pytest_sglang.base.secrets import scrub
from pytest_sglang.judge.gate.models import RunReport


def _write(path: Path, text: str) -> str | None:
    from pytest_sglang.base.files import FileError, write_text

    try:
        write_text(path, scrub(text), what="report")
    except FileError as exc:
        return str(exc)
    except OSError as exc:
        return f"could not write the report {path}: {exc.strerror or exc}"
    return None


def write_reports(document: RunReport | Mapping[str, Any], json_path: Path | None, md_path: Path | None, html_path: Path | None = None, *, html_link: str | None = None, charts: bool | None = None) -> list[str]:
    """Write the reports through the scrubber; returns the problems (one line each). When both
    the Markdown and the HTML report are written, the Markdown links to the HTML one (by
    ``html_link`` when given, else by its path relative to the Markdown file). ``charts``: draw
    the HTML page's charts (default: when the ``report`` extra is installed). ``document``: the
    JSON document (written as it is) or a :class:`RunReport`; a document the report's models
    refuse raises :class:`~pytest_sglang.render.report.document.ReportError` (one line naming
    the field) before the Markdown or HTML report is written."""
    return list(write_report_files(document, json_path, md_path, html_path, html_link=html_link, charts=charts).values())


def write_report_files(document: RunReport | Mapping[str, Any], json_path: Path | None, md_path: Path | None, html_path: Path | None = None, *, html_link: str | None = None, charts: bool | None = None) -> dict[Path, str]:
    """:func:`write_reports`, the problems by the path that was not written."""
    from pytest_sglang.model.numbers import JSON_NUMBER, checked_copy, figure_faults
    from pytest_sglang.render.report.document import report_of

    report = document if isinstance(document, RunReport) else None
    data: Any = document.model_dump(mode="json", exclude_unset=True) if isinstance(document, RunReport) else document
    # The plugin's document holds no NaN or infinity (each figure is checked where it enters
    # the model); one a caller built may: those are written as null, never seen by a renderer.
    # Looked for without a copy: a document that holds none is not copied.
    if next(figure_faults(data, "$", JSON_NUMBER), None) is not None:
        data, _ = checked_copy(data, "$", JSON_NUMBER, sep=".")
        report = None
    # Read through the models once, for both renderers, before anything is written.
    typed = report_of(data if report is None else report) if md_path is not None or html_path is not None else None
    problems: dict[Path, str] = {}
    if json_path is not None:
        problem = _write(json_path, _json_text(data))
        if problem:
            problems[json_path] = problem
    if html_path is not None and typed is not None:
        from pytest_sglang.render.report.html import render as render_html

        problem = _write(html_path, render_html(typed, charts=charts))
        if problem:
            problems[html_path] = problem
    if md_path is not None and typed is not None:
        from pytest_sglang.render.report.markdown import render

        link = html_link
        if link is None and html_path is not None and html_path not in problems:
            link = relative_link(html_path, md_path)
        problem = _write(md_path, render(typed, html_link=link))
        if problem:
            problems[md_path] = problem
    return problems


def _json_text(document: Any) -> str:
    """The document as JSON that any reader parses: never a bare ``NaN`` or ``Infinity``."""
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"


def relative_link(target: Path, source: Path) -> str:
    """``target`` as a link from a file beside ``source`` (``report.html``, ``../out/x.html``)."""
    import os

    try:
        return Path(os.path.relpath(Path(target).absolute(), Path(source).absolute().parent)).as_posix()
    except ValueError:  # another drive
        return Path(target).absolute().as_uri()
