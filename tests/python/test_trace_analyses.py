"""compare and search on Traces against numpy oracles computed from the traces' own maps (the
formulas of core/analysis/attention_compare.h and token_search.h), and their refusals."""
import numpy as np
import pytest

A = "atlasofheadsatlasofheads"
B = "atlasofheadsatlasofhexds"  # one letter changed: the same token count


@pytest.fixture(scope="module")
def runs(atlas):
    m = atlas.open("demo:induction")
    return m, m.run(A), m.run(B)


def test_compare_is_the_mean_total_variation_and_the_largest_cell_difference_per_head(atlas, runs):
    _, a, b = runs
    rows = atlas.compare(a, b)
    maps = [e["name"] for e in a.catalogue]
    assert [(r["map"], r["head"]) for r in rows] == [(n, h) for n in maps for h in range(4)]
    for r in rows:
        x, y = a[r["map"]][r["head"]].astype(np.float64), b[r["map"]][r["head"]].astype(np.float64)
        assert r["mean_tv"] == pytest.approx(np.mean(0.5 * np.abs(x - y).sum(axis=1)), rel=1e-6, abs=1e-9)
        assert r["max_abs"] == pytest.approx(np.abs(x - y).max(), rel=1e-6)
        assert r["layer"] == int(r["map"].split("layer")[1].split(".")[0])
    # before the changed letter (position 21) a causal model's rows agree exactly
    d = a.difference(b, "decoder.layer1.self_attn", 2)
    np.testing.assert_array_equal(d, a["decoder.layer1.self_attn"][2] - b["decoder.layer1.self_attn"][2])
    assert not d[:21].any() and d[21:].any()
    same = atlas.compare(a, a)
    assert all(r["mean_tv"] == 0 and r["max_abs"] == 0 for r in same)


def test_search_scores_the_attention_matching_queries_put_on_matching_keys(runs):
    _, a, _ = runs
    rows = a.search("a", "t")
    q = [i for i, t in enumerate(a.tokens) if t == "a"]
    k = [j for j, t in enumerate(a.tokens) if t == "t"]
    expected = {}
    for e in a.catalogue:
        maps = a[e["name"]]
        for h in range(maps.shape[0]):
            # every matching query row, also one that sees no matching key yet (mass 0)
            expected[(e["name"], h)] = np.mean([maps[h, i, k].sum() for i in q])
    assert len(rows) == len(expected)
    assert all(r["queries"] == len(q) for r in rows)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    for r in rows:
        assert r["score"] == pytest.approx(expected[(r["map"], r["head"])], rel=1e-5)
        assert a.tokens[r["best_query"]] == "a" and a.tokens[r["best_key"]] == "t"
        assert r["best_weight"] == pytest.approx(float(a[r["map"]][r["head"], r["best_query"], r["best_key"]]))


def test_compare_and_search_refuse_with_the_reason(atlas, runs):
    m, a, _ = runs
    short = m.run("atlas")
    with pytest.raises(atlas.AtlasError):
        atlas.compare(a, short)
    with pytest.raises(atlas.AtlasError) as e:
        a.search("zzz", "a")
    assert 'no token of the input matches "zzz"' in str(e.value)
    with pytest.raises(atlas.AtlasError):
        a.difference(short, "decoder.layer0.self_attn", 0)
    with pytest.raises(atlas.AtlasError):
        a.difference(a, "decoder.layer0.self_attn", 9)
