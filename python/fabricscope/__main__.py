"""``python -m fabricscope``."""

from fabricscope.cli import main

raise SystemExit(main())
