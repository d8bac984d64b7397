"""Corpus mode from Python (docs/corpus.md): Model.corpus writes the folder `atlas corpus` writes, and
corpus_links / corpus_heads / corpus_index / corpus_merge give the numbers `atlas corpus-query` and
`atlas corpus-merge` give on the same folders."""
import csv
import pathlib
import re

import numpy as np
import pytest

from conftest import run_cli

MODEL = "preset:tiny-decoder"
LINES = ["the cat sat on the mat", "", "a dog ran after the cat", "abab abab abab", "the end of the story",
         "x" * 2000, "cats and dogs and cats"]


def folder_bytes(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(pathlib.Path(d).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(corpus file, the index atlas corpus wrote) with --top 6."""
    d = tmp_path_factory.mktemp("corpus")
    f = d / "docs.txt"
    f.write_text("\n".join(LINES) + "\n")
    run_cli("corpus", MODEL, "--file", str(f), "--out", str(d / "cli"), "--top", "6", "--max-tokens", "64")
    return f, d / "cli"


def test_model_corpus_writes_the_folder_atlas_corpus_writes(atlas, corpus, tmp_path):
    f, cli = corpus
    r = atlas.open(MODEL).corpus(str(f), str(tmp_path / "py"), top=6, max_tokens=64)
    assert (r["total"], r["measured"], r["skipped"], r["finished"]) == (6, 5, 1, True)
    assert r["skipped_now"][0][0] == 5 and "over the limit of 64" in r["skipped_now"][0][1]
    assert folder_bytes(tmp_path / "py") == folder_bytes(cli)
    again = atlas.open(MODEL).corpus(str(f), str(tmp_path / "py"), top=6, max_tokens=64)
    assert (again["done_before"], again["done"], again["skipped_now"]) == (6, 6, [])  # resumed: nothing left
    assert folder_bytes(tmp_path / "py") == folder_bytes(cli)


def cli_links(*args):
    """atlas corpus-query's links: (weight text, map, head, document, query, query token, key, key token,
    context) per link."""
    out = run_cli("corpus-query", *args).stdout.splitlines()
    links = []
    for line, context in zip(out[1::2], out[2::2]):
        m = re.fullmatch(r"\d+\. (\S+)  (\S+) head (\d+)  document (\d+)  query (\d+) (.+) -> key (\d+) (.+)", line)
        assert m, line
        links.append((m[1], m[2], int(m[3]), int(m[4]), int(m[5]), m[6], int(m[7]), m[8], context[3:]))
    return links


@pytest.mark.parametrize("filters", [{}, {"layer": 1, "head": 2}, {"map": "decoder.layer0.self_attn", "context": 2},
                                     {"query_token": "c", "top": 4}, {"key_token": "a", "layer": 0, "top": 30}])
def test_corpus_links_equal_atlas_corpus_query(atlas, corpus, filters):
    _, d = corpus
    args = [str(d)]
    for k, v in filters.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    want = cli_links(*args)
    got = atlas.corpus_links(str(d), **filters)
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert ("%.6g" % g["weight"], g["map"], g["head"], g["document"], g["query"], g["query_token"], g["key"],
                g["key_token"], g["context"]) == w
    assert all(g["layer"] == filters.get("layer", g["layer"]) for g in got)


def test_corpus_heads_equal_the_index_tables(atlas, corpus):
    _, d = corpus
    got = atlas.corpus_heads(str(d))
    with open(d / "heads.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert got["map"] == [r["map"] for r in rows]
    assert list(got["head"]) == [int(r["head"]) for r in rows]
    assert list(got["documents"]) == [int(r["documents"]) for r in rows] == [5] * 8
    statistics = [k for k in rows[0] if k not in ("map", "stack", "sublayer", "layer", "segment", "step", "head",
                                                  "documents")]
    assert len(statistics) == 6
    for s in statistics:
        assert list(got[s]) == [float(r[s]) for r in rows]  # shortest round-trip text: exact
        table = np.load(d / "heads" / f"decoder.self_attn.{s}.npy")  # [layers, heads] float32
        assert np.array_equal(table[got["layer"], got["head"]], got[s].astype(np.float32))
    one = atlas.corpus_heads(str(d), layer=1, head=3)
    assert one["map"] == ["decoder.layer1.self_attn"] and list(one["head"]) == [3]
    printed = run_cli("corpus-query", str(d), "--heads", "--layer", "1", "--head", "3").stdout.splitlines()[-1]
    assert printed.split()[3:] == ["%.4f" % one[s][0] for s in statistics]


def test_corpus_index_says_what_the_folder_holds(atlas, corpus):
    f, d = corpus
    info = atlas.corpus_index(str(d))
    first = run_cli("corpus-query", str(d)).stdout.splitlines()[0]
    assert first.endswith(f"{MODEL} over {f}, 6 of 6 documents (5 measured, 1 skipped)")
    assert (info["model"], info["corpus"], info["documents"], info["done"], info["measured"]) == (MODEL, str(f), 6, 6, 5)
    assert info["skipped"][0][0] == 5 and info["complete"] and info["top"] == 6 and info["token_limit"] == 64


def test_corpus_merge_of_shards_equals_one_run(atlas, corpus, tmp_path):
    f, d = corpus
    m = atlas.open(MODEL)
    for k in (0, 1):
        m.corpus(str(f), str(tmp_path / f"s{k}"), shard=f"{k}/2", top=6, max_tokens=64)
    r = atlas.corpus_merge(str(tmp_path / "all"), [str(tmp_path / "s0"), str(tmp_path / "s1")])
    assert r == {"documents": 6, "missing_shards": [], "complete": True}
    assert folder_bytes(tmp_path / "all") == folder_bytes(d)


def test_corpus_calls_refuse_bad_input_with_the_clis_messages(atlas, corpus, tmp_path):
    f, d = corpus
    with pytest.raises(atlas.AtlasError, match=r"no map \"decoder.layer9.self_attn\"|decoder\.layer9\.self_attn"):
        atlas.corpus_links(str(d), map="decoder.layer9.self_attn")
    with pytest.raises(atlas.AtlasError, match=r"layer 5: the index holds no map of that layer"):
        atlas.corpus_heads(str(d), layer=5)
    with pytest.raises(atlas.AtlasError, match="give map or layer, not both"):
        atlas.corpus_links(str(d), map="decoder.layer0.self_attn", layer=0)
    with pytest.raises(atlas.AtlasError, match="manifest.json"):
        atlas.corpus_links(str(tmp_path))
    m = atlas.open(MODEL)
    with pytest.raises(atlas.AtlasError, match=r"shard.*K must be below N"):
        m.corpus(str(f), str(tmp_path / "x"), shard="3/2")
    with pytest.raises(atlas.AtlasError, match=r"holds a corpus run of another --top"):
        m.corpus(str(f), str(d), top=7, max_tokens=64)
    with pytest.raises(atlas.AtlasError, match="no such file"):
        m.corpus(str(tmp_path / "none.txt"), str(tmp_path / "y"))
