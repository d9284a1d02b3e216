"""Sidebar widgets every page shares: the source picker, the time-range picker and the upload box."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import time
from pathlib import Path

import fabricscope
import streamlit as st
from allowed_sources import (
    MAX_RANGE_S,
    MAX_SCRAPE_INTERVAL_S,
    MAX_SCRAPES,
    OutsideDataDirError,
    data_root,
    files_configured,
    list_sources,
    max_upload_bytes,
    parse_matchers,
    parse_time,
    remote_sources,
    resolve_source,
    save_uploads,
)
from data import Dataset, fingerprint, load_remote, load_source, load_upload, source_kind
from fabricscope.redaction import markdown_text

_log = logging.getLogger("fabricscope.doors.dashboard")

#: The time-range presets: label -> seconds back from the range's end (None: custom since/until).
RANGES: dict[str, int | None] = {
    "Last 15 min": 900,
    "Last 1 h": 3600,
    "Last 6 h": 6 * 3600,
    "Last 24 h": 86_400,
    "Custom": None,
}
#: ``?range=`` spellings of the presets (shareable links).
RANGE_PARAMS = {"15m": "Last 15 min", "1h": "Last 1 h", "6h": "Last 6 h", "24h": "Last 24 h", "custom": "Custom"}

UPLOAD = "(uploaded files)"

# How finding columns show in st.dataframe: the message wide; times without the "+00:00" (all UTC);
# a missing port or priority blank rather than "None".
FINDING_COLUMNS = {
    "message": st.column_config.TextColumn("message", width="large"),
    "start": st.column_config.DatetimeColumn("start (UTC)", format="YYYY-MM-DD HH:mm:ss"),
    "end": st.column_config.DatetimeColumn("end (UTC)", format="YYYY-MM-DD HH:mm:ss"),
    "port": st.column_config.NumberColumn("port", format="%d"),
    "priority": st.column_config.NumberColumn("priority", format="%d"),
}


def source_title(choice: str, root: Path) -> str:
    """How a source reads to a person: the data directory itself is "all of <name>/", not ".".

    Example:
        >>> source_title(".", Path("/data/sample_traces")), source_title("scenarios/x", Path("/data"))
        ('all of sample_traces/', 'scenarios/x')
    """
    return f"all of {root.name}/" if choice in (".", "") else choice


def _select_source(root: Path, servers: dict[str, str]) -> str:
    """The sidebar source picker; the choice persists across pages and can come from ``?source=``."""
    options = list_sources(root)
    wanted = st.session_state.get("source")
    if wanted is None:
        wanted = st.query_params.get("source", options[0] if options else ".")
    if st.session_state.get("upload") is not None:
        options.append(UPLOAD)  # kept until another upload replaces it, across pages
    elif wanted == UPLOAD:
        wanted = "."
    if wanted not in options:
        options.append(wanted)  # validated by resolve_source below, like anything typed
    choice = st.sidebar.selectbox(
        "Data source",
        options,
        index=options.index(wanted),
        format_func=lambda o: o if o in servers else source_title(o, root),
        help=" and ".join(
            ([f"Directories under the data directory {root}"] if files_configured() else [])
            + (["the configured Prometheus servers and exporter endpoints"] if servers else [])
        ),
    )
    st.session_state["source"] = choice
    return choice


def _upload_widget() -> None:
    limit = max_upload_bytes()
    files = st.sidebar.file_uploader(
        f"Or upload counter files (≤ {limit / 2**20:.0f} MiB each; parsed leniently)",
        accept_multiple_files=True,
        key="uploader",
    )
    if not files:
        return
    # Every rerun sees the same files again: write and analyse them only when they changed.
    key = tuple((getattr(f, "file_id", ""), f.name, f.size) for f in files)
    if st.session_state.get("upload_key") == key:
        return
    directory, digest, refused = save_uploads(files, limit)
    st.session_state["upload_key"] = key
    st.session_state["upload_refused"] = refused
    previous = st.session_state.get("upload")
    if previous:
        shutil.rmtree(previous[0], ignore_errors=True)
    st.session_state["upload"] = (directory, digest, ", ".join(Path(f.name).name for f in files))
    st.session_state["source"] = UPLOAD


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _remembered(key: str, param: str, default: str) -> str:
    """A sidebar value kept across pages: this session's, else the link's ``?param=``, else ``default``."""
    value = st.session_state.get(key)
    if value is None:
        value = st.query_params.get(param, default)
    return str(value)


def _time_range() -> tuple[int, int, str] | None:
    """The time-range picker: ``(since_ns, until_ns, description)``, or None with an error shown.

    A preset counts back from an anchor fixed when the session first asks (to the whole minute, so
    sessions opened within a minute share the cached pull) and moved to now by the refresh button.
    """
    if "remote_anchor_ns" not in st.session_state:
        st.session_state["remote_anchor_ns"] = time.time_ns() // 60_000_000_000 * 60_000_000_000
    has_custom = "since" in st.query_params or "until" in st.query_params
    labels = list(RANGES)
    wanted = _remembered("remote_range", "range", "custom" if has_custom else "1h")
    wanted = RANGE_PARAMS.get(wanted, wanted if wanted in RANGES else "Last 1 h")
    choice = st.sidebar.selectbox("Time range (UTC)", labels, index=labels.index(wanted))
    st.session_state["remote_range"] = choice
    anchor = int(st.session_state["remote_anchor_ns"])
    back = RANGES[choice]
    if back is not None:
        since, until = anchor - back * 1_000_000_000, anchor
    else:
        since_text = st.sidebar.text_input(
            "Since", _remembered("remote_since", "since", _iso(anchor - 3_600_000_000_000)), help="ISO 8601 or epoch s"
        )
        until_text = st.sidebar.text_input(
            "Until", _remembered("remote_until", "until", _iso(anchor)), help="ISO 8601 or epoch s; exclusive"
        )
        st.session_state["remote_since"], st.session_state["remote_until"] = since_text, until_text
        try:
            since, until = parse_time(since_text), parse_time(until_text)
        except ValueError as e:
            st.error(f"Time range: {e}")
            return None
    if since >= until:
        st.error(f"Time range: since {_iso(since)} is not before until {_iso(until)}")
        return None
    if until - since > MAX_RANGE_S * 1_000_000_000:
        st.error(f"Time range: at most {MAX_RANGE_S // 86_400} days at once (asked {(until - since) / 864e11:.1f})")
        return None
    return since, until, f"{_iso(since)} .. {_iso(until)} UTC"


def _refresh_button() -> int:
    """The refresh button: a new pull (presets move to now); returns the session's refresh count."""
    if st.sidebar.button("Refresh from the server", icon=":material/refresh:"):
        st.session_state["remote_refresh"] = st.session_state.get("remote_refresh", 0) + 1
        st.session_state["remote_anchor_ns"] = time.time_ns() // 1_000_000 * 1_000_000
    return int(st.session_state.get("remote_refresh", 0))


