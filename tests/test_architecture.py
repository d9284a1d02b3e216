"""The shape of the code: no import cycles, no work-history labels, threshold sources a user can open."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fabricscope import _native
from fabricscope.detect import SPECS, STAGE_MODULES
from fabricscope.detect.config import DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "fabricscope"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    # Extension modules (the Rust binding) count through their stubs.
    stubs = {_module_name(p): p for p in PACKAGE.rglob("*.pyi")}
    return {**stubs, **{_module_name(p): p for p in PACKAGE.rglob("*.py")}}


def import_graph() -> dict[str, set[str]]:
    """Every import between fabricscope modules, function-level ones included.

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``; a package's
    own ``__init__`` running first is Python's mechanics, not an edge.
    """
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_is_seen() -> None:
    g = import_graph()
    # Known edges, so a broken walker cannot pass by seeing nothing.
    assert "fabricscope.engines" in g["fabricscope.pipeline"]
    assert "fabricscope.detect._base" in g["fabricscope.detect.link_flap"]
    assert sum(len(v) for v in g.values()) > 100


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


WORK_HISTORY = re.compile(
    "|".join([r"\bissue\s+#?\d", r"prior-art\s+[a-z]\.\d", r"formats\.md\s+\d", r"\(b\.\d\)"]), re.I
)


@pytest.mark.parametrize("tree", ["python", "rust", "tests", "dashboards"])
def test_no_work_history_labels(tree: str) -> None:
    hits = []
    for p in sorted((ROOT / tree).rglob("*")):
        if p.suffix not in {".py", ".rs", ".pyi", ".toml"} or "fixtures" in p.parts or "target" in p.parts:
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if WORK_HISTORY.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []


def _sources(d: dict, path: str = "") -> list[tuple[str, str]]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += _sources(v, f"{path}{k}.")
        elif k.startswith("source"):
            out.append((f"{path}{k}", v))
    return out


def test_every_threshold_source_is_public_or_a_stated_default() -> None:
    sources = _sources(DEFAULTS)
    assert len(sources) >= len(SPECS)
    internal = re.compile(r"prior-art|formats\.md|packets\.md|interconnect-stack|\barticle\b|\(b\.\d", re.I)
    public = re.compile(r"https?://|\(\d\)|Documentation/|drivers/|SIGCOMM|Manual|fabricscope default: \w")
    bad = [(k, v) for k, v in sources if internal.search(v) or not public.search(v)]
    assert bad == []


def format_name_collections(source: str, names: set[str]) -> list[int]:
    """Lines of literal sets, lists, tuples and dict keys naming three or more formats the core declares."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)) or items is None:
            continue
        named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
        if len(named) >= 3:
            hits.append(node.lineno)
    return hits


def collections_in_the_tree(find: Callable[[str, set[str]], list[int]], names: set[str], own: set[str]) -> list[str]:
    """``path:line`` of every collection ``find`` sees in python/ and dashboards/, except in ``own``."""
    hits = []
    for tree in ["python", "dashboards"]:
        for p in sorted((ROOT / tree).rglob("*.py")):
            rel = str(p.relative_to(ROOT))
            # A wheel build stages a copy of dashboards/ there (git-ignored): the source is checked.
            if rel not in own and not rel.startswith("python/fabricscope/_dashboard_app/"):
                hits += [f"{rel}:{n}" for n in find(p.read_text(encoding="utf-8"), names)]
    return hits


# The formats the simulator can write: its own writers, not a copy of what the core reads.
OWN_FORMAT_LISTS = {"python/fabricscope/simulate/__init__.py"}


def test_format_facts_are_read_from_the_core_not_copied() -> None:
    names = {f["name"] for f in _native.formats()}
    assert format_name_collections('TOPOLOGY = {"ibnetdiscover", "iblinkinfo", "lldpctl-json"}', names) == [1]
    assert collections_in_the_tree(format_name_collections, names, OWN_FORMAT_LISTS) == []


def counter_name_collections(source: str, names: set[str]) -> list[int]:
    """Lines of literal sets, lists, tuples and dicts (keys or values) naming two or more counters.

    A dict whose values are all dicts is a table of per-counter settings (a detector's thresholds,
    which a user's config overrides per counter), not a list of a signal's counters.
    """
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            settings = bool(node.values) and all(isinstance(v, ast.Dict) for v in node.values)
            groups = [node.values] if settings else [node.keys, node.values]
        elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            groups = [node.elts]
        else:
            continue
        for items in groups:
            named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
            if len(named) >= 2:
                hits.append(node.lineno)
                break
    return hits


# The simulator writes hardware counters: it names each one it emits, as a device would, and reads
# no signal from them.
OWN_COUNTER_LISTS = {
    "python/fabricscope/simulate/model.py",
    "python/fabricscope/simulate/writers.py",
    "python/fabricscope/simulate/scale.py",
}


