"""The import rules of DESIGN.md, checked by walking every module's imports.

Modules are named relative to the package (``search``, ``plaud.documents``,
``index.snapshot``); relative imports are resolved, so a renamed or moved
module fails here instead of slipping past a name check.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "plaud_index"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


MODULES = {module_name(p): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}
# Pure: no filesystem, network, subprocess, threads or clock; they import only pure modules.
PURE = {"errors", "models", "results", "reports", "search", "index.analyzer", "chunker",
        "search.rank", "render", "render.answers", "render.reports", "render.pages",
        "setup.health", "redact", "sync.progress", "search.snippets", "clock",
        "search.browse",
        "search.transcript", "search.topk", "search.notes", "search.pages", "search.cursors",
        "search.moments", "search.collapse", "search.people", "cleaning", "intervals",
        "index.speakers", "index.titles",
        "sync.policy", "sync.pace", "sync.recordings", "plaud.documents", "plaud.fields",
        "plaud.notes",
        "plaud.settings", "setup.jsonc", "setup.jsonc_edit", "setup.toml_edit",
        "index.snapshot", "index.postings",
        "index.records", "index.values", "mirror.document", "mirror.names", "server.jsonrpc_guard"}
IO_MODULES = {"os", "resource", "socket", "urllib.request", "urllib.error", "http",
              "subprocess", "fcntl", "time", "sqlite3", "shutil", "tempfile", "threading",
              "pathlib", "io", "asyncio", "webbrowser", "zipfile", "importlib"}
# ``config`` is pure but for ``load_config`` (checked below); ``__init__`` holds the version.
PURE_DEPENDENCIES = PURE | {"config", "__init__", "plaud"}


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (type-only imports)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if not (isinstance(child, ast.If) and _is_type_checking(child)):
                stack.append(child)
    return out


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """Absolute names (relative to the package) of what a ``from … import`` brings in."""
    package = module.split(".")[:-1] if module != "__init__" else []
    if (PACKAGE / Path(*module.split(".")) / "__init__.py").is_file():  # an __init__: itself
        package = module.split(".")
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    prefix = [*base, *(node.module.split(".") if node.module else [])]
    names = []
    for alias in node.names:
        candidate = ".".join([*prefix, alias.name])
        names.append(candidate if candidate in MODULES else ".".join(prefix) or "__init__")
    return names


def package_imports(module: str, type_only_too: bool = False) -> set[str]:
    """Package modules imported at run time by ``module`` (and in ``TYPE_CHECKING`` blocks
    when ``type_only_too``)."""
    found: set[str] = set()
    tree = MODULES[module]
    for node in ast.walk(tree) if type_only_too else _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                found.update(_resolve(module, node))
            elif (node.module or "").startswith("plaud_index"):
                found.add(node.module.removeprefix("plaud_index.") or "__init__")  # type: ignore[union-attr]
    return found


def external_imports(module: str) -> set[str]:
    """Every prefix of every outside module imported (``urllib.parse`` → urllib, urllib.parse)."""
    found: set[str] = set()
    for node in _runtime_nodes(MODULES[module]):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        for name in names:
            parts = name.split(".")
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return found


def calls(tree: ast.AST, name: str) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


def test_every_listed_module_exists() -> None:
    assert set(MODULES) >= PURE | {"server.tools", "server.app", "cli", "sync.indexer", "plaud",
                                   "index.store"}


def test_every_import_resolves_to_a_module_of_the_package() -> None:
    unknown = {m: sorted(i for i in package_imports(m) if i not in MODULES) for m in MODULES}
    assert not {m: i for m, i in unknown.items() if i}


@pytest.mark.parametrize("module", ["errors", "models", "results", "reports"])
def test_errors_and_models_import_nothing_from_the_package(module: str) -> None:
    assert not package_imports(module)


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_do_no_io(module: str) -> None:
    tree = MODULES[module]
    assert not external_imports(module) & IO_MODULES
    assert not calls(tree, "open") and not calls(tree, "now") and not calls(tree, "time")
    assert package_imports(module) <= PURE_DEPENDENCIES, "a pure module imports an I/O one"


def test_config_touches_the_filesystem_only_in_load_config() -> None:
    tree = MODULES["config"]
    loader = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == "load_config")
    reads = ("read_text", "open", "read_state_file")
    everywhere = {line for name in reads for line in calls(tree, name)}
    inside = {line for name in reads
              for line in calls(ast.Module(body=[loader], type_ignores=[]), name)}
    assert everywhere == inside and inside


def test_only_the_server_imports_mcp() -> None:
    assert all(m.startswith("server.") for m in MODULES
               if {"mcp", "mcp_types"} & external_imports(m))


def test_outside_plaud_only_its_interface_is_used() -> None:
    offenders = {m: sorted(i for i in package_imports(m) if i.startswith("plaud."))
                 for m in MODULES if not m.startswith("plaud")}
    assert not {m: i for m, i in offenders.items() if i}


def test_plaud_never_imports_the_index_or_the_stages_after_it() -> None:
    later = ("index", "sync", "search", "answers", "server", "cli", "chunker", "embedding")
    for module in (m for m in MODULES if m == "plaud" or m.startswith("plaud.")):
        assert not {i for i in package_imports(module) if i.split(".")[0] in later}, module


def test_the_index_never_imports_plaud_or_what_uses_the_index() -> None:
    later = ("plaud", "sync", "search", "answers", "server", "cli")
    for module in (m for m in MODULES if m == "index" or m.startswith("index.")):
        assert not {i for i in package_imports(module) if i.split(".")[0] in later}, module


def test_the_mirror_writes_what_it_is_given_and_reaches_for_nothing() -> None:
    """It never fetches (no second request to Plaud) nor reads the index: the cycle hands
    it each fetched recording."""
    later = ("plaud", "index", "sync", "search", "answers", "server", "cli", "sources")
    for module in (m for m in MODULES if m == "mirror" or m.startswith("mirror.")):
        assert not {i for i in package_imports(module) if i.split(".")[0] in later}, module


def test_the_server_reaches_plaud_only_to_sign_in_and_the_index_only_through_answers() -> None:
    for module in (m for m in MODULES if m.startswith("server")):
        assert not {i for i in package_imports(module) if i.split(".")[0] == "index"}, module
        if module != "server.account":  # the sign-in from a tool: the link, its return
            assert "plaud" not in package_imports(module), module


def test_the_api_client_never_imports_auth() -> None:
    assert "plaud.auth" not in package_imports("plaud.api")


def test_no_print_outside_the_cli() -> None:
    offenders = {name: lines for name, tree in MODULES.items()
                 if name.split(".")[0] != "cli"
                 and (lines := calls(tree, "print"))}
    assert not offenders, "stdout is the MCP protocol stream; log to stderr"


def test_data_flows_one_way() -> None:
    # search ranks what the store gives it; it never reaches back into I/O modules.
    for module in (m for m in MODULES if m.startswith("search")):
        assert not package_imports(module) & {"index.store", "index.writer", "sync.indexer",
                                              "answers", "embedding.embedder", "server.tools"}
    assert not package_imports("plaud.documents") & {"chunker", "index.store", "search.rank"}
    assert not package_imports("chunker") & {"index.store", "search.rank", "embedding.embedder"}


def top(module: str) -> str:
    return module.split(".")[0]


# Which top-level place may import which: the pipeline (sources → chunker → embedding →
# index → search) and the core below it, the two processes (sync, server) and the wiring
# and edges above. Type-only imports count: a loop through hints is still a loop.
CORE = {"errors", "models", "results", "reports", "clock", "zones", "fsio", "redact", "cleaning",
        "intervals", "home", "__init__"}
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(), "models": set(), "results": set(), "reports": set(), "redact": set(),
    "cleaning": set(), "home": set(), "intervals": set(), "__init__": set(),
    "clock": {"results"}, "zones": {"clock"}, "fsio": {"errors"},
    "plaud": CORE, "folders": CORE, "chunker": CORE,
    "embedding": CORE | {"chunker", "index"},
    "config": CORE | {"plaud", "embedding"},  # the settings of both live in Config
    "sources": CORE | {"config", "plaud", "folders"},
    "index": CORE,
    "search": CORE | {"index"},
    # the person's own names for speakers: kept beside the index, checked against it
    "people": CORE | {"config", "index"},
    "mirror": CORE | {"config"},
    "render": CORE,
    "sync": CORE | {"config", "sources", "plaud", "folders", "chunker", "embedding", "index",
                    "mirror", "people"},
    "answers": CORE | {"config", "sources", "embedding", "index", "search", "sync", "people"},
    "setup": CORE | {"config", "sources", "plaud", "embedding", "index", "mirror", "sync",
                     "answers", "render"},
    "server": CORE | {"config", "search", "sync", "answers", "render", "plaud"},  # never setup: its
    # commands print, and stdout is the protocol
    "cli": {top(m) for m in MODULES} - {"__main__", "cli"},
    "__main__": {"cli", "server"},
}


def wrong_way(modules: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Each module's imports of another top-level place that its place may not import."""
    found = {}
    saved = dict(MODULES)
    MODULES.update(modules)
    try:
        for module in modules:
            bad = sorted(i for i in package_imports(module, type_only_too=True)
                         if top(i) != top(module) and top(i) not in MAY_IMPORT[top(module)])
            if bad:
                found[module] = bad
    finally:
        MODULES.clear()
        MODULES.update(saved)
    return found


