"""The knowledge base in Qdrant: repair patterns searchable by meaning, symptoms and categories, and learned repairs.

One code path serves three deployments of qdrant-client: embedded on disk (default:
``$NEARMISS_CACHE/kb``, else ``~/.cache/nearmiss/kb``), in memory (``":memory:"``, for
tests), and a Qdrant server when ``NEARMISS_QDRANT_URL`` is set. Two collections:

- ``patterns``: one point per ``kb/patterns/*.toml`` file, its dense embedding
  (``kb.embed``) of title, explanation, fix and symptom descriptions, and the whole
  pattern as payload (``symptoms`` and ``categories`` as keyword lists for filters). The
  collection's metadata holds a hash of the pattern files: ``ensure_index`` rebuilds it
  when they change and does nothing otherwise.
- ``learned``: repairs distilled from accepted runs (``kb.learn``), deduplicated by
  (operator, parameters, symptoms). Built up in the cache folder only; nothing learned
  ships with the package.

Scoring (``search``) is hybrid: the symptom evidence of ``kb.retrieve.symptom_score``
plus ``DENSE_WEIGHT`` times the cosine similarity with the query text plus
``CATEGORY_BOOST`` when a category matches. The weights were set on the project's cases
(``python -m evals.kb_recall``) so that neither signal alone decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass

from qdrant_client import QdrantClient, models

from kb import embed
from kb.retrieve import PATTERN_DIR, load_patterns, symptom_score
from tools.diagnosis.diagnostics import SYMPTOMS

PATTERNS = "patterns"
LEARNED = "learned"
SCHEMA = "nearmiss.kb/1"
MODEL_ID = "all-MiniLM-L6-v2"
DENSE_WEIGHT = 4.0
CATEGORY_BOOST = 1.0
LOCK_WAIT_S = 20.0  # an embedded store is single-process: wait this long for another run to close it
_NS = uuid.UUID("5b1d8a52-3c1f-4c39-9f0e-6a7e2d0b9c11")


class StoreError(Exception):
    """The store cannot be opened (locked by another process, server unreachable); the message says which."""


def default_location() -> str:
    """Folder of the embedded store: ``$NEARMISS_CACHE/kb``, else ``~/.cache/nearmiss/kb``."""
    base = os.environ.get("NEARMISS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nearmiss")
    return os.path.join(base, "kb")


def pattern_hash(directory: str = PATTERN_DIR) -> str:
    """SHA-256 over the pattern files' names and bytes, the embedding model and the payload schema."""
    h = hashlib.sha256(f"{SCHEMA}\0{MODEL_ID}\0".encode())
    for name in sorted(os.listdir(directory)):
        if name.endswith(".toml"):
            h.update(name.encode() + b"\0")
            with open(os.path.join(directory, name), "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()


def pattern_text(pat: dict) -> str:
    """The text embedded for a pattern: title, categories, explanation, fix, and what its symptoms mean."""
    sym = "; ".join(SYMPTOMS.get(s, s.replace("_", " ")) for s in pat["symptoms"])
    return (f"{pat['title']}. Kernels: {', '.join(pat.get('categories', []))}. {pat['explanation'].strip()} "
            f"Fix: {pat['fix']} Symptoms: {sym}.")


def query_text(symptoms: list[str], summary: str = "", findings: list[str] | None = None) -> str:
    """The text of a diagnosis to search with: what its symptoms mean, its summary and first findings."""
    parts = [SYMPTOMS.get(s, s.replace("_", " ")) for s in symptoms]
    return "; ".join(parts + ([summary] if summary else []) + list(findings or [])[:2])


@dataclass
class Hit:
    """A pattern with its combined score and the parts of it (``dense`` is None without a text query)."""

    score: float
    pattern: dict
    symptom: float
    dense: float | None


def _point_id(kind: str, key: str) -> str:
    return str(uuid.uuid5(_NS, f"{kind}/{key}"))


def _any(key: str, values) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))


