"""Sidebar widgets every page shares: the source picker and the upload box."""

from __future__ import annotations

import shutil
from pathlib import Path

import fabricscope
import streamlit as st
from data import Dataset, fingerprint, load_source, load_upload
from sources import OutsideDataDirError, data_root, list_sources, max_upload_bytes, resolve_source, save_uploads

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


def _select_source(root: Path) -> str:
    """The sidebar source picker; the choice persists across pages and can come from ``?source=``."""
    options = list_sources(root)
    wanted = st.session_state.get("source")
    if wanted is None:
        wanted = st.query_params.get("source", ".")
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
        format_func=lambda o: source_title(o, root),
        help=f"Directories under the data directory {root}",
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


def current() -> Dataset | None:
    """Render the source picker and return the chosen dataset (None with an error shown)."""
    root = data_root()
    st.sidebar.caption(f"fabricscope {fabricscope.__version__} · data directory `{root}`")
    _upload_widget()
    for msg in st.session_state.get("upload_refused", []):
        st.sidebar.error(msg)
    choice = _select_source(root)
    if choice == UPLOAD and st.session_state.get("upload"):
        directory, digest, names = st.session_state["upload"]
        return load_upload(directory, digest, f"upload: {names}")
    try:
        path = resolve_source(choice, root)
    except OutsideDataDirError as e:
        st.error(f"Refused: {e}")
        st.session_state["source"] = "."
        return None
    try:
        return load_source(str(path), fingerprint(path), source_title(choice, root))
    except fabricscope.exceptions.FabricscopeError as e:
        st.error(f"Cannot read {choice}: {e}")
        return None
