"""`fabricscope dashboard`: finding the app, the locked-down server command, argument errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from fabricscope.doors.cli import main
from fabricscope.doors.dashboard import find_app, streamlit_command

from tests.dashboard.conftest import APP, ROOT


def test_find_app_in_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FABRICSCOPE_DASHBOARD_APP", raising=False)
    assert find_app() == APP


def test_find_app_explicit_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "sdist" / "dashboards"
    other.mkdir(parents=True)
    (other / "app.py").write_text("")
    monkeypatch.setenv("FABRICSCOPE_DASHBOARD_APP", str(other))
    assert find_app() == other / "app.py"
    assert find_app(APP.parent) == APP  # --app wins over the environment
    with pytest.raises(FileNotFoundError, match="--app /nonexistent"):
        find_app("/nonexistent")
    monkeypatch.setenv("FABRICSCOPE_DASHBOARD_APP", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"FABRICSCOPE_DASHBOARD_APP .*missing"):
        find_app()


def test_find_app_installed_without_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fabricscope.doors.dashboard as d

    # The package installed from a wheel, away from any checkout: the copy inside the package is used.
    package = tmp_path / "site-packages" / "fabricscope"
    monkeypatch.setattr(d, "__file__", str(package / "doors" / "dashboard.py"))
    monkeypatch.delenv("FABRICSCOPE_DASHBOARD_APP", raising=False)
    with pytest.raises(FileNotFoundError, match="this installation lacks it"):
        d.find_app()
    (package / "_dashboard_app").mkdir(parents=True)
    (package / "_dashboard_app" / "app.py").write_text("")
    assert d.find_app() == package / "_dashboard_app" / "app.py"
    monkeypatch.setenv("FABRICSCOPE_DASHBOARD_APP", str(APP.parent))
    assert d.find_app() == APP


def test_default_data_is_the_sample_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fabricscope.doors.dashboard import default_data_dir

    assert default_data_dir(APP) == ROOT / "sample_traces"
    installed = tmp_path / "site-packages" / "fabricscope" / "_dashboard_app" / "app.py"
    monkeypatch.chdir(tmp_path)
    assert default_data_dir(installed) is None
    (tmp_path / "sample_traces").mkdir()
    assert default_data_dir(installed) == tmp_path / "sample_traces"


def test_streamlit_command_is_locked_down() -> None:
    cmd = streamlit_command(APP, port=8600, max_upload_mb=50)
    opts = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert cmd[2:5] == ["streamlit", "run", str(APP)]
    assert opts["--server.address"] == "127.0.0.1"
    assert opts["--server.port"] == "8600"
    assert opts["--server.maxUploadSize"] == "50"
    assert opts["--server.headless"] == "true"
    assert opts["--server.fileWatcherType"] == "none"
    assert opts["--server.enableXsrfProtection"] == "true"
    assert opts["--browser.gatherUsageStats"] == "false"


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--data", "/nonexistent/dir"], 3, "is not a directory"),
        (["--port", "70000"], 3, "is not a TCP port"),
        (["--max-upload-mb", "0"], 3, "at least 1"),
        (["--app", "/nonexistent/app.py"], 3, "no dashboards/app.py there"),
    ],
)
def test_argument_errors(argv: list[str], status: int, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard", *argv]) == status
    assert message in capsys.readouterr().err


def test_docstring_examples() -> None:
    import doctest

    import fabricscope.doors.dashboard

    result = doctest.testmod(fabricscope.doors.dashboard, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


def test_prometheus_sources_reach_the_app_without_their_secrets_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import fabricscope.doors.cli.dashboard as cli_dashboard
    from fabricscope.doors.dashboard import remote_from_environment

    seen: dict[str, object] = {}

    def run_server(cmd: list[str], env: dict[str, str]) -> int:
        path = Path(env["FABRICSCOPE_REMOTE_FILE"])
        seen.update(cmd=cmd, env=env, path=path, mode=path.stat().st_mode & 0o777, text=path.read_text())
        return 0

    monkeypatch.setattr(cli_dashboard, "run_server", run_server)
    monkeypatch.delenv("FABRICSCOPE_DATA", raising=False)
    argv = [
        "dashboard",
        "--data",
        "http://ops:pw-secret@prom.example:9090",
        "--prometheus",
        "http://gpu017:9100/metrics",
        "--match",
        'job="node"',
        "--prometheus-header",
        "X-Scope-OrgID=hdr-secret",
        "--bearer-token-file",
        "/etc/fabricscope/token",
        "--repeat",
        "3",
        "--timeout",
        "5",
    ]
    assert main(argv) == 0
    env = seen["env"]
    assert isinstance(env, dict)
    assert "FABRICSCOPE_DATA" not in env  # a URL as --data: no directory is offered
    # The description reached the app in a file only the user can read, removed once the server stopped.
    assert seen["mode"] == 0o600
    path = seen["path"]
    assert isinstance(path, Path) and not path.exists()
    text = seen["text"]
    assert isinstance(text, str)
    urls, opts = remote_from_environment(text)
    assert urls == ["http://ops:pw-secret@prom.example:9090", "http://gpu017:9100/metrics"]
    assert opts.match == ('job="node"',)
    assert opts.repeat == 3
    assert opts.connection.headers == (("X-Scope-OrgID", "hdr-secret"),)
    assert opts.connection.bearer_token_file == "/etc/fabricscope/token"
    assert opts.connection.timeout_s == 5.0
    # The secrets travel in that file: never on the child's command line, in its environment or in our output.
    err = capsys.readouterr().err
    assert "data: http://prom.example:9090, http://gpu017:9100/metrics" in err
    for secret in ("pw-secret", "hdr-secret"):
        assert secret not in " ".join(seen["cmd"]) + " ".join(env.values()) + err  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("prometheus:9090", "expected an http:// or https:// URL"),
        ("http://ops:pw-secret@prom:99999", "not a valid URL: Port out of range 0-65535"),
        ("http://:9090", "the URL names no host"),
    ],
)
def test_prometheus_must_be_a_url(
    url: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fabricscope.doors.cli.dashboard as cli_dashboard

    def run_server(cmd: list[str], env: dict[str, str]) -> int:
        raise AssertionError("a bad --prometheus must stop the command before the server starts")

    monkeypatch.setattr(cli_dashboard, "run_server", run_server)
    assert main(["dashboard", "--prometheus", url]) == 3  # usage error: UNKNOWN
    err = capsys.readouterr().err
    assert f"fabricscope: --prometheus: {message}" in err
    assert "pw-secret" not in err


def test_no_data_outside_a_checkout_says_what_to_point_it_at(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # From a wheel, away from a checkout: no sample_traces/ to default to.
    import fabricscope.doors.cli.dashboard as cli_dashboard

    monkeypatch.setattr(cli_dashboard, "default_data_dir", lambda app: None)
    assert main(["dashboard"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pass --data DIR (counter files or a `fabricscope cron` history;" in err
    assert "`fabricscope simulate demo --scenario pfc-storm` writes a demo one) or --prometheus URL" in err


def test_analysis_options_reach_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The options of `analyze` the dashboard takes travel to every run_analysis of the app.
    import fabricscope.doors.cli.dashboard as cli_dashboard
    from fabricscope.doors.dashboard import ENV_ANALYSIS, analysis_from_environment

    seen: dict[str, dict[str, str]] = {}

    def run_server(cmd: list[str], env: dict[str, str]) -> int:
        seen["env"] = env
        return 0

    monkeypatch.setattr(cli_dashboard, "run_server", run_server)
    config = tmp_path / "thresholds.toml"
    config.write_text("")
    argv = ["dashboard", "--data", str(tmp_path), "--config", str(config), "--hosts", "gpu01,gpu02"]
    argv += ["--limit", "max_labels=512", "--host-alias", "gpu01.lab=gpu01", "--host", "127.0.0.1"]
    assert main(argv) == 0
    assert analysis_from_environment(seen["env"][ENV_ANALYSIS]) == {
        "config": str(config),
        "engine": "local",
        "hosts": ["gpu01", "gpu02"],
        "limits": {"max_labels": 512},
        "host_aliases": {"gpu01.lab": "gpu01"},
        "future_margin_s": 86400.0,
    }
