"""``PLAUD_CLIENT=mock``: Plaud-shaped raw dicts from a corpus file, no account needed.

The corpus is JSON Lines in the ``shared/eval`` format (``id``, ``name``,
``created_at``, ``duration`` in seconds, ``transcript`` of
``{speaker, start, end, text}`` in seconds, ``note``), either
``PLAUD_MOCK_CORPUS`` or the sample bundled with the package. Each record is
served exactly as the developer API would (API.md §3.1–3.2): a list row and
a detail with a ``transaction`` block of JSON-string segments in ms and an
``auto_sum_note`` block, so everything downstream runs the real code paths.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import RecordingGoneError, SourceError

SAMPLE_CORPUS = "sample_corpus.jsonl"

log = logging.getLogger(__name__)


def _ms(seconds: object) -> object:
    """Seconds of the eval format as Plaud's ms; anything that is no finite number goes
    through as it is, for the real parser to judge (that is what it is for)."""
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and \
            math.isfinite(seconds) and abs(seconds) < 1e15:
        return int(round(seconds * 1000))
    return seconds


def to_list_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """A list row as the developer API sends it. Times pass through unconverted: Plaud's
    naive UTC strings, epochs in s/ms/µs and ISO strings with offsets all reach the real
    parser (``documents``), so this corpus exercises it."""
    created = record.get("created_at")
    return {
        "id": record.get("id"),
        "name": record.get("name", ""),
        "created_at": created,
        "start_at": created,
        "duration": _ms(record.get("duration", 0)),
        "serial_number": None,
    }


def to_detail(record: Mapping[str, Any]) -> dict[str, Any]:
    transcript = record.get("transcript")
    segments = [
        {"start_time": _ms(s.get("start")), "end_time": _ms(s.get("end")),
         "content": s.get("text"), "speaker": s.get("speaker") or "",
         "original_speaker": s.get("speaker") or "", "embeddingKey": None}
        for s in (transcript if isinstance(transcript, list) else []) if isinstance(s, dict)
    ]
    detail = to_list_row(record)
    detail["presigned_url"] = None
    detail["source_list"] = [{
        "data_id": f"source_transaction:mock:{record.get('id')}", "data_type": "transaction",
        "data_title": "", "data_content": json.dumps(segments), "data_link": "",
    }] if segments else []
    note = record.get("note")
    if isinstance(note, str) and note.strip():
        markdown = note if note.lstrip().startswith("#") else f"## Summary\n{note}"
        detail["note_list"] = [{
            "data_id": f"auto_sum:mock:{record.get('id')}", "data_type": "auto_sum_note",
            "data_title": "Summary", "data_tab_name": "Summary",
            "data_content": json.dumps({"ai_content": markdown, "category": "Summary",
                                        "state": 10}),
            "data_link": "", "data_error_code": 0,
        }]
    else:
        detail["note_list"] = []
    return detail


def _read_lines(lines: Iterator[str], label: str) -> tuple[list[dict[str, Any]],
                                                           dict[str, str]]:
    """The records of a JSON Lines corpus, and the lines that are none (by label: why).
    One bad line never hides the others."""
    records, rejected = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # not JSON, or nested beyond reason
            rejected[f"{label} line {number}"] = f"not JSON ({type(exc).__name__})"
            continue
        if not isinstance(record, dict):
            rejected[f"{label} line {number}"] = "not a JSON object"
            continue
        records.append(record)
    if rejected:
        log.warning("Left out %d line(s) of %s that are no recording: %s", len(rejected),
                    label, "; ".join(f"{k}: {v}" for k, v in list(rejected.items())[:3]))
    return records, rejected


def load_corpus(path: Path | None = None) -> list[dict[str, Any]]:
    return read_corpus(path)[0]


def read_corpus(path: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The records of the corpus (the bundled sample by default) and its rejected lines."""
    if path is None:
        sample = resources.files(__package__ or "plaud_index.plaud").joinpath(SAMPLE_CORPUS)
        text = sample.read_text("utf-8")
        return _read_lines(iter(text.splitlines()), SAMPLE_CORPUS)
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return _read_lines(iter(fh), str(path))
    except OSError as exc:
        raise SourceError(f"Cannot read the mock corpus {path}: {exc}") from exc


class MockClient:
    """The same interface as the real ``PlaudClient``: ``list_files`` and ``get_file``."""

    def __init__(self, corpus: Path | None = None) -> None:
        records, self._rejected = read_corpus(corpus)
        self._rows = [to_list_row(r) for r in records]  # every record, whatever its id
        self._records = {r["id"]: r for r in records if isinstance(r.get("id"), str)}

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        # newest first, as Plaud lists; rows whose time is no string sort last
        return sorted(self._rows, key=lambda r: str(r["created_at"]), reverse=True)

    def rejected_lines(self) -> dict[str, str]:
        """Corpus lines that are no record (not JSON, not an object)."""
        return dict(self._rejected)

    def get_file(self, file_id: str) -> dict[str, Any]:
        record = self._records.get(file_id)
        if record is None:
            raise RecordingGoneError(f"No recording {file_id} in the mock corpus")
        return to_detail(record)
