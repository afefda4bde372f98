"""Telling a user of the English-only default model, once, that their meetings are not
in English: language profiles from scripts and stopwords, and the advice in the indexer's
log after the first sync, in ``status`` and in ``doctor``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from helpers import answers_of

from plaud_index.config import build_config
from plaud_index.embedding.embedder import OnnxEmbedder
from plaud_index.embedding.languages import english_only_advice, language_of, language_shares
from plaud_index.plaud.mock import load_corpus
from plaud_index.setup.doctor import check_index
from plaud_index.setup.status import service_status
from plaud_index.sync.cycles import run_locked_cycle

DATA = Path(__file__).parent / "data" / "multilingual.jsonl"


@pytest.mark.parametrize("text, language", [
    ("We agreed that the budget is tracking over plan, and we will cut it.", "English"),
    ("Heute geht es um den Umzug des Büros, und wir sind nicht fertig.", "German"),
    ("Nous avons fixé la date du lancement pour le quinze septembre.", "French"),
    ("Necesitamos contratar dos ingenieros para el equipo antes de diciembre.", "Spanish"),
    ("おはようございます。今日は来期の予算について話し合います。", "Japanese"),
    ("今天我们讨论物流成本和新仓库。", "Chinese"),
    ("예산 회의를 시작하겠습니다", "Korean"),
    ("Сегодня мы обсуждаем бюджет", "Russian"),
    ("12:30 — 45 %", None),
])
def test_each_passage_gets_the_language_its_script_or_stopwords_say(
        text: str, language: str | None) -> None:
    assert language_of(text) == language


def test_shares_weigh_passages_by_length_and_advice_comes_only_when_most_is_not_english(
        ) -> None:
    shares = language_shares(["Wir sind heute nicht fertig mit dem Umzug. " * 6,
                              "今日は来期の予算について話し合います。" * 4,
                              "The budget is over plan and we will cut it."])
    assert list(shares)[:2] == ["German", "Japanese"] and sum(shares.values()) == \
        pytest.approx(1.0)
    advice = english_only_advice(shares, "Xenova/all-MiniLM-L6-v2", "English",
                                 "Xenova/multilingual-e5-small", "about 100 languages")
    assert advice is not None and "German" in advice and "Japanese" in advice
    assert "PLAUD_EMBED_MODEL=Xenova/multilingual-e5-small" in advice
    assert english_only_advice({"English": 0.7, "German": 0.3}, "m", "English", "x", "y") is None
    assert english_only_advice(shares, "m", "about 100 languages", "x", "y") is None


def corpus_of(path: Path, ids: tuple[str, ...]) -> Path:
    records = [json.loads(line) for line in DATA.read_text().splitlines()]
    chosen = [r for r in records if r["id"].startswith(ids)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen))
    return path


def test_german_and_japanese_meetings_get_the_advice_once_then_in_status_and_doctor(
        tmp_path: Path, real_embedder: OnnxEmbedder, caplog: pytest.LogCaptureFixture) -> None:
    corpus = corpus_of(tmp_path / "corpus.jsonl", ("ml-de", "ml-ja"))
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(corpus)}, None)
    with caplog.at_level(logging.WARNING, logger="plaud_index.sync.indexer"):
        run_locked_cycle(config, real_embedder)
        run_locked_cycle(config, real_embedder)
    said = [r.getMessage() for r in caplog.records if "is not English" in r.getMessage()]
    assert len(said) == 1  # once, after the first sync
    assert "German" in said[0] and "Japanese" in said[0] and "490 MB" in said[0]
    service = answers_of(config, real_embedder).index
    assert service_status(service).language_advice == said[0]
    index = check_index(config, service)
    assert index.status == "warn" and "PLAUD_EMBED_MODEL=Xenova/multilingual-e5-small" in \
        index.detail


def test_an_english_account_gets_no_advice(tmp_path: Path,
                                           real_embedder: OnnxEmbedder) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in load_corpus()))
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(corpus)}, None)
    run_locked_cycle(config, real_embedder)
    assert service_status(answers_of(config, real_embedder).index).language_advice is None
