"""Errors of a ``fabricscope cron`` run and the recovery its messages name."""

from __future__ import annotations

from fabricscope.exceptions import FabricscopeError

RECOVERY_HINT = (
    "recover with `fabricscope cron ... --reset-state`, which rebuilds the state from the history "
    "(no sample is stored twice), or delete the state directory and the history together"
)


class StateError(FabricscopeError):
    """The state directory is unreadable or inconsistent; see the message for the recovery."""


class LockedError(FabricscopeError):
    """Another run holds the state lock."""
