"""Exceptions raised by fabricscope.

Every error is a :class:`FabricscopeError`. Errors about an input carry structured attributes so
callers never parse messages: ``path``, ``line`` (1-based, or None), ``byte_offset`` (0-based,
in the decompressed stream, or None), ``expected`` and ``found``.

Example:
    >>> import fabricscope
    >>> from fabricscope.exceptions import FabricscopeError, InputError
    >>> try:
    ...     fabricscope.read("/nonexistent/counters.prom")
    ... except InputError as e:
    ...     print(type(e).__name__, e.path)
    InputError /nonexistent/counters.prom
"""

from fabricscope._native import (
    DecompressionError,
    FabricscopeError,
    FormatError,
    InputError,
    InternalError,
    LimitExceededError,
    UnknownFormatError,
)

__all__ = [
    "DecompressionError",
    "EngineFailedError",
    "EngineUnavailableError",
    "FabricscopeError",
    "FormatError",
    "HistoryError",
    "InputError",
    "InternalError",
    "LimitExceededError",
    "OutputError",
    "RemoteError",
    "UnknownFormatError",
]


class EngineUnavailableError(FabricscopeError):
    """An analysis engine cannot run here (``--engine ray`` without Ray installed); exit status 3."""


class EngineFailedError(FabricscopeError):
    """An engine lost part of the work and could not recover it (a Ray node died beyond Ray's retries).

    Nothing is concluded from a partial analysis: the run is UNKNOWN (exit status 3), and the message
    names the nodes that were lost.
    """


class RemoteError(InputError):
    """An HTTP source could not be read: names the URL (without credentials) and the status.

    Attributes:
        url: The URL, without user info or query string.
        status: The HTTP status, or None when no response came (timeout, refused, TLS).
    """

    def __init__(self, url: str, status: int | None, message: str) -> None:
        what = f"HTTP {status}" if status is not None else "no response"
        super().__init__(f"{url}: {what}: {message}")
        self.url = url
        self.status = status
        self.path = url
        self.line = None
        self.byte_offset = None
        self.expected = "a successful HTTP response"
        self.found = what


class HistoryError(InputError):
    """A file of a cron history (``--history``) cannot be read: names the file and what to do.

    Attributes:
        path: The file.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.line = None
        self.byte_offset = None
        self.expected = "a complete Parquet file written by fabricscope cron"
        self.found = message


class OutputError(FabricscopeError):
    """A file cannot be written, or not safely: names the file and why.

    Attributes:
        path: The file (or the directory refused).
        reason: Why, in words.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
