"""``fabricscope dashboard``: start the Streamlit fabric-health dashboard on this machine.

The app's source is ``dashboards/`` at the top of the source tree; the wheel carries a copy as
``fabricscope/_dashboard_app/`` (staged by the binding's build script). The app is found, in order:

1. ``--app PATH`` (the app file, or the ``dashboards`` directory holding it);
2. the ``FABRICSCOPE_DASHBOARD_APP`` environment variable (same);
3. ``dashboards/app.py`` beside the package's source tree (a checkout, an editable install, or an
   unpacked sdist: ``python/fabricscope/`` → ``dashboards/``), so edits to the source show at once;
4. the copy inside the installed package (a wheel).

What the server is allowed to do is decided here, not in the browser: it binds to 127.0.0.1
unless ``--host`` says otherwise, reads only under ``--data`` (passed to the app as
``FABRICSCOPE_DATA``; the app refuses paths outside it) and from the Prometheus servers and
exporter endpoints named with ``--prometheus`` (passed with their authentication options in a
file only the user can read, named by ``FABRICSCOPE_REMOTE_FILE``, see :func:`remote_environment`
and :func:`private_file`; the browser picks one of them and a time range, never a URL of its
own), caps uploads at ``--max-upload-mb``
(Streamlit's ``server.maxUploadSize`` and the app's own check), never opens a browser, and does
not watch or re-run its own source.

The Streamlit server runs as a child process. SIGINT, SIGTERM and SIGHUP sent to
``fabricscope dashboard`` are passed on to it, and the command exits when it does, with its status
(a child ended by a signal gives ``128 + signal number``, as a shell reports it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from fabricscope.reading.prometheus import RemoteOptions, is_url
from fabricscope.transport import Connection

__all__ = [
    "BUNDLED_APP_DIR",
    "ENV_APP",
    "ENV_DATA",
    "ENV_MAX_UPLOAD_MB",
    "ENV_REMOTE_FILE",
    "analysis_environment",
    "analysis_from_environment",
    "default_data_dir",
    "find_app",
    "private_file",
    "remote_environment",
    "remote_from_environment",
    "run_server",
    "streamlit_command",
]

ENV_APP = "FABRICSCOPE_DASHBOARD_APP"
ENV_DATA = "FABRICSCOPE_DATA"
ENV_MAX_UPLOAD_MB = "FABRICSCOPE_MAX_UPLOAD_MB"
# The file that holds the servers and exporter endpoints the app may read, with how to read them
# (JSON, credentials included: user info and query strings of the URLs, header values). A file
# only the user can read, removed when the server stops, rather than the command line (any user's
# `ps` shows it) or the environment (/proc/PID/environ, which every process of the user and
# anything it hands its environment to, a crash reporter, a child's debug dump, can read).
ENV_REMOTE_FILE = "FABRICSCOPE_REMOTE_FILE"
# The analysis options the app passes to every fabricscope.run_analysis (JSON): the same as analyze's.
ENV_ANALYSIS = "FABRICSCOPE_ANALYSIS"
# Where the wheel carries the app, inside the package (rust/fabricscope-py/build.rs, pyproject.toml).
BUNDLED_APP_DIR = "_dashboard_app"
# Signals that stop the server: passed on to Streamlit (it shuts down cleanly on SIGINT and SIGTERM;
# SIGHUP, a closed terminal, ends it by the default action).
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def find_app(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Locate ``dashboards/app.py``.

    Args:
        explicit: ``--app``: the app file or its directory (wins over everything).

    Returns:
        The resolved path of ``app.py``.

    Raises:
        FileNotFoundError: no candidate exists; the message lists where it looked.

    Example:
        >>> from fabricscope.doors.dashboard import find_app
        >>> find_app().name
        'app.py'
    """
    # A location the user named must exist: silently running another copy would be a surprise.
    for named, what in ((explicit, "--app"), (os.environ.get(ENV_APP), ENV_APP)):
        if named:
            p = Path(named).expanduser()
            p = p / "app.py" if p.is_dir() else p
            if not p.is_file():
                raise FileNotFoundError(f"{what} {named}: no dashboards/app.py there")
            return p.resolve()
    # this module is fabricscope/doors/dashboard.py: the package is .../python/fabricscope (a checkout)
    # or .../site-packages/fabricscope (a wheel, which carries the app's copy at its top)
    package = Path(__file__).resolve().parents[1]
    candidates = [package.parent.parent / "dashboards" / "app.py", package / BUNDLED_APP_DIR / "app.py"]
    for p in candidates:
        if p.is_file():
            return p
    raise FileNotFoundError(
        f"cannot find the dashboard app (looked at {', '.join(map(str, candidates))}): this installation "
        f"lacks it; pass --app or set {ENV_APP} to a dashboards/ directory"
    )


