"""The on-disk cache of text embeddings (kb.embed): a text seen before costs no model load."""

import os

import pytest

from kb import embed


class _FakeModel:
    """Stands in for the sentence-transformers model: counts the texts it encodes."""

    def __init__(self):
        self.seen = []

    def encode(self, texts, normalize_embeddings, show_progress_bar):
        assert normalize_embeddings
        self.seen += texts
        return [[float(len(t)) / 1000 + k / 7 for k in range(embed.DIM)] for t in texts]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARMISS_CACHE", str(tmp_path))
    monkeypatch.delenv("NEARMISS_EMBED_CACHE", raising=False)
    model = _FakeModel()
    monkeypatch.setattr(embed, "_load", lambda: model)
    return tmp_path, model


def test_second_query_reads_the_cache_without_the_model(cache, monkeypatch):
    tmp, model = cache
    first = embed.embed(["row stride wrong", "tail not masked"])
    assert model.seen == ["row stride wrong", "tail not masked"]
    assert embed.is_cached("tail not masked") and not embed.is_cached("something else")
    monkeypatch.setattr(embed, "_load", lambda: pytest.fail("a cached text loaded the model"))
    assert embed.embed(["tail not masked", "row stride wrong"]) == [first[1], first[0]]  # same floats, exactly


def test_only_missing_texts_are_encoded_and_damaged_files_recomputed(cache):
    tmp, model = cache
    embed.embed(["a"])
    key = embed._key("a")
    with open(os.path.join(tmp, "embed", key[:2], key + ".json"), "w") as f:
        f.write("[1.0, 2")  # a half-written file from a crash
    model.seen.clear()
    out = embed.embed(["a", "b"])
    assert model.seen == ["a", "b"] and len(out[0]) == embed.DIM
    model.seen.clear()
    embed.embed(["a", "b"])
    assert model.seen == []


def test_cache_off(cache, monkeypatch):
    tmp, model = cache
    monkeypatch.setenv("NEARMISS_EMBED_CACHE", "0")
    embed.embed(["x"])
    embed.embed(["x"])
    assert model.seen == ["x", "x"] and not os.path.exists(os.path.join(tmp, "embed"))
