"""What the index stores of a chunk and of a recording, and their JSON forms. Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    file_id: str
    source: str
    text: str
    start_ms: int | None
    end_ms: int | None
    speakers: tuple[str, ...]
    heading: str
    line_ms: tuple[int | None, ...] = ()
    line_speakers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "speakers": list(self.speakers), "line_ms": list(self.line_ms),
                "line_speakers": list(self.line_speakers)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChunkRow:
        return cls(data["chunk_id"], data["file_id"], data["source"], data["text"],
                   data.get("start_ms"), data.get("end_ms"), tuple(data.get("speakers", ())),
                   data.get("heading", ""), tuple(data.get("line_ms", ())),
                   tuple(data.get("line_speakers", ())))

    @classmethod
    def from_chunk(cls, c: Any) -> ChunkRow:
        return cls(c.chunk_id, c.file_id, c.source, c.text, c.start_ms, c.end_ms, c.speakers,
                   c.heading, c.line_ms, c.line_speakers)


PARTIAL = "partial:"  # the content hash prefix of a recording indexed in part


@dataclass(frozen=True)
class IndexedRecording:
    """What the index keeps about a recording besides its chunks."""

    file_id: str
    title: str
    created_at: str  # ISO-8601, UTC
    duration_ms: int
    content_hash: str
    speakers: tuple[str, ...]
    note_titles: tuple[str, ...]
    chunk_count: int
    origin: str = ""  # a folder file's path; "" for Plaud recordings
    folders: tuple[str, ...] = ()  # the Plaud folders it is filed under
    marks: tuple[tuple[int, str], ...] = ()  # the moments the user marked: (ms, text)

    @property
    def partial(self) -> bool:
        """Indexed in part: a cycle had to commit before all its chunks were embedded
        (``sync.work``); it is fetched again until it is whole."""
        return self.content_hash.startswith(PARTIAL)

    @property
    def source_kind(self) -> str:
        return "folder" if self.file_id.startswith("folder:") else "plaud"

    @property
    def created(self) -> datetime:
        """The creation instant, always timezone-aware (UTC when the text has no offset)."""
        created = datetime.fromisoformat(self.created_at)
        return created if created.tzinfo else created.replace(tzinfo=timezone.utc)

    def to_json(self) -> dict[str, Any]:
        data = {**asdict(self), "speakers": list(self.speakers),
                "note_titles": list(self.note_titles), "folders": list(self.folders),
                "marks": [list(m) for m in self.marks]}
        for key in ("folders", "marks"):  # written only when there are any
            if not data[key]:
                del data[key]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexedRecording:
        return cls(data["file_id"], data["title"], data["created_at"],
                   int(data.get("duration_ms", 0)), data["content_hash"],
                   tuple(data.get("speakers", ())), tuple(data.get("note_titles", ())),
                   int(data.get("chunk_count", 0)), str(data.get("origin", "")),
                   tuple(str(f) for f in data.get("folders", ())),
                   tuple((int(m[0]), str(m[1])) for m in data.get("marks", ())
                         if isinstance(m, list) and len(m) == 2))
