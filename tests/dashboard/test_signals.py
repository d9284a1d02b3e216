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
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_stop_signal_reaches_the_server(signum: signal.Signals, tmp_path: Path) -> None:
    with running_dashboard(tmp_path / "server.log") as (_url, proc):
        (server,) = _children(proc.pid)  # the Streamlit process
        # Only the fabricscope process is signalled, as `kill PID` or a service manager's stop does.
        os.kill(proc.pid, signum)
        status = proc.wait(timeout=60)
        log = (tmp_path / "server.log").read_text(errors="replace")
        assert status == 0, log  # Streamlit shuts down cleanly on each of these signals
        # The child was reaped by fabricscope (no zombie) and no longer exists.
        assert not Path(f"/proc/{server}").exists(), log
        assert "Stopping..." in log
