"""Package layout: only the command line (``fabricscope.doors.cli``) parses arguments and prints."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fabricscope"


def _library_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "cli" not in p.relative_to(PACKAGE).parts]


def _offences(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "print":
                out.append(f"{path.name}:{node.lineno}: print()")
            if isinstance(f, ast.Attribute) and f.attr in ("write", "print_exc"):
                owner = f.value
                if isinstance(owner, ast.Attribute) and owner.attr in ("stdout", "stderr"):
                    out.append(f"{path.name}:{node.lineno}: sys.{owner.attr}.write()")
                if isinstance(owner, ast.Name) and owner.id == "traceback":
                    out.append(f"{path.name}:{node.lineno}: traceback.print_exc()")
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            out.append(f"{path.name}:{node.lineno}: import argparse")
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            out.append(f"{path.name}:{node.lineno}: from argparse import")
    return out


def test_library_modules_neither_print_nor_parse_arguments() -> None:
    modules = _library_modules()
    assert len(modules) > 40  # the walk found the package
    offences = [o for p in modules for o in _offences(p)]
    assert offences == []


def test_the_walk_catches_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import argparse\nimport sys\nprint(1)\nsys.stderr.write('x')\n")
    assert _offences(bad) == [
        "bad.py:1: import argparse",
        "bad.py:3: print()",
        "bad.py:4: sys.stderr.write()",
    ]


def test_cli_is_a_package_with_one_module_per_command() -> None:
    names = {p.stem for p in (PACKAGE / "doors" / "cli").glob("*.py")}
    assert {"__init__", "parse", "analyze", "topology", "cron", "report", "simulate", "advise", "dashboard"} <= names
    assert not (PACKAGE / "cli.py").exists()
    assert not (PACKAGE / "cron.py").exists()
