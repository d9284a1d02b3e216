"""Incidents: the findings contract, and findings grouped into faults, one physical root each.

:mod:`fabricscope.incidents.findings` is the contract every detector's output follows (schema,
severity, the JSON document, the verdict); :mod:`fabricscope.incidents.correlate` groups findings
into incidents through the relations of :mod:`fabricscope.fabric.relations`.
"""