def test_counter_lists_are_read_from_the_core_not_copied() -> None:
    """Which counters carry bytes, packets, pause, loss... is the core's counter roles; no module keeps a copy."""
    names = {c["name"] for c in _native.counters()}
    # The checker sees lists, tuples, sets, dict keys and dict values; a single name is not a list.
    assert counter_name_collections('A = ["phy_tx_bytes", "port_xmit_data_bytes"]', names) == [1]
    assert counter_name_collections('B = {"rx": "rx_pause_duration_us", "tx": "tx_pause_duration_us"}', names) == [1]
    assert counter_name_collections('C = ("phy_tx_bytes", 4)\nD = pl.col("c") == "phy_tx_bytes"', names) == []
    assert counter_name_collections('E = {"symbol_errors": {"min_count": 1}, "port_rcv_errors": {}}', names) == []
    assert collections_in_the_tree(counter_name_collections, names, OWN_COUNTER_LISTS) == []


def test_counter_roles_reach_python_in_their_preference_order() -> None:
    from fabricscope.reading.vocabulary import counters_by_direction, counters_with_role, roles

    assert counters_with_role("tx_bytes") == (
        "vport_rdma_tx_unicast_bytes",
        "ext_port_xmit_data_bytes",
        "port_xmit_data_bytes",
        "phy_tx_bytes",
    )
    # The kernel stack's counters exclude RDMA: a role of their own, not an RDMA port's traffic.
    assert counters_with_role("tx_stack_bytes") == ("netdev_tx_bytes",)
    assert counters_with_role("tx_bytes", "nvlink", "counter") == ("nvlink_tx_bytes",)
    assert counters_with_role("rx_bytes", "pcie", "gauge") == ("pcie_rx_bytes_per_s",)
    assert counters_by_direction("xoff_frames") == {"rx_xoff_frames": "rx", "tx_xoff_frames": "tx"}
    # A counter may carry several roles: ice's XOFF frames are pause frames too.
    assert "rx_xoff_frames" in counters_with_role("rx_pause_frames")
    assert len(roles()) == 42
    with pytest.raises(ValueError, match="unknown counter role 'tx_byte'"):
        counters_with_role("tx_byte")


def test_incidents_module_names_no_detector_kind() -> None:
    """The correlation keeps the algorithm only: every chain, root and consequence is declared by the
    detectors (``DetectorSpec.chains``/``relations``), so no finding kind is spelled in its code."""
    from fabricscope.detect import KINDS

    tree = ast.parse((PACKAGE / "incidents" / "correlate.py").read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    words = {
        w
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
        for w in re.findall(r"[a-z_]+", n.value)
    }
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert len(KINDS) > 10
    assert sorted(set(KINDS) & (words | names)) == []


def test_every_chain_has_roots_and_its_relations_name_declared_chains() -> None:
    from fabricscope.incidents.correlate import RULES

    names = {r.name for r in RULES}
    for spec in SPECS.values():
        for rel in spec.relations:
            assert rel.chain in names, (spec.name, rel)
            assert rel.spec.partition(":")[0] in spec.kinds, (spec.name, rel)
    assert all(r.root for r in RULES)
    assert names == {
        "link_loss_go_back_n",
        "pause_storm_head_of_line",
        "pause_storm_received",
        "lossless_off_drops",
        "incast_ecn",
        "degraded_link_ring",
        "spine_credit_starvation",
        "loss_fan_in",
        "nvlink_domain_down",
        "nvlink_link_xid",
    }


DETECT = "fabricscope.detect"


def detector_modules(graph: dict[str, set[str]]) -> set[str]:
    """The registry's detector modules: every module of ``fabricscope.detect`` not starting with ``_``,
    but the stage's own modules (``STAGE_MODULES``: the rates, the thresholds' defaults)."""
    return {
        m
        for m in graph
        if m.startswith(f"{DETECT}.")
        and not m.rpartition(".")[2].startswith("_")
        and m.rpartition(".")[2] not in STAGE_MODULES
    }


def test_the_detector_modules_are_the_registry() -> None:
    # The walker sees exactly the detectors, so the import rules below cannot pass by seeing none.
    assert {m.rpartition(".")[2] for m in detector_modules(import_graph())} == set(SPECS)


def test_no_detect_module_imports_a_detector() -> None:
    """Detectors share computations through ``detect/_shared.py``, never through each other's internals
    (only the registry, the package itself, imports them)."""
    graph = import_graph()
    detectors = detector_modules(graph)
    crossing = sorted(
        f"{m} -> {t}" for m in graph if m.startswith(f"{DETECT}.") for t in graph[m] & detectors if t != m
    )
    assert crossing == []


def test_detector_import_check_sees_a_crossing() -> None:
    graph = {"fabricscope.detect.a": {"fabricscope.detect.b"}, "fabricscope.detect.b": set()}
    assert detector_modules(graph) == {"fabricscope.detect.a", "fabricscope.detect.b"}


def test_the_analysis_imports_no_detector() -> None:
    """``Analysis.views`` is generic: the pipeline reads the registry, never one detector's module."""
    graph = import_graph()
    assert graph["fabricscope.pipeline"] & detector_modules(graph) == set()
    assert DETECT in graph["fabricscope.pipeline"]


def identity_caches(source: str) -> list[int]:
    """Lines that key or keep state by object identity or per thread: ``id(...)``, ``weakref``, ``threading``."""
    banned = ("threading", "weakref")

    def keyed_by_identity(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return isinstance(node.func, ast.Name) and node.func.id == "id"
        if isinstance(node, ast.Import):
            return any(a.name in banned for a in node.names)
        return isinstance(node, ast.ImportFrom) and node.module in banned

    return [node.lineno for node in ast.walk(ast.parse(source)) if keyed_by_identity(node)]


def test_detectors_cache_only_in_the_analysis_input() -> None:
    """Shared computations live in the run's ``AnalysisInput`` (``once``), so every partition of every
    engine has its own; an identity- or thread-keyed cache can return another input's frames."""
    assert identity_caches("import threading\n_LAST = threading.local()\nkey = id(rates)\n") == [1, 3]
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((PACKAGE / "detect").glob("*.py"))
        for n in identity_caches(p.read_text(encoding="utf-8"))
    ]
    assert hits == []


def modules_spelling(text: str) -> set[str]:
    """The package and dashboard modules with a string constant containing ``text`` (lowercase)."""
    found = set()
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "dashboards").rglob("*.py")]:
        if "_dashboard_app" in path.parts or "simulate" in path.parts:
            continue  # the installed copy of dashboards/; the simulator writes what devices print
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and text in node.value.lower():
                found.add(str(path.relative_to(ROOT)))
    return found