class KBStore:
    """Patterns and learned repairs in one Qdrant deployment (embedded, in memory, or a server).

    Args:
        location: ``":memory:"``, a folder for the embedded store, or None for the default
            (``NEARMISS_QDRANT_URL`` when set, else ``default_location()``).
        url: a Qdrant server URL (overrides ``location``).

    Raises:
        StoreError: the embedded folder stays locked by another process for ``LOCK_WAIT_S``
            seconds, or the server does not answer.
    """

    def __init__(self, location: str | None = None, url: str | None = None) -> None:
        url = url or (None if location else os.environ.get("NEARMISS_QDRANT_URL"))
        self.where = url or location or default_location()
        if url:
            self.client = QdrantClient(url=url, timeout=10)
            try:
                self.client.get_collections()
            except Exception as e:  # noqa: BLE001 - any transport error means the same to the caller
                raise StoreError(f"Qdrant server {url} does not answer: {type(e).__name__}: {e}") from None
        elif self.where == ":memory:":
            self.client = QdrantClient(location=":memory:")
        else:
            os.makedirs(self.where, exist_ok=True)
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    self.client = QdrantClient(path=self.where)
                    break
                except RuntimeError as e:
                    if "already accessed" not in str(e) or time.monotonic() > deadline:
                        raise StoreError(f"{self.where}: {e}") from None
                    time.sleep(0.25)
        self.server = bool(url)

    def close(self) -> None:
        """Release the store (an embedded folder is locked while open)."""
        self.client.close()

    def __enter__(self) -> "KBStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ index
    def _create(self, name: str, metadata: dict) -> None:
        if self.client.collection_exists(name):
            self.client.delete_collection(name)
        self.client.create_collection(name, vectors_config=models.VectorParams(size=embed.DIM,
                                      distance=models.Distance.COSINE), metadata=metadata)
        if self.server:  # payload indexes make filters fast on a server; the embedded store ignores them
            for key in ("symptoms", "categories"):
                self.client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)

    def index_hash(self) -> str | None:
        """The pattern hash the ``patterns`` collection was built from (None when not built)."""
        if not self.client.collection_exists(PATTERNS):
            return None
        return (self.client.get_collection(PATTERNS).config.metadata or {}).get("hash")

    def ensure_index(self, directory: str = PATTERN_DIR, force: bool = False) -> bool:
        """Build the ``patterns`` collection unless it was built from the same pattern files.

        Returns:
            True when it (re)built the index, False when the cached one is current.

        Raises:
            kb.retrieve.PatternError: a pattern file is malformed.
        """
        digest = pattern_hash(directory)
        if not force and self.index_hash() == digest:
            return False
        pats = load_patterns(directory)
        texts = [pattern_text(p) for p in pats]
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        old = {}  # vectors of unchanged texts are reused: editing one file re-embeds one pattern
        if self.client.collection_exists(PATTERNS):
            recs, _ = self.client.scroll(PATTERNS, limit=10_000, with_payload=["text_sha"], with_vectors=True)
            old = {r.payload.get("text_sha"): r.vector for r in recs}
        todo = [t for t, k in zip(texts, keys) if k not in old]
        fresh = dict(zip([k for k in keys if k not in old], embed.embed(todo) if todo else []))
        self._create(PATTERNS, {"hash": digest, "schema": SCHEMA, "model": MODEL_ID})
        self.client.upsert(PATTERNS, [
            models.PointStruct(id=_point_id("pattern", p["id"]), vector=old.get(k) or fresh[k],
                               payload={**p, "symptoms": sorted(p["symptoms"]), "weights": p["symptoms"], "text_sha": k})
            for p, k in zip(pats, keys)])
        return True

    def patterns(self) -> list[dict]:
        """Every indexed pattern (``symptoms`` is the weight table, as in the files)."""
        recs, _ = self.client.scroll(PATTERNS, limit=10_000, with_payload=True)
        return sorted((_pattern(r.payload) for r in recs), key=lambda p: p["id"])

    def search(self, text: str = "", symptoms: list[str] = (), categories: list[str] = (), limit: int = 5,
               require_symptoms: bool = False, require_categories: bool = False) -> list[Hit]:
        """Patterns ranked for a diagnosis, best first.

        Args:
            text: free text (a diagnosis summary); when empty, no model is loaded and
                ranking is by symptoms (and categories) alone.
            symptoms: symptom names (``tools.diagnosis.diagnostics.SYMPTOMS``; unknown names are ignored).
            categories: kernel categories (``softmax``, ``attention``...) to boost.
            limit: number of hits.
            require_symptoms / require_categories: keep only patterns that list one of them
                (a payload filter in Qdrant) instead of only boosting them.
        """
        must = []
        if require_symptoms and symptoms:
            must.append(_any("symptoms", symptoms))
        if require_categories and categories:
            must.append(_any("categories", categories))
        flt = models.Filter(must=must) if must else None
        if text:
            pts = self.client.query_points(PATTERNS, query=embed.embed([text])[0], query_filter=flt, limit=1000,
                                           with_payload=True).points
            scored = [(_pattern(p.payload), float(p.score)) for p in pts]
        else:
            recs, _ = self.client.scroll(PATTERNS, scroll_filter=flt, limit=10_000, with_payload=True)
            scored = [(_pattern(r.payload), None) for r in recs]
        hits = []
        for pat, dense in scored:
            sym = symptom_score(pat, list(symptoms))
            cat = CATEGORY_BOOST if set(categories) & set(pat.get("categories", [])) else 0.0
            hits.append(Hit(sym + cat + DENSE_WEIGHT * (dense or 0.0), pat, sym, dense))
        hits.sort(key=lambda h: (-h.score, h.pattern["id"]))
        return hits[:limit]

    # ------------------------------------------------------------ learned repairs
    def add_learned(self, entry: dict) -> tuple[str, bool]:
        """Store a learned repair, or count one more use of an identical one.

        Args:
            entry: ``symptoms`` (list), ``categories`` (list), ``operator``, ``params`` (dict),
                ``description``, ``diff``, optional ``pattern`` (the KB pattern it came from).

        Returns:
            ``(key, new)``: the entry's dedup key and whether it was new.
        """
        key = hashlib.sha256(json.dumps([entry["operator"], entry.get("params") or {}, sorted(entry["symptoms"])],
                                        sort_keys=True).encode()).hexdigest()[:16]
        pid = _point_id("learned", key)
        if not self.client.collection_exists(LEARNED):
            self._create(LEARNED, {"schema": SCHEMA, "model": MODEL_ID})
        old = self.client.retrieve(LEARNED, [pid], with_payload=True)
        if old:
            self.client.set_payload(LEARNED, {"count": int(old[0].payload.get("count", 1)) + 1,
                                              "last_used": time.time()}, points=[pid])
            return key, False
        text = (f"{query_text(entry['symptoms'])}. Repair {entry['operator']}: {entry.get('description', '')}\n"
                f"{entry.get('diff', '')[:1500]}")
        payload = {**entry, "symptoms": sorted(entry["symptoms"]), "key": key, "count": 1, "created": time.time(),
                   "last_used": time.time()}
        self.client.upsert(LEARNED, [models.PointStruct(id=pid, vector=embed.embed([text])[0], payload=payload)])
        return key, True

    def learned(self, symptoms: list[str], categories: list[str] = (), limit: int = 5) -> list[dict]:
        """Learned repairs sharing a symptom with the diagnosis, best match first.

        Ranked by the Jaccard overlap of symptom sets, plus 0.5 for a shared category, plus
        a little for entries that repaired more runs. No model is loaded.
        """
        if not symptoms or not self.client.collection_exists(LEARNED):
            return []
        recs, _ = self.client.scroll(LEARNED, scroll_filter=models.Filter(must=[_any("symptoms", symptoms)]),
                                     limit=10_000, with_payload=True)
        want = set(symptoms)

        def score(p: dict) -> float:
            have = set(p["symptoms"])
            return (len(have & want) / len(have | want) + (0.5 if set(categories) & set(p.get("categories", [])) else 0)
                    + 0.01 * min(int(p.get("count", 1)), 10))

        out = sorted((dict(r.payload) for r in recs), key=lambda p: (-score(p), p["key"]))
        for p in out:
            p["match"] = round(score(p), 3)
        return out[:limit]


def _pattern(payload: dict) -> dict:
    p = dict(payload)
    p.pop("text_sha", None)
    p["symptoms"] = p.pop("weights", {s: 1.0 for s in p.get("symptoms", [])})
    return p


def open_store(location: str | None = None) -> KBStore:
    """Open the default store (server or embedded) and make sure its pattern index is current.

    When the embedded folder stays locked (another run holds it), falls back to an
    in-memory index of the shipped patterns, without learned entries.

    Raises:
        StoreError: ``NEARMISS_QDRANT_URL`` is set and the server does not answer.
    """
    try:
        store = KBStore(location)
    except StoreError:
        if os.environ.get("NEARMISS_QDRANT_URL") and not location:
            raise
        store = KBStore(":memory:")
    store.ensure_index()
    return store
