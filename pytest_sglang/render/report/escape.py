"""The one way each report format writes text it did not make itself.

Everything a server, a log, a file or a host name supplies (model names and paths, launch
commands, log lines, error bodies, host specs, test ids) reaches a report as *text*: it must
show as written and never become markup. Each output format has one function here, and every
renderer of that format writes outside text only through it:

- :func:`html_text`: the HTML page (element text and quoted attribute values alike);
- :func:`md_text` and :func:`md_code`: the Markdown summary, in running text or table cells
  (where GitHub would also make links of addresses and notifications of mentions: both are
  defused), and inside a code span (where backslashes and entities are shown as they are, and
  nothing is linked, so only the backtick and the table's ``|`` need care);
- :func:`mermaid_text`: a label inside a Mermaid chart of the Markdown summary.

Each scrubs first (:func:`pytest_sglang.base.secrets.scrub`): the escaped form of a secret is
another spelling of it, and the scrubber knows the raw one best. None of them cuts; callers
shorten with :func:`pytest_sglang.render.report.text.shorten` before escaping, so a cut never splits
an entity or an escape.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_sglang.base.secrets import scrub

__all__ = ["html_text", "md_text", "md_code", "mermaid_text"]

_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})
# Characters that start Markdown markup anywhere in a line: HTML (``<``, ``&``; a lone ``>``
# starts nothing inside a line, so ``assert 26 >= 48`` stays readable), emphasis and
# strike-through (``*``, ``~``), code (`````), links and images (``[``, ``]``), the escape
# character itself, and the table's cell separator. ``_`` is markup only at a word's edge
# (CommonMark never reads an underscore inside a word as emphasis), so ``max_running_requests``
# stays as it is.
_MD = str.maketrans({"&": "&amp;", "<": "&lt;", "\\": "\\\\", "`": "\\`", "*": "\\*", "~": "\\~", "[": "\\[", "]": "\\]", "|": "\\|"})
_MD_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# GitHub makes links and notifications of plain text too: addresses (``https://...``,
# ``www.``, ``user@host``), mentions (``@user``, ``@org/team``) and issue references (``#12``).
# A backslash before the ``:`` of ``http://``, ``https://`` and ``ftp://`` (the schemes GitHub
# links, in any case) and the ``.`` of ``www.`` ends an address (cmark-gfm's autolinker reads
# neither across an escape); ``sim://`` and the like stay as they are. A zero-width space
# (``&#8203;``, shown as nothing) after an ``@`` and between ``#`` and a digit breaks a mention,
# an e-mail address and a reference: GitHub's patterns want a letter or digit right there. A
# backslash before ``@`` would not do (``\@user`` still notifies, github/cmark-gfm#181), and an
# HTML comment (``@<!-- -->user``) holds only while GitHub keeps the text nodes apart.
_ADDRESS = re.compile(r"(?<=https)(?=://)|(?<=http)(?=://)|(?<=ftp)(?=://)|(?<=www)(?=\.)", re.IGNORECASE)
_REFERENCE = re.compile(r"(?<=#)(?=[0-9])|(?<=@)")
_ZERO_WIDTH_SPACE = "&#8203;"
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
# What a Mermaid label may hold: letters, digits and a few marks that mean nothing to Mermaid's
# parser or to the HTML it renders labels into; anything else becomes a space.
_MERMAID_UNSAFE = re.compile(r"[^\w .,:/=+%()-]", re.ASCII)


def _text(value: Any) -> str:
    return scrub("" if value is None else str(value))


def html_text(value: Any) -> str:
    """``value`` as HTML text: safe as element content and inside a quoted attribute value."""
    return _text(value).translate(_HTML)


def md_text(value: Any) -> str:
    """``value`` as Markdown text that shows as written, on one line, also inside a table cell,
    and that GitHub makes no link, image, mention, reference or HTML of."""
    text = " ".join(_LINE_BREAKS.split(_text(value)))
    text = text.translate(_MD)
    text = _MD_EDGE_UNDERSCORE.sub(r"\\_", text)
    text = _ADDRESS.sub("\\\\", text)
    return _REFERENCE.sub(_ZERO_WIDTH_SPACE, text)


def md_code(value: Any) -> str:
    """``value`` for inside a Markdown code span (the caller adds the backticks): no backtick
    (it would end the span; shown as ``'``), the table's ``|`` escaped, on one line."""
    text = " ".join(_LINE_BREAKS.split(_text(value)))
    return text.replace("`", "'").replace("|", "\\|")


def mermaid_text(value: Any) -> str:
    """``value`` as a Mermaid label (inside double quotes): only letters, digits and harmless
    marks; anything else (quotes, brackets, ``<``, ``#``, ``;``) becomes a space."""
    text = _MERMAID_UNSAFE.sub(" ", _text(value))
    return " ".join(text.split())