def test_every_top_level_place_has_its_rule() -> None:
    assert {top(m) for m in MODULES} == set(MAY_IMPORT)


def test_no_place_imports_one_its_rule_does_not_allow() -> None:
    assert not wrong_way(dict(MODULES))


def test_a_wrong_way_import_between_packages_is_caught() -> None:
    """The rules can fail: the index reaching for the indexer, and plaud for the config
    (the loop this layout removed), even as a type-only import."""
    index_to_sync = ast.parse("from ..sync.state import SyncState\n")
    plaud_to_config = ast.parse("from typing import TYPE_CHECKING\n"
                                "if TYPE_CHECKING:\n    from ..config import Config\n")
    assert wrong_way({"index.bad": index_to_sync, "plaud.bad": plaud_to_config}) == {
        "index.bad": ["sync.state"], "plaud.bad": ["config"]}


def test_the_places_import_each_other_in_one_direction_only() -> None:
    """No loop between top-level places, type hints included (a topological order exists)."""
    edges = {top(m): set() for m in MODULES}
    for module in MODULES:
        edges[top(module)] |= {top(i) for i in package_imports(module, type_only_too=True)
                               if top(i) != top(module)}
    done: set[str] = set()
    while len(done) < len(edges):
        ready = {p for p, deps in edges.items() if p not in done and deps <= done}
        assert ready, f"an import loop among {sorted(set(edges) - done)}"
        done |= ready


