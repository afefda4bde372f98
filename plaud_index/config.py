"""Paths, settings and environment precedence → a frozen ``Config`` (the index interval is
parsed by ``intervals``).

Everything here is pure except ``load_config``, which reads the one file
``<home>/config.json``. Nothing in that file can move the home directory:
``PLAUD_INDEX_HOME`` (for tests and unusual setups) is the only way.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .clock import UTC, UserZone
from .embedding.specs import DEFAULT_MODEL, POOLINGS
from .home import Home
from .intervals import DEFAULT_INTERVAL_MS, format_interval, resolve_interval
from .plaud import (
    DEFAULT_WEB_BASE,
    DETAIL_INTERVAL_S,
    LOGIN_TIMEOUT_S,
    PlaudSettings,
    plaud_settings,
)
from .redact import remember
from .zones import resolve_zone

log = logging.getLogger(__name__)

# Every environment variable this program reads (the agent passes the set ones on to the
# daemon; the tests clear them all). Secrets are marked so nothing ever copies them.
ENV_VARS = (
    "PLAUD_INDEX_HOME", "INDEX_INTERVAL_MS", "PLAUD_INDEX_INTERVAL", "PLAUD_EMBEDDER",
    "PLAUD_EMBED_MODEL", "PLAUD_EMBED_MODEL_PATH", "PLAUD_EMBED_THREADS", "PLAUD_CLIENT",
    "PLAUD_MOCK_CORPUS", "PLAUD_API_TOKEN", "PLAUD_API_BASE", "PLAUD_MCP_API_BASE",
    "PLAUD_AUTH_URL", "PLAUD_TOKEN_URL", "PLAUD_REFRESH_URL", "PLAUD_CALLBACK_URL",
    "PLAUD_MCP_CLIENT_ID", "PLAUD_DETAIL_INTERVAL_MS", "PLAUD_EMBED_POOLING",
    "PLAUD_EMBED_QUERY_PREFIX", "PLAUD_EMBED_PASSAGE_PREFIX", "PLAUD_EMBED_MAX_TOKENS",
    "PLAUD_LOGIN_TIMEOUT_S", "PLAUD_TIMEZONE", "PLAUD_INDEX_FOLDERS", "PLAUD_INDEX_MIRROR",
    "PLAUD_REGION", "PLAUD_INDEX_NO_FORWARD",
)
SECRET_ENV_VARS = frozenset({"PLAUD_API_TOKEN"})

HTTP_PORT = 8788  # serve --http, and the client entries that point at it

@dataclass(frozen=True)
class Config:
    home: Path
    interval_ms: int = DEFAULT_INTERVAL_MS
    interval_source: str = "default"
    embedder: str = "onnx"  # "onnx" | "mock"
    embed_model: str = DEFAULT_MODEL
    embed_model_path: Path | None = None
    embed_threads: int | None = None
    # Overrides of the model registry (model_specs); None = the registry's value.
    embed_pooling: str | None = None
    embed_query_prefix: str | None = None
    embed_passage_prefix: str | None = None
    embed_max_tokens: int | None = None
    client: str = "plaud"  # "plaud" | "mock"
    mock_corpus: Path | None = None
    plaud: PlaudSettings = PlaudSettings()
    web_token: str | None = field(default=None, repr=False)  # PLAUD_API_TOKEN: never shown
    web_base: str = DEFAULT_WEB_BASE
    detail_interval_s: float = DETAIL_INTERVAL_S
    legacy_tokens: Path | None = None  # ~/.plaud/tokens-mcp.json of @plaud-ai/mcp
    login_timeout_s: float = LOGIN_TIMEOUT_S  # how long `login` waits for the browser
    zone: UserZone = UTC  # the user's time zone: displayed times, local days in filters
    folders: tuple[Path, ...] = ()  # local folders of meeting files, indexed beside Plaud
    mirror: Path | None = None  # a folder that gets one Markdown file per Plaud recording

    @property
    def index_dir(self) -> Path:
        return Home(self.home).index

    @property
    def models_dir(self) -> Path:
        return Home(self.home).models

    @property
    def lock_path(self) -> Path:
        return Home(self.home).indexer_lock

    @property
    def config_path(self) -> Path:
        return Home(self.home).config


def parse_config_file(text: str | None, label: str) -> dict[str, object]:
    """The config file's JSON object; malformed content warns and yields ``{}``."""
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        log.warning("Ignoring malformed JSON in %s (%s); using defaults", label, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("Ignoring %s: expected a JSON object, got %s", label, type(data).__name__)
        return {}
    return data


def default_home(env: Mapping[str, str]) -> Path:
    override = env.get("PLAUD_INDEX_HOME")
    if override:
        return Path(override).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".plaud-index-mcp"


def _secret(value: str | None) -> str | None:
    """A secret from the environment, registered for redaction the moment it is read."""
    remember(value)
    return value or None


_PLACEHOLDER = re.compile(r"^\s*\$\{[^}]*\}\s*$")


def without_placeholders(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without settings a host left as its template (``${user_config.folders}``
    for a field the person left empty in an extension's settings): unset, not a path."""
    kept = {}
    for key, value in env.items():
        if key in ENV_VARS and _PLACEHOLDER.match(value):
            log.info("%s is an unfilled placeholder (%s): left unset", key, value.strip())
            continue
        kept[key] = value
    return kept


def build_config(env: Mapping[str, str], config_text: str | None) -> Config:
    env = without_placeholders(env)
    home = default_home(env)
    label = str(Home(home).config)
    file_values = parse_config_file(config_text, label)
    interval_ms, source = resolve_interval(env, file_values, label)
    zone_setting = env.get("PLAUD_TIMEZONE") or file_values.get("timezone")
    threads = env.get("PLAUD_EMBED_THREADS", "").strip()
    return Config(
        home=home,
        interval_ms=interval_ms,
        interval_source=source,
        embedder="mock" if env.get("PLAUD_EMBEDDER", "").lower() == "mock" else "onnx",
        embed_model=env.get("PLAUD_EMBED_MODEL") or DEFAULT_MODEL,
        embed_model_path=Path(env["PLAUD_EMBED_MODEL_PATH"]).expanduser()
        if env.get("PLAUD_EMBED_MODEL_PATH") else None,
        embed_threads=int(threads) if threads.isdigit() and int(threads) > 0 else None,
        embed_pooling=_pooling(env.get("PLAUD_EMBED_POOLING")),
        embed_query_prefix=env.get("PLAUD_EMBED_QUERY_PREFIX"),
        embed_passage_prefix=env.get("PLAUD_EMBED_PASSAGE_PREFIX"),
        embed_max_tokens=_positive(env.get("PLAUD_EMBED_MAX_TOKENS"), "PLAUD_EMBED_MAX_TOKENS"),
        client="mock" if env.get("PLAUD_CLIENT", "").lower() == "mock" else "plaud",
        mock_corpus=Path(env["PLAUD_MOCK_CORPUS"]).expanduser()
        if env.get("PLAUD_MOCK_CORPUS") else None,
        plaud=plaud_settings(env),
        web_token=_secret(env.get("PLAUD_API_TOKEN")),
        web_base=env.get("PLAUD_API_BASE") or DEFAULT_WEB_BASE,
        detail_interval_s=_detail_interval(env.get("PLAUD_DETAIL_INTERVAL_MS", "")),
        legacy_tokens=Path(env.get("HOME") or Path.home()) / ".plaud" / "tokens-mcp.json",
        login_timeout_s=float(_positive(env.get("PLAUD_LOGIN_TIMEOUT_S"),
                                        "PLAUD_LOGIN_TIMEOUT_S") or LOGIN_TIMEOUT_S),
        zone=resolve_zone(zone_setting if isinstance(zone_setting, str) else None, env,
                          "PLAUD_TIMEZONE" if env.get("PLAUD_TIMEZONE") else label),
        folders=_folders(env.get("PLAUD_INDEX_FOLDERS"), file_values.get("folders"), label,
                         Path(env.get("HOME") or Path.home())),
        mirror=_mirror(env.get("PLAUD_INDEX_MIRROR"), file_values.get("mirror"), label,
                       Path(env.get("HOME") or Path.home())),
    )


def _folders(raw_env: str | None, raw_file: object, label: str,
             home: Path) -> tuple[Path, ...]:
    """``PLAUD_INDEX_FOLDERS`` (``os.pathsep``-separated) over ``folders`` (a list) in the
    file; each expanded (``~``) and made absolute."""
    if raw_env:
        items: list[object] = list(raw_env.split(os.pathsep))
    elif isinstance(raw_file, list):
        items = list(raw_file)
    else:
        if raw_file is not None:
            log.warning("Ignoring folders in %s: expected a list of paths", label)
        items = []
    paths = []
    for item in items:
        if isinstance(item, str) and item.strip():
            paths.append(_user_path(item, home))
        elif item not in ("", None):
            log.warning("Ignoring folder %r in %s: not a path", item, label)
    return tuple(dict.fromkeys(paths))


def _mirror(raw_env: str | None, raw_file: object, label: str, home: Path) -> Path | None:
    """``PLAUD_INDEX_MIRROR`` over ``mirror`` in the file: one folder, ``~`` expanded."""
    raw = raw_env if raw_env and raw_env.strip() else raw_file
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not raw.strip():
        log.warning("Ignoring mirror %r in %s: expected a folder's path", raw, label)
        return None
    return _user_path(raw, home)


def _user_path(text: str, home: Path) -> Path:
    """A path as a user writes it in a setting: ``~`` is their home; made absolute."""
    text = text.strip()
    if text == "~" or text.startswith("~/"):
        text = str(home) + text[1:]
    return Path(os.path.abspath(text))


def _pooling(raw: str | None) -> str | None:
    if not raw:
        return None
    if raw.strip().lower() not in POOLINGS:
        log.warning("Ignoring PLAUD_EMBED_POOLING=%r: use one of %s", raw, ", ".join(POOLINGS))
        return None
    return raw.strip().lower()


def _positive(raw: str | None, name: str) -> int | None:
    if not raw:
        return None
    if not raw.strip().isdigit() or int(raw) <= 0:
        log.warning("Ignoring %s=%r: expected a positive whole number", name, raw)
        return None
    return int(raw)


def _detail_interval(raw: str) -> float:
    raw = raw.strip()
    return int(raw) / 1000 if raw.isdigit() else DETAIL_INTERVAL_S


def passthrough_env(env: Mapping[str, str]) -> dict[str, str]:
    """The settings of this shell that a background agent must keep (never a secret)."""
    return {k: env[k] for k in ENV_VARS if env.get(k) and k not in SECRET_ENV_VARS}


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Read ``<home>/config.json`` (if present) and the environment."""
    from .fsio import read_state_file  # the one I/O of this module

    env = os.environ if env is None else env
    path = default_home(env) / "config.json"
    try:
        text: str | None = read_state_file(path, follow=True)  # dotfiles may link it
    except FileNotFoundError:
        text = None
    except (OSError, ValueError) as exc:  # unreadable, a folder, or not UTF-8
        log.warning("Cannot read %s (%s); using defaults", path, exc)
        text = None
    return build_config(env, text)


def interval_banner(config: Config) -> str:
    return (
        f"Effective index refresh interval: {format_interval(config.interval_ms)} "
        f"({config.interval_ms} ms) [source={config.interval_source}]"
    )