def default_data_dir(app: Path) -> Path | None:
    """The directory shown when ``--data`` is not given: the sample traces, if there are any.

    The checkout's ``sample_traces/`` beside ``dashboards/``, else ``./sample_traces`` (an installed
    wheel run from a checkout or an unpacked sdist), else None.

    Example:
        >>> from fabricscope.doors.dashboard import default_data_dir, find_app
        >>> default_data_dir(find_app()).name
        'sample_traces'
    """
    for p in (app.parent.parent / "sample_traces", Path.cwd() / "sample_traces"):
        if p.is_dir():
            return p.resolve()
    return None


def _check_url(url: str) -> None:
    """Raise ValueError unless ``url`` is an http(s) URL with a host (the message omits credentials)."""
    if not is_url(url):
        raise ValueError("expected an http:// or https:// URL")
    try:
        _ = urllib.parse.urlsplit(url).port  # reading the port raises on a bad one
    except ValueError as e:  # a port that is no number or out of range
        raise ValueError(f"not a valid URL: {e}") from None
    if not urllib.parse.urlsplit(url).hostname:
        raise ValueError("the URL names no host")


def remote_environment(urls: Sequence[str], options: RemoteOptions | None = None) -> str:
    """The description (JSON) that lets the app read ``urls`` with ``options``: the content of :data:`ENV_REMOTE_FILE`.

    Only the options travel (matchers, step, chunking, scrapes, and the connection: headers,
    token and auth *file paths*, CA bundle, timeouts); the time range is the app's to pick.

    Example:
        >>> from fabricscope.doors.dashboard import remote_environment, remote_from_environment
        >>> urls, opts = remote_from_environment(remote_environment(["http://prometheus:9090"]))
        >>> urls, opts.connection.timeout_s
        (['http://prometheus:9090'], 30.0)
    """
    opts = options or RemoteOptions()
    for url in urls:
        _check_url(url)
    doc = {
        "urls": list(urls),
        "match": list(opts.match),
        "step_s": opts.step_s,
        "api": opts.api,
        "chunk_s": opts.chunk_s,
        "repeat": opts.repeat,
        "interval_s": opts.interval_s,
        "connection": dataclasses.asdict(opts.connection),
    }
    return json.dumps(doc)


def remote_from_environment(text: str | None = None) -> tuple[list[str], RemoteOptions]:
    """The URLs and options of a :func:`remote_environment` description (default: the file in :data:`ENV_REMOTE_FILE`).

    Returns:
        ``([], RemoteOptions())`` when the variable is unset or empty.

    Raises:
        ValueError: the file cannot be read, or does not hold what :func:`remote_environment` writes.
    """
    if text is None:
        path = os.environ.get(ENV_REMOTE_FILE, "")
        try:
            text = Path(path).read_text(encoding="utf-8") if path else ""
        except OSError as e:
            raise ValueError(f"{ENV_REMOTE_FILE}: cannot read {path}: {e.strerror}") from None
    if not text.strip():
        return [], RemoteOptions()
    try:
        doc = json.loads(text)
        conn = dict(doc.get("connection") or {})
        conn["headers"] = tuple((str(n), str(v)) for n, v in conn.get("headers", ()))
        opts = RemoteOptions(
            match=tuple(doc.get("match", ())),
            step_s=doc.get("step_s"),
            api=doc.get("api"),
            chunk_s=doc.get("chunk_s"),
            repeat=int(doc.get("repeat", 1)),
            interval_s=float(doc.get("interval_s", 10.0)),
            connection=Connection(**conn),
        )
        urls = [str(u) for u in doc["urls"]]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        # Never echo the value: it may hold header values.
        raise ValueError(
            f"{ENV_REMOTE_FILE} holds no fabricscope remote-source description ({type(e).__name__})"
        ) from None
    for i, url in enumerate(urls):
        try:
            _check_url(url)
        except ValueError as e:
            raise ValueError(f"{ENV_REMOTE_FILE}: URL {i + 1}: {e}") from None
    return urls, opts