# What starts a sync, takes the indexer lock or writes the index: the reading side asks the
# keeper it is handed (``sync.keeper``) and imports none of it (issue 52). (Reporting damage
# it met is a reader's: ``index.trust.distrust`` drops a verification record so the next
# reader checks in full, ``sync.state.note_read_damage`` tells status; neither writes the
# index.)
SYNCS_LOCKS_OR_WRITES = {"sync.cycles", "sync.daemon", "sync.detached", "sync.lock",
                         "sync.keeper", "sync.indexer", "sync.work", "sync.embedding",
                         "index.writer", "index.merge", "index.garbage", "sources"}


def reads_only(modules: dict[str, ast.Module]) -> dict[str, list[str]]:
    saved = dict(MODULES)
    MODULES.update(modules)
    try:
        return {m: sorted(package_imports(m, type_only_too=True) & SYNCS_LOCKS_OR_WRITES)
                for m in modules if top(m) == "answers"
                and package_imports(m, type_only_too=True) & SYNCS_LOCKS_OR_WRITES}
    finally:
        MODULES.clear()
        MODULES.update(saved)


def test_the_reading_side_only_reads() -> None:
    assert not reads_only({m: t for m, t in MODULES.items() if top(m) == "answers"})


def test_a_reading_module_reaching_for_the_lock_or_the_writer_is_caught() -> None:
    bad = ast.parse("from ..sync.lock import IndexerLock\nfrom ..index.writer import "
                    "open_writer\n")
    assert reads_only({"answers.bad": bad}) == {"answers.bad": ["index.writer", "sync.lock"]}


def joins_onto_our_home(tree: ast.Module) -> list[int]:
    """Lines that name a file of our home by hand: ``home / …`` or ``….home / …``."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and (
                isinstance(node.left, ast.Name) and node.left.id == "home" or
                isinstance(node.left, ast.Attribute) and node.left.attr == "home")]


def test_one_home_names_every_file_of_it() -> None:
    """Issue 52: about two dozen ``home / "…"`` sites named the home's files by hand, and
    one re-typed "http-server.json". Now ``home.Home`` is the one list (the user's own
    home, where client configs and launch agents live, is another folder)."""
    users_home = {"home", "setup.clients", "setup.agent"}
    by_hand = {name: lines for name, tree in MODULES.items()
               if name not in users_home and (lines := joins_onto_our_home(tree))}
    assert by_hand == {}
    assert joins_onto_our_home(ast.parse("x = config.home / 'tokens.json'")) == [1]
