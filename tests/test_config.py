from __future__ import annotations

import logging
from pathlib import Path

import pytest

from plaud_index.config import build_config, interval_banner, load_config
from plaud_index.intervals import (
    DEFAULT_INTERVAL_MS,
    MAX_INTERVAL_MS,
    MIN_INTERVAL_MS,
    format_interval,
    parse_interval,
)


@pytest.mark.parametrize(("raw", "ms"), [
    ("30s", 30_000), ("5m", 300_000), ("1h", 3_600_000), ("1500ms", 1500), ("90000", 90_000),
    (" 2M ", 120_000), ("1.5h", 5_400_000), (45000, 45000), (2.5, 2),
])
def test_parse_interval_accepts_human_and_ms_forms(raw: object, ms: int) -> None:
    assert parse_interval(raw) == ms


@pytest.mark.parametrize("raw", ["", "fast", "5 minutes", "-5m", "0", 0, True, None, [1], "5d"])
def test_parse_interval_rejects_junk(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_interval(raw)


@pytest.mark.parametrize(("ms", "text"), [(300_000, "5m"), (90_000, "90s"), (3_600_000, "1h"),
                                          (1500, "1500ms")])
def test_format_interval_is_the_shortest_exact_form(ms: int, text: str) -> None:
    assert format_interval(ms) == text


def test_default_is_five_minutes(tmp_path: Path) -> None:
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, None)
    assert (config.interval_ms, config.interval_source) == (DEFAULT_INTERVAL_MS, "default")
    assert interval_banner(config) == \
        "Effective index refresh interval: 5m (300000 ms) [source=default]"


@pytest.mark.parametrize(("value", "expected"), [
    ("1s", MIN_INTERVAL_MS), ("29999", MIN_INTERVAL_MS), ("7h", MAX_INTERVAL_MS),
    ("30s", 30_000), ("6h", MAX_INTERVAL_MS),
])
def test_interval_is_clamped_to_30s_6h(value: str, expected: int, tmp_path: Path) -> None:
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_INDEX_INTERVAL": value},
                          None)
    assert config.interval_ms == expected


def test_clamping_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        build_config({"PLAUD_INDEX_HOME": str(tmp_path), "INDEX_INTERVAL_MS": "1000"}, None)
    assert "outside 30s..6h; using 30s" in caplog.text


def test_env_beats_file_beats_default(tmp_path: Path) -> None:
    file_text = '{"indexInterval": "10m"}'
    env = {"PLAUD_INDEX_HOME": str(tmp_path)}
    assert build_config(env, file_text).interval_ms == 600_000
    assert build_config(env, file_text).interval_source == "config"
    env_config = build_config({**env, "PLAUD_INDEX_INTERVAL": "2m"}, file_text)
    assert (env_config.interval_ms, env_config.interval_source) == (120_000, "env")
    both = build_config({**env, "PLAUD_INDEX_INTERVAL": "2m", "INDEX_INTERVAL_MS": "60000"},
                        file_text)
    assert both.interval_ms == 60_000


def test_index_interval_ms_key_beats_human_key(tmp_path: Path) -> None:
    text = '{"indexInterval": "10m", "indexIntervalMs": 120000, "somethingElse": 1}'
    assert build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, text).interval_ms == 120_000


def test_bad_value_warns_naming_file_and_value_then_falls_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, '{"indexInterval": "soon"}')
    assert config.interval_ms == DEFAULT_INTERVAL_MS
    assert "'soon'" in caplog.text and str(tmp_path / "config.json") in caplog.text


def test_bad_env_falls_through_to_the_file(tmp_path: Path) -> None:
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path), "INDEX_INTERVAL_MS": "abc"},
                          '{"indexInterval": "10m"}')
    assert config.interval_ms == 600_000


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"5m"', ""])
def test_malformed_config_file_warns_and_uses_defaults(
        text: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, text)
    assert config.interval_ms == DEFAULT_INTERVAL_MS
    assert str(tmp_path / "config.json") in caplog.text


def test_config_file_cannot_move_the_home(index_home: Path) -> None:
    index_home.mkdir(parents=True)
    (index_home / "config.json").write_text('{"home": "/etc", "PLAUD_INDEX_HOME": "/etc"}')
    config = load_config()
    assert config.home == index_home
    assert config.index_dir == index_home / "vector-index"


def test_load_config_reads_the_file_under_the_home(index_home: Path) -> None:
    index_home.mkdir(parents=True)
    (index_home / "config.json").write_text('{"indexInterval": "1h"}')
    assert load_config().interval_ms == 3_600_000


def test_home_defaults_to_dot_plaud_index_mcp() -> None:
    config = build_config({"HOME": "/home/someone"}, None)
    assert config.home == Path("/home/someone/.plaud-index-mcp")


def test_a_setting_a_host_left_as_its_placeholder_is_unset() -> None:
    """An extension's field left empty may reach us as ``${user_config.folders}``."""
    config = build_config({"PLAUD_INDEX_HOME": "/tmp/x", "PLAUD_INDEX_FOLDERS":
                           "${user_config.folders}", "PLAUD_TIMEZONE": " ${user_config.tz} ",
                           "PLAUD_INDEX_MIRROR": "/m/${x}"}, None)
    assert config.folders == () and config.zone.name != "${user_config.tz}"
    assert config.mirror == Path("/m/${x}")  # a path that merely holds one is a path
