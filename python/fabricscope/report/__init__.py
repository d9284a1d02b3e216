"""``fabricscope report``: one self-contained HTML (or Markdown) report from inputs or a history."""

from __future__ import annotations

from typing import Any

__all__ = ["add_report_parser"]


def add_report_parser(sub: Any) -> None:
    """Register ``fabricscope report`` on the CLI's subparsers."""
    from fabricscope.report.build import add_parser

    add_parser(sub)