@contextlib.contextmanager
def private_file(text: str, name: str = "remote.json") -> Iterator[Path]:
    """``text`` in a file only this user can read (0600, in a 0700 directory), removed when the block ends.

    How credentials reach the Streamlit child: its environment names the file, never holds them.

    Example:
        >>> from fabricscope.doors.dashboard import private_file
        >>> with private_file("{}") as path:
        ...     oct(path.stat().st_mode & 0o777), path.read_text()
        ('0o600', '{}')
        >>> path.exists()
        False
    """
    directory = Path(tempfile.mkdtemp(prefix="fabricscope-dashboard-"))  # mode 0700
    path = directory / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        yield path
    finally:
        path.unlink(missing_ok=True)
        directory.rmdir()


def streamlit_command(app: Path, *, host: str = "127.0.0.1", port: int = 8501, max_upload_mb: int = 200) -> list[str]:
    """The ``streamlit run`` command line for the app, with the server locked down.

    Example:
        >>> from pathlib import Path
        >>> from fabricscope.doors.dashboard import streamlit_command
        >>> cmd = streamlit_command(Path("dashboards/app.py"), port=8600)
        >>> cmd[cmd.index("--server.address") + 1], cmd[cmd.index("--server.port") + 1]
        ('127.0.0.1', '8600')
    """
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.maxUploadSize",
        str(max_upload_mb),
        # The app's source is not a live-reload playground in production.
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--server.enableXsrfProtection",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def run_server(cmd: list[str], env: dict[str, str]) -> int:
    """Run the server as a child process until it exits; stop signals sent to us are passed on to it.

    The child shares our process group, so a Ctrl-C typed in a terminal reaches it directly too;
    forwarding covers ``kill PID``, systemd's stop and a closed terminal, which reach only us.
    Our handlers are restored before returning.

    Args:
        cmd: The command line (:func:`streamlit_command`).
        env: Its environment.

    Returns:
        The child's exit status; ``128 + N`` when signal N ended it.
    """
    proc = subprocess.Popen(cmd, env=env)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
    try:
        status = proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 - status if status < 0 else status


def analysis_environment(options: Mapping[str, Any]) -> str:
    """The :func:`fabricscope.run_analysis` options of ``fabricscope dashboard`` as :data:`ENV_ANALYSIS` text.

    Example:
        >>> from fabricscope.doors.dashboard import analysis_environment, analysis_from_environment
        >>> analysis_from_environment(analysis_environment({"config": "t.toml", "hosts": ["gpu01"]}))
        {'config': 't.toml', 'hosts': ['gpu01']}
    """
    return json.dumps({k: v for k, v in options.items() if v not in (None, {}, [])}, sort_keys=True)


def analysis_from_environment(text: str | None = None) -> dict[str, Any]:
    """The options :func:`analysis_environment` wrote (from :data:`ENV_ANALYSIS` when ``text`` is None).

    Raises:
        ValueError: the value is not what :func:`analysis_environment` writes.
    """
    text = os.environ.get(ENV_ANALYSIS, "") if text is None else text
    if not text:
        return {}
    options = json.loads(text)
    if not isinstance(options, dict):
        raise ValueError(f"{ENV_ANALYSIS}: expected a JSON object")
    return options
