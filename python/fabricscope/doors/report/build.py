"""Build a report: gather, plot, render (HTML or Markdown) and write it atomically.

The report's entry point: :func:`write_report` runs the stages in order and reports each. Each
stage is a module of its own: :mod:`~fabricscope.doors.report.gather` (the data),
:mod:`~fabricscope.doors.report.plots`, :mod:`~fabricscope.doors.report.html` and
:mod:`~fabricscope.doors.report.markdown` (beside what both formats say,
:mod:`~fabricscope.doors.report.content`); their public names are importable from here as from
:mod:`fabricscope.doors.report`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from fabricscope import _atomic
from fabricscope.doors.report.gather import ReportData, gather
from fabricscope.doors.report.html import render_html
from fabricscope.doors.report.markdown import render_markdown
from fabricscope.doors.report.plots import NO_MATPLOTLIB, _plot_port, _port_frames

_log = logging.getLogger(__name__)

__all__ = ["ProgressCallback", "ReportData", "gather", "render_html", "render_markdown", "write_report"]


ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, what)``: stage ``done`` of ``total`` (0 while unknown) is ``what``."""


class _Stages:
    """Counts the report's stages and hands each to ``progress`` (else logs it at DEBUG level)."""

    def __init__(self, progress: ProgressCallback | None, total: int = 0) -> None:
        self.progress = progress
        self.total = total
        self.done = 0

    def step(self, what: str) -> None:
        """One more stage done: ``what`` it is."""
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, what)
        else:
            _log.debug("report stage %d/%d: %s", self.done, self.total, what)


def write_report(
    sources: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str = "html",
    progress: ProgressCallback | None = None,
    max_ports: int = 12,
    **kwargs: Any,
) -> ReportData:
    """Gather, plot and write a report atomically.

    Args:
        sources: Inputs or history directories.
        output: The report file.
        format: ``html`` or ``md``.
        progress: Called once per stage (analysing, plotting each port, writing); the
            command line draws it on stderr. None: stages are logged at DEBUG level.
        max_ports: Most ports plotted (ports with findings first).
        **kwargs: Passed to :func:`gather`.

    Returns:
        The :class:`ReportData` written.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "r.html"
        >>> _ = write_report(["sample_traces/ethtool"], out)
        >>> out.read_text().startswith("<!DOCTYPE html>")
        True
    """
    stages = _Stages(progress)
    stages.step("analysing")
    data = gather(sources, **kwargs)
    ports = _port_frames(data, max_ports)
    stages.total = len(ports) + 2
    if ports and importlib.util.find_spec("matplotlib") is None:
        # matplotlib is the `report` extra: without it the report is whole but for its plots.
        data.plot_note = NO_MATPLOTLIB
        ports = []
    for key, pr, pf in ports:
        stages.step("plotting " + "/".join(str(k) for k in key if k is not None))
        image = _plot_port(key, pr, pf, data.gauges, "png" if format == "md" else "svg")
        data.plots.append(("/".join(str(k) for k in key if k is not None), image))
    stages.step("writing")
    text = render_markdown(data) if format == "md" else render_html(data)
    _atomic.write_text(output, text)
    return data
