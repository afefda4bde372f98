"""Release metadata agrees with itself: one version, server.json for the MCP registry,
the CHANGELOG, the README's registry marker, the workflow's steps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import tomllib

from plaud_index import __version__
from plaud_index.config import ENV_VARS, SECRET_ENV_VARS

REPO = Path(__file__).resolve().parent.parent
SERVER = json.loads((REPO / "server.json").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_server_json_has_what_the_registry_requires() -> None:
    assert SERVER["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]",
                        SERVER["name"])
    assert 0 < len(SERVER["description"]) <= 100  # the registry's limit
    assert SERVER["version"] == __version__
    (package,) = SERVER["packages"]
    assert package["registryType"] == "pypi" and package["registryBaseUrl"] == "https://pypi.org"
    assert package["identifier"] == PYPROJECT["project"]["name"]
    assert package["version"] == __version__ and package["transport"] == {"type": "stdio"}


def test_server_json_documents_real_settings_and_marks_secrets() -> None:
    variables = SERVER["packages"][0]["environmentVariables"]
    for var in variables:
        assert var["name"] in ENV_VARS and var["description"]
        assert var["isSecret"] is (var["name"] in SECRET_ENV_VARS)
        assert var["isRequired"] is False  # the server runs with none of them set


def test_the_readme_carries_the_pypi_ownership_marker() -> None:
    assert f"<!-- mcp-name: {SERVER['name']} -->" in (REPO / "README.md").read_text()


def test_one_version_everywhere() -> None:
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "plaud_index.__version__"}
    assert f"## {__version__}" in (REPO / "CHANGELOG.md").read_text()


def test_pyproject_uses_an_spdx_licence_and_ships_the_licence_files() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["requires-python"] == ">=3.10"
    for name in project["license-files"]:
        assert (REPO / name).is_file()
    assert not any("License ::" in c for c in project["classifiers"])  # PEP 639: not both


def test_the_release_workflow_tests_builds_checks_and_publishes_with_oidc() -> None:
    flow = (REPO / ".github" / "workflows" / "release.yml").read_text()
    assert "release:" in flow and "types: [published]" in flow
    assert "id-token: write" in flow and "pypa/gh-action-pypi-publish" in flow
    assert "password" not in flow and "PYPI_TOKEN" not in flow  # trusted publishing only
    for step in ("bash .ci/run", "bash .ci/build", "bash .ci/check-wheel",
                 "bash .ci/build-mcpb && bash .ci/check-mcpb", "gh release upload"):
        assert step in flow


def test_the_wheel_lists_every_package_of_the_tree() -> None:
    """A subpackage missing from ``packages`` installs nothing and fails only in a wheel."""
    tree = {".".join(p.parent.relative_to(REPO).parts)
            for p in (REPO / "plaud_index").rglob("__init__.py")}
    data = {"plaud_index.embedding.model_data"}  # the tokenizer's files, no code
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) - data == tree


def test_the_extension_manifest_stays_in_step_with_the_server_and_server_json() -> None:
    """The .mcpb manifest is made from the code (.ci/mcpb.py): its version, its tools and
    prompts are the server's, and each setting it offers is a variable server.json
    documents too."""
    import sys

    sys.path.insert(0, str(REPO / ".ci"))
    from mcpb import ENV, manifest

    from plaud_index.server.descriptions import TOOL_SUMMARIES
    from plaud_index.server.failures import REQUIRED
    from plaud_index.server.prompts import PROMPT_SUMMARIES

    data = manifest()
    assert data["version"] == SERVER["version"] == __version__
    assert data["server"]["type"] == "uv" and "${__dirname}" in data["server"]["mcp_config"][
        "args"]
    assert {t["name"] for t in data["tools"]} == set(TOOL_SUMMARIES) >= set(REQUIRED)
    assert {p["name"] for p in data["prompts"]} == set(PROMPT_SUMMARIES)
    documented = {v["name"] for v in SERVER["packages"][0]["environmentVariables"]}
    assert set(ENV) <= documented and set(ENV) <= set(ENV_VARS)
    assert set(data["user_config"]) == set(ENV.values())


def test_the_extensions_prompt_texts_are_the_ones_the_server_serves() -> None:
    """Issue 52: the manifest's prompt texts differed from the served prompts. Filled in,
    the manifest's text is the served one (the week's recap names the week where the
    server, which knows the day, writes its Monday and Sunday)."""
    from plaud_index.server.prompts import PROMPT_SUMMARIES, action_items, meeting_prep

    def filled(name: str, **values: str) -> str:
        text = PROMPT_SUMMARIES[name][2]
        for key, value in values.items():
            text = text.replace(f"${{arguments.{key}}}", value)
        return text

    assert filled("action_items_since", since="2026-11-01", owner="Ann") == \
        action_items("2026-11-01", "Ann")
    assert filled("prepare_meeting", person="Dana", topic="Q3 budget") == \
        meeting_prep("Dana", "Q3 budget")
    assert "plaud_list(" in PROMPT_SUMMARIES["week_recap"][2]
