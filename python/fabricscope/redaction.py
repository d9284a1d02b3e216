"""One redaction for everything fabricscope prints, stores or renders.

A URL given as an input may carry credentials (``http://user:password@host/?token=T``), and a
server may echo a header value back in an error. Every place that shows an input's name or a
server's text (reports, findings JSON, history, cron state, the Prometheus textfile, the
dashboard, log lines and exception messages) passes it through :func:`redact_text`, which

* drops the user info, the query string and the fragment of every ``http(s)://`` URL in it,
* replaces each known secret value (tokens, passwords, header values) with ``<redacted>``,
* escapes control characters (a server's text must not move a terminal's cursor or forge a
  line in a Nagios status or a log).

Standard library only: every module may import it without import cycles.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable

__all__ = ["REDACTED", "markdown_text", "printable", "printable_lines", "redact_text", "redact_url"]

#: What a secret value is replaced with.
REDACTED = "<redacted>"

# An http(s) URL inside free text: up to whitespace, a quote or an angle bracket.
_URL = re.compile(r"""(?i)\bhttps?://[^\s'"<>`]+""")
# C0 and C1 control characters (and DEL); tab is shown escaped too, so one record stays one line.
# Also what reorders or breaks a line without being a control character: the bidirectional
# embeddings, overrides and isolates and the implicit marks (text that reads differently from what
# it is: unicode.org/reports/tr9, CVE-2021-42574), and the line and paragraph separators, which
# str.splitlines() and some terminals and viewers take for a newline.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def redact_url(url: str) -> str:
    """The URL as it may be shown: no user info, no query string, no fragment.

    Example:
        >>> from fabricscope.redaction import redact_url
        >>> redact_url("https://admin:s3cret@prom.example:9090/api?token=x#f")
        'https://prom.example:9090/api'
        >>> redact_url("http://[::1]:9090")
        'http://[::1]:9090'
    """
    try:
        p = urllib.parse.urlsplit(url)
        port = p.port
    except ValueError:
        # Not parseable (a bad port, a stray bracket): keep only the scheme and what precedes
        # any user info, query or fragment.
        scheme, _, rest = url.partition("://")
        host = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
        return f"{scheme}://{host}"
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, "", ""))


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    r"""``text`` with control characters escaped (``\n`` as ``\x0a``), so it stays one line.

    The one rule for text that came from data (a label value, a host name, a server's answer) on
    its way to a person: the terminal, the Nagios status line, the textfile's labels, the report,
    the dashboard and Alertmanager's labels all show it through this function, so no value can
    move a cursor, reorder what is shown or forge a line of output.

    Example:
        >>> from fabricscope.redaction import printable
        >>> printable("bad\x1b[2Jvalue\nOK - all good")
        'bad\\x1b[2Jvalue\\x0aOK - all good'
        >>> printable("gpu01\u202e10upg")
        'gpu01\\u202e10upg'
    """
    return _CONTROL.sub(_escape, text)


# What Markdown reads as syntax anywhere in a line: CommonMark's escapes, code, emphasis and
# link/image brackets, GitHub's tables and strikethrough, Streamlit's ``$`` (LaTeX), an ``_`` that
# can open or close emphasis (not one inside a word: ``pfc_storm`` stays as it is), and what starts
# an autolink (``http://``, ``www.``, ``user@host``). CommonMark lets any ASCII punctuation be
# backslash-escaped, so each becomes a literal character.
_MARKDOWN = re.compile(r"[\\`*\[\]|~$@]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|:(?=//)|(?<=\b[wW]{3})\.")
# What Markdown reads as syntax at the start of a line: a heading (``#`` .. ``######`` and a space),
# a list item (``-``, ``+``, ``1.``, ``1)`` and a space), a thematic break or setext underline
# (``---``, ``===``), an indented code block (four spaces). ``8.711`` or ``-3`` is no such thing.
_LINE_START = re.compile(r"^(?:#{1,6}(?=[ \t]|$)|[-+](?=[ \t]|$)|[-=]+[ \t]*$|\d{1,9}[.)](?=[ \t]|$)| {4})")


def markdown_text(text: str) -> str:
    r"""``text`` as Markdown that renders exactly as ``text``: never a link, an image, HTML or a heading.

    :func:`printable` first (control characters escaped, one line), then HTML's ``&``, ``<`` and
    ``>`` as character references, then every character Markdown would read as syntax behind a
    backslash (a name such as ``pfc_storm`` or a time such as ``16:00:40`` stays as it is). The
    one rule for text from data (a label value, a host name, an error quoting an input) on its
    way into Markdown: the dashboard's ``st.markdown``, ``st.write``, captions and messages, and
    the Markdown report. A viewer then shows a label such as ``![b](http://host/beacon.png)`` as
    those characters and fetches nothing.

    Example:
        >>> from fabricscope.redaction import markdown_text
        >>> markdown_text("![b](http://host/beacon.png)")
        '!\\[b\\](http\\://host/beacon.png)'
        >>> markdown_text('<img src=x onerror="alert(1)">')
        '&lt;img src=x onerror="alert(1)"&gt;'
        >>> markdown_text("# gpu01/mlx5_0:1 | *_x_* www.example.com")
        '\\# gpu01/mlx5_0:1 \\| \\*\\_x\\_\\* www\\.example.com'
    """
    text = printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(), text)
    return _LINE_START.sub(_escape_line_start, text)


def _escape_line_start(m: re.Match[str]) -> str:
    found = m.group()
    if found.isspace():
        return "&#32;" + found[1:]  # four spaces would start a code block: the first one as a reference
    # The marker's last character escaped: "\# h", "\- a", "1\. foo", "--\-" read as text.
    return found[:-1] + "\\" + found[-1]


def printable_lines(lines: Iterable[str]) -> str:
    r"""``lines`` joined by newlines, each escaped by :func:`printable`: only these newlines are real.

    For output built as a list of lines: a newline a value carries inside one of them stays
    visible (``\x0a``) instead of starting a line of its own.

    Example:
        >>> from fabricscope.redaction import printable_lines
        >>> print(printable_lines(["CRITICAL - link_errors on gpu\nOK - all fine", "done"]))
        CRITICAL - link_errors on gpu\x0aOK - all fine
        done
    """
    return "\n".join(printable(line) for line in lines)


def redact_text(text: str, secrets: Iterable[str] = (), *, escape: bool = True) -> str:
    """``text`` safe to show: URLs redacted, ``secrets`` replaced, control characters escaped.

    Example:
        >>> from fabricscope.redaction import redact_text
        >>> redact_text("GET http://ops:pw@prom:9090/x?token=tok1 failed: bad token tok1", ["tok1"])
        'GET http://prom:9090/x failed: bad token <redacted>'
    """
    out = _URL.sub(lambda m: redact_url(m.group()), str(text))
    # Longest first: a secret that contains another is replaced whole.
    for s in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(s, REDACTED)
    return printable(out) if escape else out
