"""Trace.map(name, head, rows): an attention map's weights whatever its storage; for maps computed on
request (storage "on-demand", core/model/attention_on_demand.h) equal to a stored run's by value."""
import numpy as np
import pytest

TEXT = "the cat sat on the mat. the cat sat on the hat!"


def head_mean(a):
    """The heads summed in head order in float32, then divided: as the views average."""
    acc = a[0].copy()
    for h in range(1, a.shape[0]):
        acc += a[h]
    return acc / np.float32(a.shape[0])


@pytest.mark.parametrize("spec", ["preset:tiny-decoder", "preset:tiny-llama", "preset:tiny-mistral"])
def test_on_request_maps_equal_the_stored_maps(atlas, spec):
    m = atlas.open(spec)
    stored = m.run(TEXT, maps="stored")
    lazy = m.run(TEXT, maps="on-demand")
    entries = [c for c in lazy.catalogue if c["storage"] == "on-demand"]
    assert [c["name"] for c in entries] == [c["name"] for c in stored.catalogue]
    for c in entries:
        name, s = c["name"], stored[c["name"]]
        assert name not in lazy.names()
        got = lazy.map(name)
        assert got.dtype == np.float32 and got.shape == s.shape
        assert np.array_equal(got, s), name
        assert np.array_equal(lazy.map(name, head=1), s[1])
        assert np.array_equal(lazy.map(name, rows=slice(2, 7)), s[:, 2:7])
        assert np.array_equal(lazy.map(name, head=2, rows=-1), s[2, -1])
        assert np.array_equal(lazy.map(name, head="max", rows=slice(None, 4)), s[:, :4].max(axis=0))
        assert np.array_equal(lazy.map(name, head="mean"), head_mean(s))


def test_map_of_a_stored_map_is_a_copy_of_its_array(atlas):
    tr = atlas.open("preset:tiny-decoder").run(TEXT)
    a = tr["decoder.layer0.self_attn"]
    got = tr.map("decoder.layer0.self_attn", rows=slice(3, 5))
    assert np.array_equal(got, a[:, 3:5]) and not np.shares_memory(got, a)
    assert np.array_equal(tr.map("blocks.1.attn.hook_pattern", head="mean"), head_mean(tr["decoder.layer1.self_attn"]))


def test_an_on_request_map_by_name_points_at_trace_map(atlas):
    tr = atlas.open("preset:tiny-decoder").run(TEXT, maps="on-demand")
    with pytest.raises(KeyError, match=r"on demand.*Trace\.map\(\"decoder\.layer0\.self_attn\""):
        tr["decoder.layer0.self_attn"]


def test_map_arguments_are_refused_with_their_reason(atlas):
    tr = atlas.open("preset:tiny-decoder").run(TEXT, maps="on-demand")
    name = "decoder.layer0.self_attn"
    with pytest.raises(KeyError, match=r'no attention map "decoder.layer0.attn".*nearest: "decoder.layer0.self_attn"'):
        tr.map("decoder.layer0.attn")
    with pytest.raises(IndexError, match=r"head 4 is out of range \(0 to 3\)"):
        tr.map(name, head=4)
    with pytest.raises(IndexError, match=r"row 99 is out of range"):
        tr.map(name, rows=99)
    with pytest.raises(atlas.AtlasError, match=r'head "sum" is not an index, "mean" or "max"'):
        tr.map(name, head="sum")
    with pytest.raises(atlas.AtlasError, match=r"step 1"):
        tr.map(name, rows=slice(0, 8, 2))
    with pytest.raises(TypeError):
        tr.map(name, head=1.0)


def test_a_sparse_map_beyond_its_dense_copy_is_densified_from_its_csr(atlas):
    m = atlas.open("preset:tiny-sparse-fixed")
    text = ("abcdefgh" * 520)[:4100]  # above kDenseTraceLimit (4096): CSR only
    tr = m.run(text)
    c = next(c for c in tr.catalogue if c["storage"] == "csr")
    name, comp = c["name"], c["companions"]
    indptr, indices, values = tr[comp["indptr"]], tr[comp["indices"]], tr[comp["values"]]
    rows = slice(4000, 4010)
    got = tr.map(name, head=1, rows=rows)
    want = np.zeros((10, c["keys"]["count"]), np.float32)
    for i in range(4000, 4010):  # naive: every nonzero of row i
        for z in range(indptr[i], indptr[i + 1]):
            want[i - 4000, indices[z]] = values[1, z]
    assert np.array_equal(got, want)
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-5)


def test_a_selection_computed_on_request_keeps_only_its_queries_and_keys(atlas):
    m = atlas.open("preset:tiny-llama")
    stored = m.run(TEXT, maps="stored")
    tr = m.run(TEXT, maps=["decoder.layer1.self_attn"], storage="on-demand")
    assert [(c["name"], c["storage"]) for c in tr.catalogue] == [("decoder.layer1.self_attn", "on-demand")]
    assert "decoder.layer1.self_attn.q" in tr and "decoder.layer0.self_attn.q" not in tr
    assert np.array_equal(tr.map("decoder.layer1.self_attn"), stored["decoder.layer1.self_attn"])
    with pytest.raises(atlas.AtlasError, match=r"storage= is how the maps of maps=\[names\] are kept"):
        m.run(TEXT, maps="stored", storage="on-demand")
    with pytest.raises(atlas.AtlasError, match=r'maps "lazy" is not one of'):
        m.run(TEXT, maps=["decoder.layer1.self_attn"], storage="lazy")
