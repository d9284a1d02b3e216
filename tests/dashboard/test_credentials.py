"""`fabricscope dashboard`: the credentials of --prometheus reach Streamlit in a private file, never its environment."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

from tests.dashboard.conftest import free_port, running_dashboard

PASSWORD = "pw-0d7c-dashboard-never-in-environ"
QUERY_TOKEN = "qtok-5e21-dashboard-never-in-environ"
HEADER = "hdr-c4a9-dashboard-never-in-environ"


def _environ(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").partition("=")[::2] for e in entries if e)


def test_credentials_reach_the_server_in_a_private_file_removed_at_exit(tmp_path: Path) -> None:
    url = f"http://ops:{PASSWORD}@127.0.0.1:{free_port()}/?token={QUERY_TOKEN}"
    source = ["--prometheus", url, "--prometheus-header", f"X-Scope-OrgID={HEADER}"]
    with running_dashboard(tmp_path / "server.log", data=source) as (_url, proc):
        (server,) = (int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
        environ = _environ(server)
        cmdline = Path(f"/proc/{server}/cmdline").read_bytes().decode(errors="replace")
        for secret in (PASSWORD, QUERY_TOKEN, HEADER):
            assert not [k for k, v in environ.items() if secret in v]
            assert secret not in cmdline
        path = Path(environ["FABRICSCOPE_REMOTE_FILE"])
        info, directory = path.stat(), path.parent.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o600, os.getuid())
        assert (stat.S_IMODE(directory.st_mode), directory.st_uid) == (0o700, os.getuid())
        text = path.read_text()
        assert PASSWORD in text and QUERY_TOKEN in text and HEADER in text
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert not path.exists() and not path.parent.exists()
    assert PASSWORD not in (tmp_path / "server.log").read_text(errors="replace")
