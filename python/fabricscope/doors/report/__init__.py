"""``fabricscope report``: one self-contained HTML (or Markdown) report from inputs or a history."""

from fabricscope.doors.report.build import ReportData, gather, render_html, render_markdown, write_report

__all__ = ["ReportData", "gather", "render_html", "render_markdown", "write_report"]
