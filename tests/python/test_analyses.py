"""The analyses as Model methods (docs/python.md, "Analyses"): each checked against an oracle built
independently from hooks and numpy, or against the CLI verb that writes the same arrays."""
import numpy as np
import pytest

from conftest import run_cli

MODEL = "preset:tiny-decoder"
CLEAN, CORRUPTED = "the cat sat", "the dog sat"  # the bytes tokenizer: 11 tokens each


def log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("layer,head", [(0, 2), (1, 1)])
def test_a_head_patch_cell_equals_the_clean_heads_output_put_in_by_a_hook(atlas, layer, head):
    model = atlas.open(MODEL)
    a, b = model.tokenize("a")[0][0], model.tokenize("b")[0][0]
    result = model.patch(CLEAN, CORRUPTED, site="head", metric="logit-diff", tokens=("a", "b"))
    # oracle: record the clean run's hook_z, run the corrupted input with that head's output replaced
    name = f"blocks.{layer}.attn.hook_z"
    clean_z = {}
    clean = model.run(CLEAN, hooks={name: lambda z: clean_z.__setitem__("z", z.copy())}).logits
    corrupted = model.run(CORRUPTED).logits

    def put_clean_head(z):
        z[:, head, :] = clean_z["z"][:, head, :]
    patched = model.run(CORRUPTED, hooks={name: put_clean_head}).logits

    def diff(logits):
        return float(logits[-1, a]) - float(logits[-1, b])
    assert result["grid"].shape == (2, 4)
    assert result["clean"] == pytest.approx(diff(clean), abs=1e-5)
    assert result["corrupted"] == pytest.approx(diff(corrupted), abs=1e-5)
    assert result["raw"][layer, head] == pytest.approx(diff(patched), abs=1e-5)
    expected = (diff(patched) - diff(corrupted)) / (diff(clean) - diff(corrupted))
    assert result["grid"][layer, head] == pytest.approx(expected, rel=1e-4, abs=1e-5)


def test_patch_grid_equals_the_cli_grid(atlas, tmp_path):
    run_cli("patch", MODEL, "--clean", CLEAN, "--corrupted", CORRUPTED, "--site", "resid", "--metric", "kl",
            "--direction", "noise", "--out", str(tmp_path))
    result = atlas.open(MODEL).patch(CLEAN, CORRUPTED, site="resid", metric="kl", direction="noise")
    assert result["grid"].shape == (2, 11)
    assert np.allclose(result["raw"], np.load(tmp_path / "raw.npy"), rtol=1e-6, atol=1e-7)
    assert result["row_names"] == ["decoder.layer0", "decoder.layer1"]  # the CSV's row column
    rows = [line.split(",")[1] for line in (tmp_path / "grid.csv").read_text().splitlines()[1::11]]
    assert rows == result["row_names"]


def test_dla_parts_sum_to_the_runs_logit(atlas):
    model = atlas.open(MODEL)
    token = model.tokenize("e")[0][0]
    parts = model.dla(CLEAN, token="e", positions=[3, 10])
    logits = model.run(CLEAN).logits  # oracle: the forward's own logits
    assert list(parts["positions"]) == [3, 10] and list(parts["tokens"]) == [token, token]
    total = (parts["heads"].sum((1, 2)) + parts["attn_bias"].sum(1) + parts["mlp"].sum(1) + parts["embed_tokens"]
             + parts["embed_positions"] + parts["norm_bias"] + parts["output_bias"])
    assert np.allclose(total, logits[[3, 10], token], atol=1e-4)
    assert np.allclose(parts["logit"], logits[[3, 10], token], atol=1e-6)


def test_ablate_zero_head_effect_equals_kl_of_a_hook_zeroed_head(atlas):
    model = atlas.open(MODEL)
    sweep = model.ablate(CLEAN, sweep="heads", mode="zero", metric="kl")
    full = model.run(CLEAN).logits

    def zero(z):
        z[:, 3, :] = 0
    zeroed = model.run(CLEAN, hooks={"blocks.1.attn.hook_z": zero}).logits
    lp, lq = log_softmax(full), log_softmax(zeroed)
    kl = (np.exp(lp) * (lp - lq)).sum(-1).mean()
    assert sweep["rows"] == ["L0", "L1"]
    assert sweep["effects"][1, 3] == pytest.approx(kl, rel=1e-4, abs=1e-7)


