"""The Claude Desktop Extension (``.mcpb``) staged from the built wheel: its manifest, its
pyproject.toml and its entry point, laid out for the official ``mcpb`` CLI to validate and
pack (``.ci/build-mcpb``), and started the way the manifest tells a host to
(``.ci/check-mcpb``).

Why the ``uv`` server type and not a bundle per platform: the search needs onnxruntime,
numpy and tokenizers, compiled for each OS and processor. With ``uv`` the bundle is small
and the same everywhere (the wheel, a pyproject.toml and a uv.lock that pins every
dependency for every platform); the host's uv installs the right binary wheels for the
Mac (Apple silicon or Intel), Windows or Linux it runs on. Platform bundles would be four
builds of 150 MB each, made on machines of each kind, which this project cannot test.

    python .ci/mcpb.py stage DIST_WHEEL STAGE_DIR
    python .ci/mcpb.py command STAGE_DIR     # the command, args and env a host runs (JSON)
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plaud_index import __version__  # noqa: E402
from plaud_index.server.descriptions import TOOL_SUMMARIES  # noqa: E402
from plaud_index.server.prompts import PROMPT_SUMMARIES  # noqa: E402

# The settings people change, each a PLAUD_* variable of the server (README "Configuration")
USER_CONFIG: dict[str, dict[str, Any]] = {
    "timezone": {"type": "string", "title": "Time zone", "required": False, "default": "",
                 "description": "Your time zone as an IANA name, e.g. Europe/Berlin. Empty: "
                 "the system's."},
    "interval": {"type": "string", "title": "Sync interval", "required": False,
                 "default": "5m", "description": "How often the index syncs with Plaud while "
                 "Claude runs: 30s to 6h, e.g. 5m or 1h."},
    "folders": {"type": "directory", "title": "Folder of meeting exports", "required": False,
                "description": "Optional: a folder of transcripts and notes (.srt, .vtt, .txt, "
                ".md, .docx) to search beside Plaud."},
    "mirror": {"type": "directory", "title": "Markdown mirror folder", "required": False,
               "description": "Optional: a folder that gets one Markdown file per Plaud "
               "recording, kept in sync."},
    "region": {"type": "string", "title": "Plaud region", "required": False, "default": "us",
               "description": "Where your Plaud account lives: us (most accounts) or eu."},
}
ENV = {"PLAUD_TIMEZONE": "timezone", "PLAUD_INDEX_INTERVAL": "interval",
       "PLAUD_INDEX_FOLDERS": "folders", "PLAUD_INDEX_MIRROR": "mirror",
       "PLAUD_REGION": "region"}
ENTRY = "server/main.py"


def manifest() -> dict[str, Any]:
    return {
        "$schema": "https://raw.githubusercontent.com/modelcontextprotocol/mcpb/main/schemas/"
                   "mcpb-manifest-v0.4.schema.json",
        "manifest_version": "0.4",
        "name": "plaud-index-mcp",
        "display_name": "Plaud Index",
        "version": __version__,
        "description": "Private, local semantic search over your Plaud recordings: "
                       "transcripts and AI notes.",
        "long_description": (
            "Ask what was decided about the Q3 budget and get the right recording and the "
            "right moment in it. Your Plaud recordings are indexed and searched on this "
            "machine; nothing leaves it but calls to Plaud. Sign in to Plaud from the first "
            "answer's link: no terminal needed."),
        "author": {"name": "The plaud-index-mcp authors",
                   "url": "https://github.com/plaud-index/plaud-index-mcp"},
        "repository": {"type": "git", "url": "https://github.com/plaud-index/plaud-index-mcp"},
        "homepage": "https://github.com/plaud-index/plaud-index-mcp",
        "license": "MIT",
        "icon": "icon.png",
        "keywords": ["plaud", "meetings", "transcripts", "search", "notes"],
        "server": {
            "type": "uv",
            "entry_point": ENTRY,
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--frozen", "--directory", "${__dirname}", ENTRY],
                "env": {var: f"${{user_config.{key}}}" for var, key in ENV.items()},
            },
        },
        "tools": [{"name": n, "description": d} for n, d in TOOL_SUMMARIES.items()],
        "prompts": [{"name": n, "description": d, "arguments": args, "text": text}
                    for n, (d, args, text) in PROMPT_SUMMARIES.items()],
        "compatibility": {"platforms": ["darwin", "win32", "linux"],
                          "runtimes": {"python": ">=3.10"}},
        "user_config": USER_CONFIG,
    }


def pyproject(wheel: str) -> str:
    return (
        "[project]\n"
        'name = "plaud-index-mcp-extension"\n'
        f'version = "{__version__}"\n'
        'description = "The Claude Desktop Extension of plaud-index-mcp"\n'
        'requires-python = ">=3.10"\n'
        f'dependencies = ["plaud-index-mcp[offline]=={__version__}"]\n\n'
        "[tool.uv]\npackage = false\n\n"
        "[tool.uv.sources]\n"
        f'plaud-index-mcp = {{ path = "wheels/{wheel}" }}\n')


def stage(wheel: Path, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    (out / "server").mkdir(parents=True)
    (out / "wheels").mkdir()
    shutil.copy2(wheel, out / "wheels" / wheel.name)
    shutil.copy2(ROOT / ".ci" / "mcpb" / ENTRY, out / ENTRY)
    shutil.copy2(ROOT / ".ci" / "mcpb" / "icon.png", out / "icon.png")  # 512 px, as hosts ask
    (out / "manifest.json").write_text(json.dumps(manifest(), indent=2) + "\n")
    (out / "pyproject.toml").write_text(pyproject(wheel.name))
    (out / ".mcpbignore").write_text(".venv/\n__pycache__/\n*.pyc\n")


def host_command(folder: Path, settings: dict[str, str] | None = None
                 ) -> tuple[str, list[str], dict[str, str]]:
    """What a host runs for the unpacked bundle in ``folder``: ``mcp_config`` with
    ``${__dirname}`` and ``${user_config.*}`` replaced (the user's ``settings``, else each
    field's default; a field without either is left out, as a host leaves it empty)."""
    data = json.loads((folder / "manifest.json").read_text())
    config = data["server"]["mcp_config"]
    given = {k: str(v.get("default", "")) for k, v in data.get("user_config", {}).items()}
    given.update(settings or {})

    def fill(text: str) -> str:
        text = text.replace("${__dirname}", str(folder))
        return re.sub(r"\$\{user_config\.(\w+)\}", lambda m: given.get(m.group(1), ""), text)

    env = {k: fill(v) for k, v in config.get("env", {}).items()}
    return config["command"], [fill(a) for a in config.get("args", [])], \
        {k: v for k, v in env.items() if v}


if __name__ == "__main__":
    if sys.argv[1] == "stage":
        stage(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "command":
        print(json.dumps(host_command(Path(sys.argv[2]))))
    else:
        sys.exit(f"unknown command {sys.argv[1]!r}")
