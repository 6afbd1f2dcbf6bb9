"""The Markdown summary as GitHub reads it (issue "hostile input, round four").

A pull-request comment is rendered by GitHub's own cmark-gfm (``cmarkgfm``, its Python
binding, with GitHub's extensions: tables, autolinks, strike-through, the tag filter), and
GitHub then links ``@user`` and ``@org/team`` mentions and ``#12`` references in the text
outside code spans and links. Every text field of a report document (host names, versions,
model names, test ids, failure text, finding text, reasons, benchmark levels, ``tool.version``)
is rewritten with payloads of links, images, addresses, mentions, references and raw HTML, and
the summary rendered:

- its HTML has exactly the elements, and the links, of the same summary with plain words in
  those fields (equal where the payloads are): no link, image or HTML element comes from
  outside text;
- no text outside a code span holds a mention or a reference GitHub would act on;
- the payloads still show as written (an invisible zero-width space aside).

``pytest-sglang report`` renders a planted JSON report with the run's secrets registered
(``SGLANG_API_KEY``, a key a ``SGLANG_HOST`` spec carries): no spelling of them reaches the
Markdown or the HTML it writes.
"""

from __future__ import annotations

import copy
import html
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import pytest
from support import ROOT

from pytest_sglang.cli.main import main
from pytest_sglang.render.report import markdown
from pytest_sglang.render.report.schema import validate

