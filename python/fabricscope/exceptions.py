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
    "EngineUnavailableError",
    "FabricscopeError",
    "FormatError",
    "InputError",
    "InternalError",
    "LimitExceededError",
    "UnknownFormatError",
]


class EngineUnavailableError(FabricscopeError):
    """An analysis engine cannot run here (``--engine ray`` without Ray installed); exit status 3."""
