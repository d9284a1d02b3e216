"""`fabricscope dashboard` passes stop signals on to its Streamlit child and exits with it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.dashboard.conftest import running_dashboard


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from Linux /proc")
# Streamlit stops cleanly (status 0) on SIGINT and SIGTERM; SIGHUP ends it by the signal (a shell's 128 + 1).
@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 0), (signal.SIGINT, 0), (signal.SIGHUP, 129)], ids=["TERM", "INT", "HUP"]
)
def test_stop_signal_reaches_the_server(signum: signal.Signals, status: int, tmp_path: Path) -> None:
    with running_dashboard(tmp_path / "server.log") as (_url, proc):
        (server,) = _children(proc.pid)  # the Streamlit process
        # Only the fabricscope process is signalled, as `kill PID` or a service manager's stop does.
        os.kill(proc.pid, signum)
        exit_status = proc.wait(timeout=60)
        log = (tmp_path / "server.log").read_text(errors="replace")
        assert exit_status == status, log  # fabricscope exits with its child's status
        # The child was reaped by fabricscope (no zombie) and no longer exists.
        assert not Path(f"/proc/{server}").exists(), log
        if status == 0:
            assert "Stopping..." in log