def test_the_fabric_is_modelled_once() -> None:
    # Which host and device a node GUID is: read from sysfs attributes by the entities of the one
    # fabric model (the engines only pass those attributes along), never by a detector, the
    # incidents or the dashboard.
    assert modules_spelling("node_guid_hex") == {
        "python/fabricscope/fabric/entities.py",
        "python/fabricscope/engines/base.py",
    }
    # Tiers (a switch cabled to an HCA that is not a SHARP aggregation node is a leaf) are computed
    # by the Rust core's link set, for one input and for the merged fabric alike.
    assert modules_spelling("aggregation node") == set()


# What only the fabric model does: resolve a GUID, read a node description, pair a cable's ends.
# The core's functions for these (fabricscope._native) and their Python wrappers in the model.
FABRIC_ONLY_FUNCTIONS = frozenset({"normalize_guid", "hca_host_device", "switch_name", "merge_links"})
# Literals that mean the same work done by hand: a node description's HCA marker ("host mlx5_0 ...
# MF0;" is how rdma-ndd names an HCA) and the links table's far-end column, which only the model
# pairs with the near end.
FABRIC_ONLY_LITERALS = ("mf0;", "peer_node_guid")
# The simulator writes node descriptions (it is a tool's output, not a reading of one).
FABRIC_LITERAL_WRITERS = frozenset({"python/fabricscope/simulate/sidefiles.py"})


def fabric_work_outside_the_model(paths: list[Path]) -> list[str]:
    """Each place outside ``fabricscope/fabric`` that calls or imports a fabric-only function or
    spells a fabric-only literal, as ``path:line: what``."""
    found: list[str] = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = None
            if isinstance(node, ast.Attribute) and node.attr in FABRIC_ONLY_FUNCTIONS:
                what = node.attr
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fabricscope"):
                what = next((a.name for a in node.names if a.name in FABRIC_ONLY_FUNCTIONS), None)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and rel not in FABRIC_LITERAL_WRITERS:
                what = next((lit for lit in FABRIC_ONLY_LITERALS if lit in node.value.lower()), None)
            if what:
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}: {what}")
    return found


def _outside_the_model() -> list[Path]:
    fabric = PACKAGE / "fabric"
    package = [p for p in PACKAGE.rglob("*.py") if fabric not in p.parents]
    return sorted(package + list((ROOT / "dashboards").rglob("*.py")))


def test_only_the_fabric_model_resolves_guids_reads_descriptions_or_pairs_cables() -> None:
    assert fabric_work_outside_the_model(_outside_the_model()) == []


def test_fabric_work_outside_the_model_is_seen(tmp_path: Path) -> None:
    # The check sees each way of doing the model's work elsewhere (a file under the repository root,
    # as the real modules are).
    probe = ROOT / "dashboards" / f"_probe_{tmp_path.name}.py"
    probe.write_text(
        "from fabricscope import _native\n"
        "from fabricscope.fabric.entities import normalize_guid\n"
        "a = _native.hca_host_device('h mlx5_0')\n"
        "b = text.endswith('MF0;')\n"
        "c = links['peer_node_guid']\n",
        encoding="utf-8",
    )
    try:
        found = fabric_work_outside_the_model([probe])
    finally:
        probe.unlink()
    assert sorted(f.split(":", 1)[1] for f in found) == [
        "2: normalize_guid",
        "3: hca_host_device",
        "4: mf0;",
        "5: peer_node_guid",
    ]
