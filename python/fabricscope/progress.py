"""One progress line on a terminal: what parsing, pulling and the streaming engine show on stderr.

Drawn only when asked or when the stream is a terminal, redrawn at most ten times a second, with
the fraction done and, once there is one, an estimate of the time left.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]

_WIDTH = 30


class ProgressBar:
    r"""A one-line progress bar with a rate and an ETA.

    Args:
        enabled: Draw it (None: only when ``stream`` is a terminal).
        stream: Where it is drawn (default: stderr).
        min_interval_s: Shortest time between two redraws (the last step is always drawn).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressBar(enabled=True, stream=out)
        >>> bar.update(10, 10, label="reading", detail="3 files")
        >>> bar.close()
        >>> out.getvalue()
        '\rreading    [##############################] 100.0%  3 files \n'
    """

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None, min_interval_s: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.min_interval_s = min_interval_s
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    @property
    def elapsed_s(self) -> float:
        """Seconds since the bar was made."""
        return max(time.monotonic() - self.start, 1e-9)

    def update(self, done: float, total: float, *, label: str = "", detail: str = "", force: bool = False) -> None:
        """Redraw: ``done`` of ``total`` (a total of 0 draws no bar, only ``detail``)."""
        if not self.enabled:
            return
        now = time.monotonic()
        finished = total > 0 and done >= total
        if not force and not finished and now - self.last < self.min_interval_s:
            return
        self.last = now
        parts = [f"{label:<9}"] if label else []
        if total > 0:
            frac = min(done / total, 1.0)
            parts.append(f"[{'#' * int(frac * _WIDTH):<{_WIDTH}}] {frac:6.1%}")
        if detail:
            parts.append(detail)
        if total > 0 and 0 < done < total:
            spent = self.elapsed_s
            parts.append(f"{spent * (total / done - 1):,.0f} s left")
        self.stream.write("\r" + "  ".join(parts) + " ")
        self.stream.flush()
        self.drawn = True

    def pulled(self, done: int, total: int, samples: int) -> None:
        """The remote reader's progress callback: ``done`` of ``total`` (ns of the range, or scrapes)."""
        self.update(done, total, detail=f"{samples:,} samples  {samples / self.elapsed_s:,.0f}/s")

    def close(self) -> None:
        """End the line (nothing when nothing was drawn); later updates start a new one."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
