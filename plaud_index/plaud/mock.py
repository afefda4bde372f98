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
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import RecordingGoneError, SourceError

SAMPLE_CORPUS = "sample_corpus.jsonl"


def _plaud_time(iso: str) -> str:
    """Plaud sends naive UTC timestamps; drop the ``Z``/offset the eval files carry."""
    return iso.replace("Z", "").split("+")[0]


def to_list_row(record: Mapping[str, Any]) -> dict[str, Any]:
    created = _plaud_time(str(record["created_at"]))
    return {
        "id": record["id"],
        "name": record.get("name", ""),
        "created_at": created,
        "start_at": created,
        "duration": int(float(record.get("duration", 0)) * 1000),
        "serial_number": None,
    }


def to_detail(record: Mapping[str, Any]) -> dict[str, Any]:
    segments = [
        {"start_time": int(round(s["start"] * 1000)), "end_time": int(round(s["end"] * 1000)),
         "content": s["text"], "speaker": s.get("speaker") or "",
         "original_speaker": s.get("speaker") or "", "embeddingKey": None}
        for s in record.get("transcript", [])
    ]
    detail = to_list_row(record)
    detail["presigned_url"] = None
    detail["source_list"] = [{
        "data_id": f"source_transaction:mock:{record['id']}", "data_type": "transaction",
        "data_title": "", "data_content": json.dumps(segments), "data_link": "",
    }] if segments else []
    note = record.get("note")
    if isinstance(note, str) and note.strip():
        markdown = note if note.lstrip().startswith("#") else f"## Summary\n{note}"
        detail["note_list"] = [{
            "data_id": f"auto_sum:mock:{record['id']}", "data_type": "auto_sum_note",
            "data_title": "Summary", "data_tab_name": "Summary",
            "data_content": json.dumps({"ai_content": markdown, "category": "Summary",
                                        "state": 10}),
            "data_link": "", "data_error_code": 0,
        }]
    else:
        detail["note_list"] = []
    return detail


def _read_lines(lines: Iterator[str], label: str) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise SourceError(f"{label} line {number} is not JSON: {exc}") from exc
        if not isinstance(record, dict) or "id" not in record or "created_at" not in record:
            raise SourceError(f"{label} line {number} needs at least id and created_at")
        records.append(record)
    return records


def load_corpus(path: Path | None = None) -> list[dict[str, Any]]:
    if path is None:
        sample = resources.files(__package__ or "plaud_index.plaud").joinpath(SAMPLE_CORPUS)
        text = sample.read_text("utf-8")
        return _read_lines(iter(text.splitlines()), SAMPLE_CORPUS)
    try:
        with path.open(encoding="utf-8") as fh:
            return _read_lines(iter(fh), str(path))
    except OSError as exc:
        raise SourceError(f"Cannot read the mock corpus {path}: {exc}") from exc


class MockClient:
    """The same interface as the real ``PlaudClient``: ``list_files`` and ``get_file``."""

    def __init__(self, corpus: Path | None = None) -> None:
        self._records = {r["id"]: r for r in load_corpus(corpus)}

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        rows = [to_list_row(r) for r in self._records.values()]
        return sorted(rows, key=lambda r: r["created_at"], reverse=True)  # newest first

    def get_file(self, file_id: str) -> dict[str, Any]:
        record = self._records.get(file_id)
        if record is None:
            raise RecordingGoneError(f"No recording {file_id} in the mock corpus")
        return to_detail(record)