def test_head_statistics_equal_the_cli_npy(atlas, tmp_path):
    text = "abcabcabc"
    run_cli("heads", MODEL, "--text", text, "--npy", str(tmp_path))
    stats = atlas.open(MODEL).head_statistics(text)
    family = stats["decoder.self_attn"]
    for name, table in family.items():
        files = list(tmp_path.rglob(f"*{name}*.npy"))
        assert len(files) == 1, name
        assert np.allclose(table, np.load(files[0]), atol=1e-6), name
    # previous_token of head (0, 0) by hand from the map: mean over queries i >= 1 of p[i, i-1]
    p = atlas.open(MODEL).run(text)["decoder.layer0.self_attn"][0]
    by_hand = np.mean([p[i, i - 1] for i in range(1, len(text))])
    assert family["previous_token"][0, 0] == pytest.approx(by_hand, abs=1e-6)


def test_analysis_arguments_are_refused_with_their_reason(atlas):
    model = atlas.open(MODEL)
    with pytest.raises(atlas.AtlasError, match="same token length"):
        model.patch(CLEAN, "the dog", site="head", metric="kl")
    with pytest.raises(atlas.AtlasError, match="needs tokens=A"):
        model.patch(CLEAN, CORRUPTED, site="head", metric="prob")
    with pytest.raises(atlas.AtlasError, match="unknown choice \"hed\""):
        model.patch(CLEAN, CORRUPTED, site="hed", metric="kl")
    with pytest.raises(atlas.AtlasError, match="outside the vocabulary"):
        model.dla(CLEAN, token=10**6)
    with pytest.raises(TypeError):
        model.ablate(CLEAN, metric="logit-diff", tokens=(1.5, 2))
    with pytest.raises(atlas.AtlasError, match="only used by encoder-decoder"):
        model.ablate(CLEAN, target="x")


def test_path_patching_equals_the_cli_and_a_sender_without_a_path_changes_nothing(atlas, tmp_path):
    run_cli("patch", MODEL, "--clean", CLEAN, "--corrupted", CORRUPTED, "--site", "path", "--receivers", "1.0",
            "--receiver-input", "q", "--metric", "kl", "--direction", "noise", "--out", str(tmp_path))
    model = atlas.open(MODEL)
    result = model.patch(CLEAN, CORRUPTED, site="path", metric="kl", direction="noise", receivers=[(1, 0)],
                         receiver_input="q")
    assert result["site"] == "path" and result["grid"].shape == (2, 4)
    assert np.allclose(result["raw"], np.load(tmp_path / "raw.npy"), rtol=1e-6, atol=1e-7)
    # layer-1 senders cannot reach a layer-1 receiver's input: the clean run's metric, exactly
    assert np.all(result["raw"][1] == result["clean"])
    assert np.any(result["raw"][0] != result["clean"])


def test_attribution_patching_ranks_the_cells_as_exact_patching_does(atlas):
    model = atlas.open(MODEL)
    exact = model.patch(CLEAN, CORRUPTED, site="head", metric="logit-diff", tokens=("a", "b"))
    estimate = model.attribute(CLEAN, CORRUPTED, site="head", metric="logit-diff", tokens=("a", "b"))
    assert estimate["grid"].shape == exact["grid"].shape
    assert estimate["clean"] == pytest.approx(exact["clean"], abs=1e-5)
    effect = lambda r: (r["raw"] - r["corrupted"]).ravel()
    e, x = effect(estimate), effect(exact)
    assert np.argmax(np.abs(e)) == np.argmax(np.abs(x))
    ranks = lambda v: np.argsort(np.argsort(v))
    assert np.corrcoef(ranks(e), ranks(x))[0, 1] > 0.5  # Spearman's rho
    with pytest.raises(atlas.AtlasError, match="patched exactly only"):
        model.attribute(CLEAN, CORRUPTED, site="q", metric="kl")


