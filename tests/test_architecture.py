"""The import rules of DESIGN.md, checked by walking every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "plaud_index"
MODULES = {p.stem: ast.parse(p.read_text()) for p in PACKAGE.glob("*.py")}
PURE = {"errors", "models", "documents", "chunker", "search", "keywords", "snapshot", "redact"}
IO_MODULES = {"os", "socket", "urllib", "http", "subprocess", "fcntl", "time", "sqlite3",
              "shutil", "tempfile", "threading", "pathlib", "io"}


def imports(tree: ast.Module) -> set[str]:
    """Top-level names of everything a module imports; package-relative as ``.name``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = (node.module or "").split(".")[0]
                found.update(f".{base or alias.name}" for alias in node.names)
            else:
                found.add((node.module or "").split(".")[0])
    return found


def calls(tree: ast.Module, name: str) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


def test_every_listed_module_exists() -> None:
    assert set(MODULES) >= PURE


@pytest.mark.parametrize("module", ["errors", "models"])
def test_errors_and_models_import_nothing_from_the_package(module: str) -> None:
    assert not {i for i in imports(MODULES[module]) if i.startswith(".")}


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_do_no_io(module: str) -> None:
    tree = MODULES[module]
    assert not imports(tree) & IO_MODULES
    assert not calls(tree, "open") and not calls(tree, "now")


def test_config_touches_the_filesystem_only_in_load_config() -> None:
    tree = MODULES["config"]
    loader = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == "load_config")
    everywhere = set(calls(tree, "read_text")) | set(calls(tree, "open"))
    inside = set(calls(ast.Module(body=[loader], type_ignores=[]), "read_text"))
    assert everywhere == inside and inside


def test_only_the_server_imports_mcp() -> None:
    users = {name for name, tree in MODULES.items() if "mcp" in imports(tree)}
    assert users <= {"server"}


def test_plaud_api_never_imports_auth_and_server_never_imports_the_client() -> None:
    if "plaud_api" in MODULES:
        assert ".auth" not in imports(MODULES["plaud_api"])
    if "server" in MODULES:
        assert not imports(MODULES["server"]) & {".plaud_api", ".auth"}


def test_no_print_outside_the_cli() -> None:
    offenders = {name: lines for name, tree in MODULES.items()
                 if name != "cli" and (lines := calls(tree, "print"))}
    assert not offenders, "stdout is the MCP protocol stream; log to stderr"


def test_data_flows_one_way() -> None:
    # search ranks what the store gives it; it never reaches back into I/O modules.
    assert not imports(MODULES["search"]) & {".store", ".writer", ".indexer", ".service",
                                             ".embedder", ".server"}
    assert not imports(MODULES["documents"]) & {".chunker", ".store", ".search"}
    assert not imports(MODULES["chunker"]) & {".store", ".search", ".embedder"}
