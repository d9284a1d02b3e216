"""Print the requirements of pyproject.toml's dependencies and of the named extras, one per line.

CI installs them into the venv while clippy runs, before the extension is built (pip would
otherwise have to build the project first to learn what it needs).

Usage: python .ci/requirements.py [EXTRA[,EXTRA...]]   (as in `pip install '.[EXTRA,...]'`)
"""

import sys

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
extras = project.get("optional-dependencies", {})
wanted = [e for arg in sys.argv[1:] for e in arg.split(",") if e]
unknown = [e for e in wanted if e not in extras]
if unknown:
    sys.exit(f"pyproject.toml has no extra named {', '.join(unknown)} (it has {', '.join(sorted(extras))})")
print("\n".join([*project["dependencies"], *(r for e in wanted for r in extras[e])]))
