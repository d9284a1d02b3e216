"""Severity and status: the ordered words of every finding, verdict and door, written once.

A finding's :class:`Severity` is ``info`` < ``warning`` < ``critical``; warnings and criticals page
(:data:`PAGING`). A run's :class:`Status` is its Nagios verdict, ordered by Nagios' and Icinga's
worst-state order (OK < WARNING < UNKNOWN < CRITICAL: an unreadable input makes the verdict
incomplete, unless a critical was found anyway), each with its exit code (0, 1, 3, 2). Every module
that orders, counts, marks or colours severities, and every door that turns a verdict into an exit
code or a word, asks these two types.

Example:
    >>> from fabricscope.incidents.severity import Severity, Status
    >>> Severity.worst(["info", "critical", "warning"])
    <Severity.CRITICAL: 'critical'>
    >>> Status.of(Severity.WARNING, failed_inputs=1).exit_code
    3
    >>> import polars as pl
    >>> f = pl.DataFrame({"severity": ["warning", "info", "critical"]})
    >>> f.sort(Severity.rank_expr(), descending=True)["severity"].to_list()
    ['critical', 'warning', 'info']
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

import polars as pl

__all__ = ["PAGING", "SEVERITIES", "STATUSES", "Severity", "Status"]


class Severity(str, Enum):
    """How bad one finding is, ordered: ``info`` < ``warning`` < ``critical``."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """0 for info, 1 for warning, 2 for critical."""
        return _SEVERITY_ORDER.index(self)

    @property
    def mark(self) -> str:
        """The four-letter mark of a text listing: ``CRIT``, ``WARN``, ``info``."""
        return _MARKS[self]

    @property
    def pages(self) -> bool:
        """Whether a finding of this severity pages (a warning or a critical)."""
        return self is not Severity.INFO

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank >= other.rank

    __hash__ = str.__hash__

    @classmethod
    def worst(cls, severities: Iterable[str]) -> Severity | None:
        """The worst of ``severities`` (words or members); None when there are none."""
        return max((cls(s) for s in severities), default=None)

    @staticmethod
    def rank_expr(column: str | pl.Expr = "severity") -> pl.Expr:
        """The rank of a severity column as a Polars expression (0 info, 1 warning, 2 critical).

        Sort by it descending for worst first; an unknown word is an error, never ranked silently.
        """
        col = pl.col(column) if isinstance(column, str) else column
        return col.cast(pl.String).replace_strict({s.value: s.rank for s in Severity}, return_dtype=pl.Int8)


_SEVERITY_ORDER = (Severity.INFO, Severity.WARNING, Severity.CRITICAL)
_MARKS = {Severity.INFO: "info", Severity.WARNING: "WARN", Severity.CRITICAL: "CRIT"}

SEVERITIES: tuple[str, ...] = tuple(s.value for s in _SEVERITY_ORDER)
"""The severity words, least severe first."""

PAGING: tuple[str, ...] = (Severity.WARNING.value, Severity.CRITICAL.value)
"""The severities that page: a warning or a critical finding belongs to an incident."""


class Status(str, Enum):
    """A run's verdict, with its Nagios exit code; ordered by the worst-state order."""

    OK = "ok"
    WARNING = "warning"
    UNKNOWN = "unknown"
    CRITICAL = "critical"

    def __str__(self) -> str:
        return self.value

    @property
    def exit_code(self) -> int:
        """The Nagios plugin exit code: 0 ok, 1 warning, 2 critical, 3 unknown."""
        return _EXIT[self]

    @property
    def rank(self) -> int:
        """The worst-state order: ok 0, warning 1, unknown 2, critical 3."""
        return _STATUS_ORDER.index(self)

    @classmethod
    def from_exit(cls, code: int) -> Status:
        """The verdict an exit code stands for."""
        return next(s for s, c in _EXIT.items() if c == code)

    @classmethod
    def of(cls, worst: Severity | str | None, *, failed_inputs: int = 0, analysed: bool = True) -> Status:
        """The verdict from the worst finding and the inputs.

        ``ok`` when nothing is above info, else the worst severity; an input that could not be read,
        or nothing analysed at all, makes it ``unknown`` unless a critical was found anyway.
        """
        sev = Severity(worst) if worst is not None else Severity.INFO
        status = {Severity.INFO: cls.OK, Severity.WARNING: cls.WARNING, Severity.CRITICAL: cls.CRITICAL}[sev]
        if (failed_inputs or not analysed) and status is not cls.CRITICAL:
            return cls.UNKNOWN
        return status


_STATUS_ORDER = (Status.OK, Status.WARNING, Status.UNKNOWN, Status.CRITICAL)
_EXIT = {Status.OK: 0, Status.WARNING: 1, Status.CRITICAL: 2, Status.UNKNOWN: 3}

STATUSES: tuple[str, ...] = tuple(s.value for s in _STATUS_ORDER)
"""The verdict words in the worst-state order."""
