"""``fabricscope dashboard``: start the Streamlit fabric-health dashboard on this machine.

The app is ``dashboards/app.py`` of the source tree (it ships in the sdist, not inside the Python
package, because it is a Streamlit script tree rather than importable code). It is found, in order:

1. ``--app PATH`` (the app file, or the ``dashboards`` directory holding it);
2. the ``FABRICSCOPE_DASHBOARD_APP`` environment variable (same);
3. ``dashboards/app.py`` beside the package's source tree (a checkout, an editable install, or an
   unpacked sdist: ``python/fabricscope/`` → ``dashboards/``).

So an installed wheel runs it with ``FABRICSCOPE_DASHBOARD_APP=/path/to/sdist/dashboards``.

What the server is allowed to do is decided here, not in the browser: it binds to 127.0.0.1
unless ``--host`` says otherwise, reads only under ``--data`` (passed to the app as
``FABRICSCOPE_DATA``; the app refuses paths outside it), caps uploads at ``--max-upload-mb``
(Streamlit's ``server.maxUploadSize`` and the app's own check), never opens a browser, and does
not watch or re-run its own source.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ENV_APP", "ENV_DATA", "ENV_MAX_UPLOAD_MB", "find_app", "streamlit_command"]

ENV_APP = "FABRICSCOPE_DASHBOARD_APP"
ENV_DATA = "FABRICSCOPE_DATA"
ENV_MAX_UPLOAD_MB = "FABRICSCOPE_MAX_UPLOAD_MB"


def find_app(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Locate ``dashboards/app.py``.

    Args:
        explicit: ``--app``: the app file or its directory (wins over everything).

    Returns:
        The resolved path of ``app.py``.

    Raises:
        FileNotFoundError: no candidate exists; the message lists where it looked.

    Example:
        >>> from fabricscope.dashboard import find_app
        >>> find_app().name
        'app.py'
    """
    # A location the user named must exist: silently running another copy would be a surprise.
    for named, what in ((explicit, "--app"), (os.environ.get(ENV_APP), ENV_APP)):
        if named:
            p = Path(named).expanduser()
            p = p / "app.py" if p.is_dir() else p
            if not p.is_file():
                raise FileNotFoundError(f"{what} {named}: no dashboards/app.py there")
            return p.resolve()
    here = Path(__file__).resolve().parent  # .../python/fabricscope
    p = here.parent.parent / "dashboards" / "app.py"
    if p.is_file():
        return p
    raise FileNotFoundError(
        f"cannot find the dashboard app (looked at {p}): pass --app or set {ENV_APP} to the dashboards/ "
        "directory of the fabricscope sdist"
    )


def streamlit_command(app: Path, *, host: str = "127.0.0.1", port: int = 8501, max_upload_mb: int = 200) -> list[str]:
    """The ``streamlit run`` command line for the app, with the server locked down.

    Example:
        >>> from pathlib import Path
        >>> from fabricscope.dashboard import streamlit_command
        >>> cmd = streamlit_command(Path("dashboards/app.py"), port=8600)
        >>> cmd[cmd.index("--server.address") + 1], cmd[cmd.index("--server.port") + 1]
        ('127.0.0.1', '8600')
    """
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.maxUploadSize",
        str(max_upload_mb),
        # The app's source is not a live-reload playground in production.
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--server.enableXsrfProtection",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]
