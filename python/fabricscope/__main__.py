"""``python -m fabricscope``."""

from fabricscope.doors.cli import main

raise SystemExit(main())
