"""Search in every language Plaud transcribes, through the real indexer and the real model.

One index holds the English sample corpus and eight meetings in German, French,
Spanish, Portuguese, Japanese, Chinese and Korean (plus one that switches from
English to Spanish mid-way). Exact terms, with and without accents, and two- to
four-character CJK queries must find their recording first, with a snippet that
shows the matched words and a moment at the utterance that holds them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import answers_of

from plaud_index.answers import Answers
from plaud_index.config import build_config
from plaud_index.embedding.embedder import OnnxEmbedder
from plaud_index.index.analyzer import query_terms
from plaud_index.index.postings import bm25, build_postings
from plaud_index.plaud.mock import load_corpus
from plaud_index.search.rank import make_request
from plaud_index.sync.cycles import run_locked_cycle

DATA = Path(__file__).parent / "data" / "multilingual.jsonl"

CASES = [  # query, recording, a word the snippet must show
    ("Kündigungsfrist", "ml-de-office", "Kündigungsfrist"),
    ("Kundigungsfrist", "ml-de-office", "Kündigungsfrist"),  # typed without the umlaut
    ("neue Küche", "ml-de-office", "Küche"),
    ("Kuche", "ml-de-office", "Küche"),
    ("échéance du lancement", "ml-fr-launch", "échéance"),
    ("echeance", "ml-fr-launch", "échéance"),  # typed without accents
    ("emballage écologique", "ml-fr-launch", "emballage"),
    ("entrevista técnica", "ml-es-hiring", "entrevista"),
    ("tecnica", "ml-es-hiring", "técnica"),
    ("preço do frete", "ml-pt-logistics", "frete"),
    ("transportadora", "ml-pt-logistics", "transportadora"),
    ("予算", "ml-ja-budget", "予算"),
    ("会議室", "ml-ja-budget", "会議室"),
    ("広告費を削減", "ml-ja-budget", "広告費"),
    ("物流成本", "ml-zh-sales", "物流成本"),
    ("销售", "ml-zh-sales", "销售"),
    ("新仓库", "ml-zh-sales", "仓库"),
    ("예산", "ml-ko-design", "예산"),
    ("버튼 색상", "ml-ko-design", "버튼"),
    ("proveedor de pagos", "ml-mixed-standup", "proveedor"),
    ("payment SDK", "ml-mixed-standup", "payment"),
]


@pytest.fixture(scope="module")
def service(real_embedder: OnnxEmbedder, tmp_path_factory: pytest.TempPathFactory
            ) -> Answers:
    home = tmp_path_factory.mktemp("multilingual")
    corpus = home / "corpus.jsonl"
    records = [*load_corpus(), *(json.loads(line) for line in DATA.read_text().splitlines())]
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    config = build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(corpus)}, None)
    report = run_locked_cycle(config, real_embedder)
    assert report.added == len(records)
    return answers_of(config, real_embedder)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize(("query", "file_id", "word"), CASES)
def test_the_right_recording_comes_first_with_the_word_in_its_snippet(
        service: Answers, query: str, file_id: str, word: str, mode: str) -> None:
    result = service.search.search(make_request(query, mode=mode, limit=5))
    assert result.results, f"nothing found for {query!r}"
    top = result.results[0]
    assert top.file_id == file_id, [h.title for h in result.results]
    assert any(word in m.snippet for m in top.moments), [m.snippet for m in top.moments]


def _utterance_start(file_id: str, word: str) -> int:
    record = next(json.loads(line) for line in DATA.read_text().splitlines()
                  if json.loads(line)["id"] == file_id)
    line = next(t for t in record["transcript"] if word in t["text"])
    return int(round(line["start"] * 1000))


@pytest.mark.parametrize(("query", "file_id", "word"), [
    ("会議室", "ml-ja-budget", "会議室"), ("物流成本", "ml-zh-sales", "物流成本"),
    ("Kündigungsfrist", "ml-de-office", "Kündigungsfrist"), ("예산", "ml-ko-design", "예산"),
    ("proveedor", "ml-mixed-standup", "proveedor")])
def test_the_moment_points_at_the_utterance_that_holds_the_match(
        service: Answers, query: str, file_id: str, word: str) -> None:
    top = service.search.search(make_request(query, source="transcript")).results[0]
    assert top.file_id == file_id
    assert top.moments[0].start_ms == _utterance_start(file_id, word)


def test_the_exact_form_scores_above_the_accent_free_match() -> None:
    texts = ["Die neue Küche ist fertig.", "Die neue Kuche ist fertig."]
    postings = build_postings(texts)
    live = np.ones(2, dtype=bool)
    exact = bm25([(postings, 0)], query_terms("Küche"), 2, live)
    plain = bm25([(postings, 0)], query_terms("Kuche"), 2, live)
    assert exact[0] > exact[1] > 0  # typed with the umlaut: the umlaut spelling first
    assert plain[0] == plain[1] > 0  # typed without: both spellings match alike
