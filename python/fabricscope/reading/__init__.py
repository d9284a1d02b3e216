"""Reading: inputs (files, directories, URLs, a cron history) into the canonical tables.

The Rust core detects each input's format and parses it; this stage turns what it returns into
Polars frames with their input reports, names host-less inputs from their paths, and screens
implausible samples. Every door reads through it: ``analyze``, ``cron``, ``parse``, the report,
the dashboard, :func:`fabricscope.load` and every engine.
"""
