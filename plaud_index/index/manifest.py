"""The index manifest: one typed shape, its schema version, and its only reader.

``manifest.json`` names the live segments, the tombstones, the model and the
analyser the postings were made with. It is the last file a commit replaces,
so it is the commit. A manifest of a newer schema is a clear error; one of an
older schema is read and upgraded by the writer (``writer.upgrade``); one that is
not a manifest at all is ``IndexCorruptError`` naming the file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import IndexCorruptError, IndexSchemaError
from ..fsio import read_state_file

# 2: Unicode analyser (postings re-made from the stored text); 3: per-row arrays and JSON
# lines instead of one metadata JSON per segment, postings memory-mapped (segment_files.py)
SCHEMA_VERSION = 3
MANIFEST = "manifest.json"
STAGED = "manifest.next.json"
ANALYZER_OF_SCHEMA_1 = "ascii-1"


@dataclass(frozen=True)
class ModelInfo:
    model_id: str
    sha256: str
    dim: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.model_id, "sha256": self.sha256, "dim": self.dim,
                "dtype": "float32"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelInfo:
        return cls(str(data["id"]), str(data["sha256"]), int(data["dim"]))


@dataclass(frozen=True)
class SegmentEntry:
    name: str
    seq: int  # tombstones with a higher seq hide this segment's rows of that recording
    rows: int
    # suffix -> (size in bytes, CRC-32): readers check sizes, the writer checksums
    files: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    model: ModelInfo
    analyzer: str
    created_at: str
    updated_at: str
    schema: int = SCHEMA_VERSION
    generation: int = 0
    segments: tuple[SegmentEntry, ...] = ()
    dead: dict[str, int] = field(default_factory=dict)
    next_seq: int = 1
    counts: dict[str, int] = field(default_factory=lambda: {"recordings": 0, "chunks": 0})

    def advance(self, **changes: Any) -> Manifest:
        """The next generation with ``changes`` applied."""
        return replace(self, generation=self.generation + 1, **changes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_json()
        return data


def parse_manifest(data: object, label: str) -> Manifest:
    """Validate every field's type; anything off is ``IndexCorruptError`` naming ``label``."""
    if not isinstance(data, dict):
        raise IndexCorruptError(f"{label} is not an index manifest (not a JSON object).")
    schema = data.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise IndexCorruptError(f"{label} has a schema that is not a number.")
    if schema > SCHEMA_VERSION:
        raise IndexSchemaError(
            f"The index at {Path(label).parent} was written by a newer plaud-index-mcp "
            f"(schema {schema}, this version reads {SCHEMA_VERSION}). Upgrade "
            "plaud-index-mcp, or delete the folder to rebuild it.")
    try:
        segments = tuple(SegmentEntry(str(s["name"]), _int(s["seq"]), _int(s["rows"]),
                                      {str(k): (_int(v[0]), _int(v[1]))
                                       for k, v in s.get("files", {}).items()})
                         for s in data["segments"])
        names = [s.name for s in segments]
        if len(set(names)) != len(names) or len({s.seq for s in segments}) != len(segments):
            # every size and checksum may be right, yet each row would count twice
            twice = sorted({n for n in names if names.count(n) > 1}) or ["a seq"]
            raise ValueError(f"it names {twice[0]} twice")
        return Manifest(
            model=ModelInfo.from_json(data["model"]),
            analyzer=str(data.get("analyzer") or ANALYZER_OF_SCHEMA_1),
            created_at=str(data["created_at"]), updated_at=str(data["updated_at"]),
            schema=schema, generation=_int(data["generation"]), segments=segments,
            dead={str(k): _int(v) for k, v in data["dead"].items()},
            next_seq=_int(data["next_seq"]),
            counts={str(k): _int(v) for k, v in data.get("counts", {}).items()})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IndexCorruptError(f"{label} is damaged ({type(exc).__name__}: {exc}); the "
                                "indexer rebuilds the index from Plaud.") from exc


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}"[:120])
    return value


def read_manifest(path: Path) -> Manifest | None:
    """The manifest at ``path``, or ``None`` if there is none."""
    try:
        text = read_state_file(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise IndexCorruptError(f"{path} is a folder, not an index manifest; remove it.") \
            from exc
    except (OSError, ValueError) as exc:  # unreadable, or not UTF-8
        raise IndexCorruptError(f"Cannot read {path}: {exc}. Delete {path.parent} to "
                                "rebuild the index from Plaud.") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise IndexCorruptError(f"{path} is not valid JSON ({exc}). Delete {path.parent} "
                                "to rebuild the index from Plaud.") from exc
    return parse_manifest(data, str(path))