def test_qk_decomposition_cells_sum_to_the_traced_score(atlas):
    model = atlas.open(MODEL)
    d = model.qk_decompose(CLEAN, layer=1, head=2, query=9, key=4, value=True)
    score = model.run(CLEAN, scores=True)["decoder.layer1.self_attn.scores"][2, 9, 4]  # oracle: the forward
    assert d["cells"].shape == (len(d["rows"]), len(d["columns"]))
    assert d["cells"].sum() == pytest.approx(float(score), rel=1e-4, abs=1e-5)
    # every component written before layer 1, nothing of layer 1 itself
    assert d["rows"] == ["embed.tokens", "embed.positions", *[f"layer0.head{h}" for h in range(4)],
                         "layer0.attn_bias", "layer0.mlp", "bias"]
    assert d["value_parts"].shape == (len(d["value_names"]), 64)
    assert np.allclose(d["value_parts"].sum(0), d["head_output"], atol=1e-4)


def test_qk_decomposition_on_transformer_xl_names_the_four_relative_terms(atlas):
    model = atlas.open("preset:tiny-xl")
    text = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"  # segments of 16: query 39 in segment 2, key 20 in its memory
    d = model.qk_decompose(text, layer=1, head=3, query=39, key=20, value=True)
    trace = model.run(text, scores=True)  # oracle: the forward's scores and its four traced terms
    cell = (3, 39 - 32, 20 - 16)  # head, query in segment 2, key among its 16 memory + 8 keys
    cells = d["cells"]
    assert cells.sum() == pytest.approx(float(trace["decoder.seg2.layer1.self_attn.scores"][cell]), rel=1e-4, abs=1e-5)
    u, v = d["rows"].index("xl.u (global content bias)"), d["rows"].index("xl.v (global position bias)")
    rel = d["columns"].index("xl.relative_position")
    terms = {"a": cells[:u, :rel].sum(), "b": cells[:u, rel].sum(), "c": cells[u, :].sum(), "d": cells[v, :].sum()}
    for name, got in terms.items():
        assert got == pytest.approx(float(trace[f"xl.seg2.layer1.terms.{name}"][cell]), rel=1e-4, abs=1e-5)
    assert np.allclose(d["value_parts"].sum(0), d["head_output"], atol=1e-4)


def test_patch_on_an_encoder_decoder_model_equals_atlas_patch_with_targets(atlas, tmp_path):
    m = atlas.open("preset:tiny-encoder-decoder")
    r = m.patch("abc", "abd", site="head", metric="prob", tokens="a", target="xyz")
    out = tmp_path / "grid"
    run_cli("patch", "preset:tiny-encoder-decoder", "--clean", "abc", "--corrupted", "abd", "--target", "xyz",
            "--site", "head", "--metric", "prob", "--tokens", "a", "--out", str(out))
    np.testing.assert_array_equal(np.float32(r["grid"]), np.load(out / "grid.npy"))
    assert r["row_names"] == ["encoder.layer0.attn", "encoder.layer1.attn", "decoder.layer0.self_attn",
                              "decoder.layer0.cross_attn", "decoder.layer1.self_attn", "decoder.layer1.cross_attn"]
    # a corrupted decoder input of its own, and the refusals
    r2 = m.patch("abc", "abc", site="head", metric="prob", tokens="a", target="xyz", corrupted_target="xyw")
    assert r2["clean"] != r2["corrupted"]
    with pytest.raises(atlas.AtlasError, match="give target="):
        m.patch("abc", "abd", site="head", metric="prob", tokens="a")
    with pytest.raises(atlas.AtlasError, match="target"):
        m.patch("abc", "abd", site="head", metric="prob", tokens="a", target="xyz", corrupted_target="xy")
    with pytest.raises(atlas.AtlasError, match="not one"):
        atlas.open("demo:induction").patch("abc", "abd", site="head", metric="prob", tokens="a", target="xyz")
