"""Every docstring example in the public package runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "fabricscope",
    "fabricscope.reading.scan",
    "fabricscope.reading.load",
    "fabricscope.reading.vocabulary",
    "fabricscope.reading.prometheus",
    "fabricscope.transport",
    "fabricscope.exceptions",
    "fabricscope.doors.input_summary",
    "fabricscope.doors._text_table",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
