"""The doors: the command line, cron, the report and the dashboard.

A door owns only what is its own (its arguments, cron's state and history, its outputs); it reads
through :mod:`fabricscope.reading` and analyses through :func:`fabricscope.pipeline.run_analysis`.
"""
