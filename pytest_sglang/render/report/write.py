"""Writing the run's reports: the JSON document, its Markdown summary and its HTML page, each
through the scrubber and the one safe writer, each problem one line. Used by the pytest plugin at
the end of a run and by ``pytest-sglang report`` from a saved JSON document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_sglang.base.secrets import scrub


def _write(path: Path, text: str) -> str | None:
    from pytest_sglang.base.files import FileError, write_text

    try:
        write_text(path, scrub(text), what="report")
    except FileError as exc:
        return str(exc)
    except OSError as exc:
        return f"could not write the report {path}: {exc.strerror or exc}"
    return None


def write_reports(document: dict[str, Any], json_path: Path | None, md_path: Path | None, html_path: Path | None = None, *, html_link: str | None = None, charts: bool | None = None) -> list[str]:
    """Write the reports through the scrubber; returns the problems (one line each). When both
    the Markdown and the HTML report are written, the Markdown links to the HTML one (by
    ``html_link`` when given, else by its path relative to the Markdown file). ``charts``: draw
    the HTML page's charts (default: when the ``report`` extra is installed)."""
    problems = []
    if json_path is not None:
        problem = _write(json_path, json.dumps(document, indent=2, sort_keys=False) + "\n")
        if problem:
            problems.append(problem)
    if html_path is not None:
        from pytest_sglang.render.report.html import render as render_html

        problem = _write(html_path, render_html(document, charts=charts))
        if problem:
            problems.append(problem)
    if md_path is not None:
        from pytest_sglang.render.report.markdown import render

        link = html_link
        if link is None and html_path is not None and not any(str(html_path) in problem for problem in problems):
            link = relative_link(html_path, md_path)
        problem = _write(md_path, render(document, html_link=link))
        if problem:
            problems.append(problem)
    return problems


def relative_link(target: Path, source: Path) -> str:
    """``target`` as a link from a file beside ``source`` (``report.html``, ``../out/x.html``)."""
    import os

    try:
        return Path(os.path.relpath(Path(target).absolute(), Path(source).absolute().parent)).as_posix()
    except ValueError:  # another drive
        return Path(target).absolute().as_uri()
