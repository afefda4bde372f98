"""What the wheel and sdist must and must not contain (run by .ci/build)."""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from plaud_index import __version__  # noqa: E402

REQUIRED = {
    "plaud_index_mcp.py",
    "plaud_index/__init__.py",
    "plaud_index/server/tools.py",
    "plaud_index/py.typed",
    "plaud_index/plaud/sample_corpus.jsonl",
    "plaud_index/embedding/model_data/all-MiniLM-L6-v2-tokenizer.json",
    "plaud_index/embedding/model_data/NOTICE",
}
FORBIDDEN_PREFIXES = ("tests/", "bench/", ".ci/", ".github/", "launchd/")


def main(dist: Path) -> int:
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"expected one wheel and one sdist: {wheels}"
    assert f"-{__version__}-" in wheels[0].name, f"{wheels[0].name} is not version {__version__}"
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    tree = {str(p.relative_to(ROOT)) for p in (ROOT / "plaud_index").rglob("*.py")}
    missing = (REQUIRED | tree) - names  # every module of the tree, none forgotten
    assert not missing, f"the wheel lacks {sorted(missing)}"
    stray = sorted(n for n in names if n.startswith(FORBIDDEN_PREFIXES))
    assert not stray, f"the wheel carries {stray[:5]}"
    for line in ("License-Expression: MIT", "Requires-Python: >=3.10",
                 "Provides-Extra: offline"):
        assert line in metadata.decode(), f"METADATA lacks {line!r}"
    assert "licenses/LICENSE" in " ".join(names), "the wheel lacks its LICENSE"
    with tarfile.open(sdists[0]) as sdist:
        members = sdist.getnames()
    assert any(m.endswith("/LICENSE") for m in members), "the sdist lacks its LICENSE"
    size = wheels[0].stat().st_size
    assert size < 2_000_000, f"the wheel is {size} bytes: something large slipped in"
    print(f"{wheels[0].name}: {len(names)} files, {size} bytes; sdist {sdists[0].name} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
