"""``pytest-sglang report RUN.json --html FILE --md FILE``: the HTML page and the Markdown
summary of a run, rendered later from its JSON report (a later CI step, another machine). The
report is judged again by the gate (:func:`pytest_sglang.judge.gate.rejudge`): a verdict its
contents do not give is said in one line on standard error.

The page is the one ``--sglang-report-html`` writes: both read only the JSON report. The file
is read through :func:`pytest_sglang.base.files.read_text` (a regular file, at most
``REPORT_CAP_BYTES``) and checked against the report schema before anything is written; a file
that is missing, not JSON or not a report is one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_sglang.base import files as _files
from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import clip, scrub
from pytest_sglang.target.spec import environment_specs, register_secrets

if TYPE_CHECKING:
    from pytest_sglang.judge.gate.models import RunReport

# A report of 32 hosts with their tests and benchmarks is a few MiB.
REPORT_CAP_BYTES = 256 * _files.MiB


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="render the HTML page and the Markdown summary of a run from its JSON report",
        description="Render a run's JSON report (--sglang-report-json) as the self-contained HTML page (--html) and the "
        "Markdown summary (--md) that --sglang-report-html and --sglang-report-md write, e.g. in a later CI step.",
    )
    p.add_argument("report", metavar="RUN.json", help="a JSON report written by --sglang-report-json ('-': standard input)")
    p.add_argument("--html", metavar="FILE", help="write the HTML page to FILE")
    p.add_argument("--md", metavar="FILE", help="write the Markdown summary to FILE")
    p.add_argument("--link", metavar="URL", help="where the Markdown links to the HTML page (default: its path beside the Markdown file, when both are written)")
    p.add_argument("--no-charts", action="store_true", help="tables instead of charts, even with the report extra installed")
    p.add_argument("--json", action="store_true", help="print what was written, and the verdict, as JSON")
    p.set_defaults(func=run)


def load_report(path: str) -> dict[str, Any]:
    """A JSON report, read and checked: one :class:`SpecError` line naming the file otherwise."""
    from pytest_sglang.render.report.reading import ReportTooLarge, read_report

    what = "JSON report on standard input" if path == "-" else f"JSON report {path}"
    try:
        text = _files.read_stream(sys.stdin, cap_chars=REPORT_CAP_BYTES, what=what) if path == "-" else _files.read_text(path, cap_bytes=REPORT_CAP_BYTES, what=what)
        _files.check_nesting(text, what=what)
    except _files.MissingFileError:
        raise SpecError(f"{what} does not exist: give the file --sglang-report-json wrote") from None
    # Decoded and checked in one pass (render/report/reading.py): memory stays a few times the
    # file's size, and nothing of a file that is not a report is kept.
    try:
        document, problems = read_report(text)
    except ReportTooLarge as exc:
        raise SpecError(f"{what} is not a pytest-sglang report: {exc}") from None
    except ValueError as exc:
        raise SpecError(f"{what} is not JSON ({clip(exc, 120)}): give the file --sglang-report-json wrote") from None
    if problems or document is None:
        more = f" (and {problems.total - 1:,} more)" if problems.total > 1 else ""
        raise SpecError(f"{what} is not a pytest-sglang report: {clip(problems[0], 160)}{more}")
    return dict(document)


def judged_again(report: RunReport) -> str | None:
    """One line when the report's verdict is not the one the gate gives its contents (a report
    edited by hand, or written by another version), else None. The report is rendered as it
    is: its verdict is what the run's gate decided."""
    from pytest_sglang.judge.gate import disagreement, rejudge

    return disagreement(report, rejudge(report))


def run(args: argparse.Namespace) -> int:
    from pytest_sglang.render.report.document import ReportError, report_of
    from pytest_sglang.render.report.write import write_reports

    if not args.html and not args.md:
        raise SpecError("give --html FILE, --md FILE or both: what to write")
    html_path = Path(args.html) if args.html else None
    md_path = Path(args.md) if args.md else None
    outputs = [(f"--{option} {given}", Path(given)) for option, given in (("html", args.html), ("md", args.md)) if given]
    for label, path in outputs:
        if str(path) == "-":
            raise SpecError(f"{label}: give a file path (the report is written to a file, not to standard output)")
        if path.is_dir():
            option = label.split()[0]
            raise SpecError(f"{option} {path} is a directory: give a file path, e.g. {option} {path / ('sglang-report.' + option[2:])}")
    # Before anything is read or written: two outputs at one path (or at the report read)
    # would leave one of them lost, and a path the writer refuses is said now.
    _files.check_distinct(([] if args.report == "-" else [(f"the JSON report {args.report}", args.report)]) + outputs)
    for label, path in outputs:
        _files.check_writable(path, what="report")
    # The secrets the run itself knew (SGLANG_API_KEY and the rest), so a report that holds one
    # in any spelling (a planted or hostile file) shows none of it.
    register_secrets(environment_specs())
    document = load_report(args.report)
    shown_as = "standard input" if args.report == "-" else args.report
    try:  # read through the report's models once, for the gate and both renderers
        report = report_of(document)
    except ReportError as exc:  # the schema file let it pass: the models are the stricter reading
        raise SpecError(f"JSON report {shown_as} is not a pytest-sglang report: {exc.problem}") from None
    differs = judged_again(report)
    if differs:
        print(scrub(f"pytest-sglang: {differs}"), file=sys.stderr)
    try:
        problems = write_reports(report, None, md_path, html_path, html_link=args.link, charts=False if args.no_charts else None)
    except Exception as exc:  # the last guard: the schema check leaves nothing a renderer fails on
        raise SpecError(f"JSON report {shown_as} could not be rendered ({clip(exc, 160)}); every field the schema types was valid") from None
    if problems:
        raise SpecError(problems[0])
    written = [str(p) for p in (html_path, md_path) if p is not None]
    if args.json:
        print(scrub(json.dumps({"verdict": document["verdict"], "written": written})))
    else:
        for shown in written:
            print(scrub(f"pytest-sglang: wrote {shown} (verdict {document['verdict']})"))
    sys.stdout.flush()
    return 0
