"""Model.run(maps=[names]): only the named attention maps are traced (TraceOptions::only_maps), each
with its companions, equal by value to a full run's; other maps absent; arrays of no map as ever;
`atlas run --only-maps` the same."""
import json

import numpy as np
import pytest

from conftest import cli_dump, run_cli

TEXT = "the cat sat on the mat. the cat"


def owner(name, maps):
    """The map a full run's array belongs to (the map, or named under it), by the catalogue."""
    for m in maps:
        if name == m or name.startswith(m + "."):
            return m
    return None


@pytest.mark.parametrize("spec,selected,target", [
    ("preset:tiny-decoder", ["decoder.layer1.self_attn"], None),
    ("preset:tiny-encoder-decoder", ["decoder.layer0.cross_attn", "encoder.layer1.attn"], "le chat"),
    ("preset:tiny-xl", ["decoder.seg1.layer0.self_attn"], None),
])
def test_selected_maps_equal_a_full_runs_and_the_others_are_absent(atlas, spec, selected, target):
    m = atlas.open(spec)
    flags = dict(scores=True, qk=True, value_norms=True, hidden=True)
    full = m.run(TEXT, target=target, **flags)
    some = m.run(TEXT, target=target, maps=selected, **flags)
    all_maps = [c["name"] for c in full.catalogue]
    assert set(selected) <= set(all_maps)
    kept = [n for n in full.names() if owner(n, all_maps) in (None, *selected)]
    assert some.names() == kept
    assert any(owner(n, all_maps) is None for n in kept)  # logits, hidden states: unaffected
    for name in kept:
        assert np.array_equal(some[name], full[name]), name
    assert [c["name"] for c in some.catalogue] == [c for c in all_maps if c in selected]
    for entry in some.catalogue:
        assert entry == next(c for c in full.catalogue if c["name"] == entry["name"])
    assert np.array_equal(some.logits, full.logits)


def test_a_selection_by_transformerlens_name_is_its_pattern(atlas):
    m = atlas.open("preset:tiny-decoder")
    tr = m.run(TEXT, maps=["blocks.0.attn.hook_pattern"])
    assert [c["name"] for c in tr.catalogue] == ["decoder.layer0.self_attn"]
    assert np.array_equal(tr["blocks.0.attn.hook_pattern"], m.run(TEXT)["decoder.layer0.self_attn"])
    assert "decoder.layer1.self_attn" not in tr


def test_the_selected_maps_hold_fewer_bytes(atlas):
    m = atlas.open("preset:tiny-decoder")
    full = m.run(TEXT, scores=True)
    some = m.run(TEXT, scores=True, maps=["decoder.layer0.self_attn"])
    nbytes = lambda tr: sum(tr[n].nbytes for n in tr.names())
    dropped = sum(full[n].nbytes for n in full.names() if n.startswith("decoder.layer1.self_attn"))
    assert dropped > 0
    assert nbytes(some) == nbytes(full) - dropped


def test_an_unknown_map_is_refused_naming_it_and_the_runs_maps(atlas):
    m = atlas.open("preset:tiny-decoder")
    with pytest.raises(atlas.AtlasError, match=r'selected map "decoder\.layer7\.self_attn" is not an attention map '
                       r'of this run; its maps: decoder\.layer0\.self_attn, decoder\.layer1\.self_attn'):
        m.run(TEXT, maps=["decoder.layer7.self_attn"])
    with pytest.raises(atlas.AtlasError, match=r"companion of decoder\.layer0\.self_attn: name the map"):
        m.run(TEXT, maps=["decoder.layer0.self_attn.scores"])
    with pytest.raises(atlas.AtlasError, match=r"selects no attention map"):
        m.run(TEXT, maps=[])
    with pytest.raises(TypeError, match="a map name is a str"):
        m.run(TEXT, maps=[0])
    with pytest.raises(atlas.AtlasError, match=r'maps "all" is not one of'):
        m.run(TEXT, maps="all")
    m.run(TEXT)  # the model runs on


def test_cli_only_maps_dumps_what_python_traces(atlas, tmp_path):
    selected = "decoder.layer1.self_attn"
    manifest, arrays = cli_dump(tmp_path, "preset:tiny-decoder", "--text", TEXT, "--scores",
                                "--only-maps", selected)
    tr = atlas.open("preset:tiny-decoder").run(TEXT, scores=True, maps=[selected])
    assert sorted(arrays) == sorted(tr.names())
    for name, a in arrays.items():
        assert np.array_equal(a, tr[name]), name
    assert [m["array"] for m in manifest["attention_maps"]] == [selected]


def test_cli_only_maps_refuses_an_unknown_map_and_an_empty_name(tmp_path):
    p = run_cli("run", "preset:tiny-decoder", "--text", TEXT, "--only-maps", "decoder.layer0.attn", check=False)
    assert p.returncode == 1
    assert 'selected map "decoder.layer0.attn" is not an attention map of this run; its maps: ' \
           'decoder.layer0.self_attn, decoder.layer1.self_attn' in p.stderr
    p = run_cli("run", "preset:tiny-decoder", "--text", TEXT, "--only-maps", "decoder.layer0.self_attn,",
                check=False)
    assert p.returncode == 1 and "holds an empty name" in p.stderr


def test_the_memory_guard_counts_only_the_selected_maps(atlas, monkeypatch):
    m = atlas.open("preset:base-encoder")  # 6 layers x 8 heads: ~300 MB of maps and working memory at 1024 tokens
    text = "abcdefgh" * 128
    monkeypatch.setenv("ATLAS_MEMORY_BUDGET", "250M")
    with pytest.raises(atlas.AtlasError, match="this run needs about"):
        m.run(text)
    tr = m.run(text, maps=["encoder.layer5.attn"])
    assert tr["encoder.layer5.attn"].shape == (8, 1024, 1024)
