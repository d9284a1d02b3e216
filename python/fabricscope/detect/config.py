"""Detector thresholds: defaults with their sources, overridable from a TOML file.

Every threshold a detector uses lives here; ``docs/detectors.md`` explains each with its source,
and every finding's evidence names the rule and the source of the threshold that fired.

TOML layout mirrors :data:`DEFAULTS`, e.g.::

    [link_errors.symbol_errors]
    warning_per_s = 0.01

    [ib_congestion]
    warning_wait_ratio = 0.2
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path
from typing import Any

from fabricscope.detect import SPECS

__all__ = ["DEFAULTS", "load_config", "read_toml"]

DEFAULTS: dict[str, Any] = {
    "rates": {"gap_factor": 3.0, "min_gap_s": 0.0},
    # Flagged intervals up to this many sampling intervals apart are one finding (an intermittent
    # fault is one finding with a window, not one per burst).
    "merge": {"max_gap_factor": 6.0},
    # Each detector's section is the defaults its module declares (fabricscope.detect.SPECS).
    **{name: copy.deepcopy(dict(spec.defaults)) for name, spec in SPECS.items()},
}
"""Every default: the rate engine's, the merging distance, and each detector's (from its spec)."""


def _merge(base: dict[str, Any], over: dict[str, Any], path: str) -> None:
    for k, v in over.items():
        if k not in base:
            raise ValueError(f"config: unknown key {path}{k}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ValueError(f"config: {path}{k} must be a table")
            _merge(base[k], v, f"{path}{k}.")
        else:
            if isinstance(base[k], (int, float)) and not isinstance(v, (int, float)):
                raise ValueError(f"config: {path}{k} must be a number")
            base[k] = v


def load_config(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Defaults, overridden by a TOML file when given.

    Raises:
        ValueError: unknown keys or wrong types (the message names the key).
        OSError: the file cannot be read.

    Example:
        >>> from fabricscope.detect.config import load_config
        >>> load_config()["ib_congestion"]["warning_wait_ratio"]
        0.1
    """
    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        return cfg
    _merge(cfg, read_toml(path), "")
    return cfg


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TOML file as a dict.

    Raises:
        ValueError: the file is not valid TOML (the message names the file and where).
        OSError: the file cannot be read.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with Path(path).open("rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"config {os.fspath(path)}: {e}") from e
