"""Run ``fabricscope ARGS`` as the console script in a process of its own, or as the same
``fabricscope.doors.cli.main`` in this process.

In a process of its own a run pays a Python start-up and the imports (polars, the detectors):
about 1.5 s, most of a small input's run. In this process the arguments, the files written, the
exit status and what is printed are the command line's; tests that run the CLI on many inputs
run most of them here and a few through the console script.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fabricscope.doors.cli import main as cli_main

CLI = str(Path(sys.executable).with_name("fabricscope"))


def run_cli(
    args: Sequence[str], *, process: bool, cwd: Path | None = None, timeout: float = 300
) -> tuple[int, str, str]:
    """``fabricscope ARGS``: its exit status, its standard output and its standard error.

    ``cwd`` is the working directory of a run in a process of its own; a run in this process
    keeps this process's (give absolute paths: changing it would change it for every thread).
    ``timeout`` bounds a run in a process of its own, in seconds.
    """
    if process:
        run = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)
        return run.returncode, run.stdout, run.stderr
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def fabricscope(
    *args: str, process: bool = True, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` as a completed process (its ``returncode``, ``stdout`` and ``stderr``)."""
    code, out, err = run_cli(args, process=process, cwd=cwd, timeout=timeout)
    return subprocess.CompletedProcess([CLI, *args], code, out, err)
