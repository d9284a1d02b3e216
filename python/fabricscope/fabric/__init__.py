"""The fabric: one model of every host, NIC, port, switch and cable, and what links them.

Built once per analysis, after reading and before any detector runs (:mod:`fabricscope.fabric.model`);
the names each source uses resolved into entities (:mod:`fabricscope.fabric.entities`); the
cabling (:mod:`fabricscope.fabric.topology`); what each technology should deliver
(:mod:`fabricscope.fabric.profiles`); and the registry of relations between faults
(:mod:`fabricscope.fabric.relations`).
"""