cmarkgfm = pytest.importorskip("cmarkgfm", reason="the test extra: pip install -e '.[test]'")
from cmarkgfm.cmark import Options  # noqa: E402


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location("report_html_benchmark", ROOT / "benchmarks" / "report_html.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_report


synthetic_report = _synthetic()

PAYLOADS = [
    "https://evil.example/track?u=1",
    "see HTTPS://EVIL.EXAMPLE/x and ftp://evil.example/f",
    "www.evil.example/path",
    "ping ops@evil.example today",
    "@evil-org/admins and @someone, cc @a.",
    "fixes #12 and evil/repo#34",
    '<img src="https://evil.example/i.png"> <details open><summary>x</summary></details>',
    "![pixel](https://evil.example/p.png) and [click](https://evil.example/c)",
    "<https://evil.example/auto> and <ops@evil.example>",
    "<!-- hidden --> <script>alert(1)</script> <a href='https://evil.example'>x</a>",
    "&lt;b&gt; &#60;i&#62; &amp;lt;",
    "mailto:ops@evil.example xmpp:ops@evil.example/x",
    "`code` **bold** _em_ ~~strike~~ | cell | [x]",
    "line one\n# heading\n- item\n> quote\n```\nfence",
    "javascript:alert(1) data:text/html,<b>x</b>",
]
# Document fields the schema allows only some words in (their values decide the layout).
_WORDS = re.compile(r"^(\$(?:\.[A-Za-z_]\w*|\[\d+\])+): ")


def base_document() -> dict[str, Any]:
    """A run of four hosts, one on hold, with every section of the summary: hosts not read,
    failing checks, baseline diffs, fleet drift, findings, benchmarks with their chart,
    inconclusive and failing tests with the values they read."""
    doc = synthetic_report(4, 3)
    held = doc["hosts"][3]
    doc["hosts"][2].update(verdict="inconclusive", reasons=["host could not be read"], error="connection refused by the server")
    held["tests"][0]["values_read"] = [
        {"host": held["host"], "name": "effective.max_running_requests", "value": "26", "source": "/server_info", "requested": "48", "requested_source": "launch command --max-running-requests", "notes": [], "causes": ["capped by the mamba state cache"]}
    ]
    held["tests"][1].update(outcome="skipped", message="inconclusive: the server was busy", inconclusive="the server was busy")
    doc["run_checks"] = [
        {
            "check": "sglang-fleet",
            "host": None,
            "passed": False,
            "failures": [f"{held['host']}: max_running_requests = 26 (fleet: 48)"],
            "notes": [],
            "nodeid": "::sglang-fleet",
            "differences": {held["host"]: [{"path": "effective.max_running_requests", "field": "effective.max_running_requests", "baseline": 48, "live": 26, "value": 26, "fleet_value": 48, "source": "/server_info", "fleet_source": "/server_info", "finding": "capacity.mamba-cap", "status": "differs", "note": None, "group": "max_running_requests"}]},
        }
    ]
    doc["tests_without_host"] = [{"nodeid": "test_gate.py::test_offline", "host": None, "outcome": "failed", "duration": 0.01, "message": "assert False", "check": False, "inconclusive": None, "values_read": []}]
    assert validate(doc) == []
    return doc


def _leaves(node: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    """(path, container, key) of every string in the document, keys of mappings aside."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        where = f"{path}.{key}" if isinstance(node, dict) else f"{path}[{key}]"
        if isinstance(value, str):
            yield where, node, key
        else:
            yield from _leaves(value, where)


def rewritten(doc: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """``doc`` with every string field the schema leaves free holding one of ``words`` in turn."""
    out = copy.deepcopy(doc)
    old: dict[str, tuple[Any, Any, str]] = {}
    for n, (path, container, key) in enumerate(_leaves(out)):
        old[path] = (container, key, container[key])
        container[key] = words[n % len(words)]
    for _ in range(100):  # a field the schema refuses the words in keeps its value (a few problems named at a time)
        refused = {m[1] for problem in validate(out) if (m := _WORDS.match(problem))}
        if not refused:
            return out
        for path, (container, key, value) in old.items():
            if any(path == r or path.startswith((r + ".", r + "[")) for r in refused):  # the field, or an object holding it
                container[key] = value
    raise AssertionError(validate(out))


def rendered(doc: dict[str, Any]) -> str:
    md = markdown.render(doc, html_link="report.html")
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)


class Rendered(HTMLParser):
    """The elements of GitHub's HTML, the links, and the text outside code spans and links
    (where GitHub looks for mentions and references)."""

    IGNORED = {"code", "pre", "a", "style", "script"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.links: list[str | None] = []
        self.text: list[str] = []
        self.plain: list[str] = []
        self._open: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("a", "img"):
            self.links.append(dict(attrs).get("href") or dict(attrs).get("src"))
        if tag not in ("br", "hr", "img", "input"):
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]

    def handle_comment(self, data: str) -> None:
        self.tags.append("<!--")

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if not self.IGNORED & set(self._open):
            self.plain.append(data)


# GitHub's patterns (html-pipeline's MentionFilter and TeamMentionFilter; \w is ASCII there),
# and an issue reference.
MENTION = re.compile(r"(?:^|\W)@([a-z0-9][a-z0-9-]*)(?!/)(?=\.+[ \t\W]|\.+$|[^0-9a-zA-Z_.]|$)", re.I | re.A | re.M)
TEAM_MENTION = re.compile(r"(?<!\w)@([a-z0-9][a-z0-9-]*)/([a-z0-9][a-z0-9\-_]*)\b", re.I | re.A)
REFERENCE = re.compile(r"(?<![\w&])#[0-9]|\bGH-[0-9]", re.A)


def test_outside_text_makes_no_link_image_mention_or_html_on_github() -> None:
    doc = base_document()
    hostile = Rendered(rendered(rewritten(doc, PAYLOADS)))
    plain = Rendered(rendered(rewritten(doc, [f"word{n}" for n in range(len(PAYLOADS))])))  # equal where the payloads are
    assert hostile.tags == plain.tags
    assert hostile.links == plain.links == ["report.html"]
    assert "img" not in hostile.tags and "<!--" not in hostile.tags
    for text in hostile.plain:
        assert not MENTION.search(text) and not TEAM_MENTION.search(text) and not REFERENCE.search(text), text
    shown = "".join(hostile.text).replace("\u200b", "")
    for payload in ("https://evil.example/track?u=1", "@evil-org/admins and @someone, cc @a.", "fixes #12 and evil/repo#34", "ping ops@evil.example today"):
        assert payload in shown  # as written, for the reader


def test_the_words_pass_the_checks_when_they_are_markup_github_acts_on() -> None:
    """The checks above can fail: the same payloads, unescaped, make links, images, HTML and
    mentions."""
    page = Rendered(cmarkgfm.github_flavored_markdown_to_html("\n\n".join(PAYLOADS), options=Options.CMARK_OPT_UNSAFE))
    assert {"a", "img", "details", "<!--"} <= set(page.tags)  # <script> GitHub's tag filter escapes
    assert any(MENTION.search(t) for t in page.plain) and any(TEAM_MENTION.search(t) for t in page.plain) and any(REFERENCE.search(t) for t in page.plain)


def test_tool_version_is_written_as_text() -> None:
    doc = base_document()
    version = "<img src=//e.x/v> @evil/all https://e.x"
    doc["tool"]["version"] = version
    footer = markdown.render(doc).strip().splitlines()[-1]
    assert "<img" not in footer and "@evil" not in footer and "https://" not in footer
    page = Rendered(cmarkgfm.github_flavored_markdown_to_html(footer, options=Options.CMARK_OPT_UNSAFE))
    assert page.tags == ["p", "sub"] and "".join(page.text).replace("\u200b", "").endswith(f"pytest-sglang {version}\n")


# ---- pytest-sglang report: the run's secrets ------------------------------------------------------

KEY = "sk-report-Q7zX93kWv2"
SPEC_KEY = "sim-key-Zr81mT3qPd"


def _spelt(key: str) -> list[str]:
    return [
        key,
        key.upper(),
        "".join(f"&#{ord(c)};" for c in key),
        "".join(f"%{ord(c):02X}" for c in key),
        "".join(f"\\u{ord(c):04x}" for c in key),
        key[:7] + "\u200b" + key[7:],
    ]


def test_the_report_command_scrubs_the_secrets_the_run_knew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SGLANG_API_KEY", KEY)
    monkeypatch.setenv("SGLANG_HOST", f"sim://qwen35-122b-a10b-4xrtx6000-baseline?api_key={SPEC_KEY}")
    doc = base_document()
    doc["tool"]["version"] = KEY
    planted = rewritten(doc, [f"model {s} and {t}" for s, t in zip(_spelt(KEY), _spelt(SPEC_KEY))])
    planted["tool"]["version"] = KEY
    source = tmp_path / "planted.json"
    source.write_text(json.dumps(planted), encoding="utf-8")
    assert main(["report", str(source), "--md", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html")]) == 0
    for name in ("r.md", "r.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        shown = html.unescape(html.unescape(text)).replace("\u200b", "").lower()
        shown = re.sub(r"%([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), shown)
        shown = re.sub(r"\\u([0-9a-f]{4})", lambda m: chr(int(m[1], 16)), shown)
        assert "model" in shown and "<redacted>" in shown
        for key in (KEY, SPEC_KEY):
            assert key.lower() not in shown, name
    assert KEY not in capsys.readouterr().out