def _server_dataset(shown: str) -> Dataset | None:
    """Pick a range (a server) or scrapes (an exporter) in the sidebar and load; errors shown, never raised."""
    try:
        kind = source_kind(shown)
    except fabricscope.exceptions.FabricscopeError as e:
        st.error(markdown_text(f"Cannot read {shown}: {e}"))
        return None
    _, base = remote_sources()
    matchers = st.sidebar.text_input(
        "Label matchers",
        _remembered("remote_match", "match", ""),
        placeholder='job="node", instance=~"gpu0.*"',
        help="Only series matching these (ANDed)"
        + (f"; the server's configured ones always apply: {', '.join(base.match)}" if base.match else ""),
    )
    st.session_state["remote_match"] = matchers
    try:
        match = parse_matchers(matchers)
    except ValueError as e:
        st.error(markdown_text(f"Label matchers: {e}"))
        return None
    if kind == "prometheus":
        window = _time_range()
        if window is None:
            return None
        since, until, what = window
        scrapes, interval = 1, 0.0
    else:
        since = until = None
        scrapes = int(st.sidebar.number_input("Scrapes", 1, MAX_SCRAPES, min(max(base.repeat, 2), MAX_SCRAPES)))
        interval = float(
            st.sidebar.number_input(
                "Seconds between scrapes", 1.0, MAX_SCRAPE_INTERVAL_S, min(base.interval_s, MAX_SCRAPE_INTERVAL_S)
            )
        )
        what = f"{scrapes} scrape(s) {interval:g} s apart"
    refresh = _refresh_button()
    try:
        ds = load_remote(shown, since, until, match, scrapes, interval, refresh, f"{shown} · {what}")
    except (fabricscope.exceptions.FabricscopeError, ValueError) as e:
        # Ours: they name the URL without credentials and the HTTP status (and may quote the data).
        st.error(markdown_text(f"Cannot read {shown}: {e}"))
        return None
    except Exception as e:  # a page shows an error, never a traceback
        _log.error("reading %s failed: %s", shown, type(e).__name__)
        st.error(f"Cannot read {shown}: {type(e).__name__} (an unexpected failure; see the dashboard's log)")
        return None
    st.sidebar.caption(markdown_text(f"{kind}: {what}"))
    return ds


def current() -> Dataset | None:
    """Render the source picker and return the chosen dataset (None with an error shown)."""
    root = data_root()
    try:
        servers, _ = remote_sources()
    except ValueError as e:  # set by hand, not by `fabricscope dashboard` (which checks it)
        st.error(f"Cannot use the configured servers: {e}")
        return None
    where = [f"data directory `{root}`"] if files_configured() else []
    where += [f"{len(servers)} server(s)"] if servers else []
    st.sidebar.caption(f"fabricscope {fabricscope.__version__} · {' · '.join(where)}")
    _upload_widget()
    for msg in st.session_state.get("upload_refused", []):
        st.sidebar.error(markdown_text(msg))
    choice = _select_source(root, servers)
    if choice in servers:
        return _server_dataset(choice)
    if not files_configured() and choice != UPLOAD:
        st.error(markdown_text(f"Refused: {choice!r} is not one of the configured servers"))
        st.session_state["source"] = next(iter(servers))
        return None
    if choice == UPLOAD and st.session_state.get("upload"):
        directory, digest, names = st.session_state["upload"]
        return load_upload(directory, digest, f"upload: {names}")
    try:
        path = resolve_source(choice, root)
    except OutsideDataDirError as e:
        st.error(markdown_text(f"Refused: {e}"))
        st.session_state["source"] = "."
        return None
    try:
        return load_source(str(path), fingerprint(path), source_title(choice, root))
    except fabricscope.exceptions.FabricscopeError as e:
        st.error(markdown_text(f"Cannot read {choice}: {e}"))
        return None
