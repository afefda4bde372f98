"""Our entry in an MCP client's config file: planned, shown, written and removed, and
nothing else in the file touched.

A plan reads the file (through ``user_files``: links written through, FIFOs and
read-only files refused), merges our new entry over the one it may hold (the user's own
keys, ``env`` variables and options kept: ``clients.merged_entry``) and edits the text
in place (``jsonc`` or ``toml_edit``: one member or table replaced or added, every other
byte as it was, checked by reading the result back). What cannot be done that way is
refused with the entry to paste by hand (``EntryNotWritten.snippet``). Running it twice
changes nothing the second time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import jsonc, jsonc_edit, toml_edit
from .clients import SERVER, Client, client, merged_entry
from .launch import shell_word
from .user_files import UserFile, read_user_file, write_user_file


class EntryNotWritten(ConfigError):
    """Our entry cannot be written into the file as it is; ``snippet`` is what to paste."""

    def __init__(self, message: str, snippet: str) -> None:
        super().__init__(message)
        self.snippet = snippet


@dataclass(frozen=True)
class Change:
    client: str
    path: Path  # the file the client reads
    action: str  # "add" | "update" | "unchanged" | "remove" | "absent"
    entry: dict[str, Any] | None  # our entry as it will be (None: removed)
    file: UserFile  # the file as it was read
    text: str  # its new text

    @property
    def changed(self) -> bool:
        return self.text != self.file.text


def snippet(name: str, entry: dict[str, Any]) -> str:
    """What to paste (for Claude Code, what to run) to add ``entry`` by hand."""
    spec = client(name)
    if spec.fmt == "toml":
        return toml_edit.render_table((*spec.container, SERVER), entry)
    if name == "claude-code" and "command" in entry:
        argv = " ".join(shell_word(a) for a in (entry["command"], *entry.get("args", ())))
        settings = "".join(f" -e {shell_word(f'{k}={v}')}"
                           for k, v in entry.get("env", {}).items())
        return f"claude mcp add --scope user{settings} {SERVER} -- {argv}"
    nested: Any = {SERVER: entry}
    for key in reversed(spec.container):
        nested = {key: nested}
    return json.dumps(nested, indent=2, ensure_ascii=False)


def _python(value: Any) -> Any:
    """A JSONC value as json.loads would give it (numbers were kept as their text)."""
    if isinstance(value, jsonc.Number):
        return json.loads(value)
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value


def current_entry(spec: Client, text: str) -> Any:
    """Our entry as the file holds it now (``None``: it has none)."""
    if spec.fmt == "toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10: the user's extra keys cannot be read
            return None
        holder: Any = tomllib.loads(text)
        for key in (*spec.container, SERVER):
            holder = holder.get(key) if isinstance(holder, dict) else None
        return holder
    root = jsonc.parse(text, comments=spec.fmt == "jsonc")
    return _python(jsonc.plain(jsonc.member(root, (*spec.container, SERVER))))


def _edit(spec: Client, text: str, entry: dict[str, Any] | None) -> str:
    if spec.fmt == "toml":
        path = (*spec.container, SERVER)
        return toml_edit.set_table(text, path, entry) if entry is not None else \
            toml_edit.remove_table(text, path)
    comments = spec.fmt == "jsonc"
    if entry is None:
        return jsonc_edit.remove_member(text, spec.container, SERVER, comments)
    return jsonc_edit.set_member(text, spec.container, SERVER, entry, comments)


def plan(name: str, path: Path, entry: dict[str, Any] | None,
         managed: frozenset[str] = frozenset()) -> Change:
    """What writing ``entry`` (``None``: removing ours) would do to ``path``; nothing is
    written. ``EntryNotWritten`` when the file cannot be edited byte for byte."""
    spec = client(name)
    file = read_user_file(path)
    try:
        existing = current_entry(spec, file.text) if file.text.strip() else None
        ours = merged_entry(entry, existing, managed) if entry is not None else None
        text = _edit(spec, file.text, ours)
    except (ValueError, RecursionError) as exc:  # JSONC/TOML reading or the edit's check
        what = "removed from" if entry is None else "added to"
        raise EntryNotWritten(
            f"Our entry cannot be {what} {path} without changing more of it ({exc}); "
            f"nothing was changed. {'Remove it by hand' if entry is None else 'Paste it'}"
            " yourself:", snippet(name, entry if entry is not None else {})) from exc
    if entry is None:
        action = "remove" if existing is not None else "absent"
    else:
        action = "unchanged" if text == file.text else "update" if existing is not None \
            else "add"
    return Change(name, path, action, ours, file, text)


def apply(change: Change, clock: Callable[[], float] = time.time) -> Path | None:
    """Write the change; returns the backup of the old file (``None``: a new file, or
    nothing to write)."""
    if not change.changed:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(clock()))
    return write_user_file(change.file, change.text, stamp, keep_old=change.action != "remove")


def entry_env(name: str, path: Path) -> dict[str, str] | None:
    """The ``env`` of our entry in a client's config file; ``None`` when the file has no
    entry of ours (or cannot be read)."""
    try:
        server = current_entry(client(name), read_user_file(path).text)
    except (ConfigError, ValueError, RecursionError):
        return None
    if not isinstance(server, dict):
        return None
    env = server.get("env") or {}
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def describe(change: Change) -> str:
    """One line a person reads: what happened (or would happen) to which file."""
    where = str(change.path) if change.file.target == change.path else \
        f"{change.path} (a link to {change.file.target})"
    words = {"add": "adds our entry to", "update": "updates our entry in",
             "unchanged": "already has our entry:", "remove": "removes our entry from",
             "absent": "has no entry of ours:"}
    return f"{change.client}: {words[change.action]} {where}"


def entry_lines(entry: Mapping[str, Any]) -> str:
    """Our entry as JSON for a listing, with any token hidden."""
    shown = dict(entry)
    if isinstance(shown.get("headers"), dict):
        shown["headers"] = {k: "Bearer <token>" if k.lower() == "authorization" else v
                            for k, v in shown["headers"].items()}
    return json.dumps(shown, ensure_ascii=False)
