"""Hooks from Python: read and replace activations during a forward (docs/python.md, "Hooks")."""
import numpy as np
import pytest

from conftest import cli_dump

TEXT = "patching heads"
MODEL = "preset:tiny-decoder"


def kl_per_position(p_logits, q_logits):
    """KL(P || Q) of the softmax of each row, in float64 (the oracle's formula, ablation.h)."""
    def log_softmax(x):
        x = x.astype(np.float64)
        x = x - x.max(-1, keepdims=True)
        return x - np.log(np.exp(x).sum(-1, keepdims=True))
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return (np.exp(lp) * (lp - lq)).sum(-1)


@pytest.mark.parametrize("layer,head", [(0, 1), (1, 3)])
def test_zeroing_a_heads_hook_z_equals_the_ablation_engines_dropped_head(atlas, tmp_path, layer, head):
    # oracle: atlas run --drop-heads L:H runs a copy of the model whose W^O columns of that head
    # are zero (core/analysis/ablation.h) and dumps KL(full || ablated) per position
    _, dumped = cli_dump(tmp_path, MODEL, "--text", TEXT, "--drop-heads", f"{layer}:{head}")
    model = atlas.open(MODEL)
    full = model.run(TEXT).logits

    def zero_head(z):  # [L, heads, d_head], TransformerLens's hook_z without the batch axis
        z[:, head, :] = 0
        return z
    patched = model.run(TEXT, hooks={f"blocks.{layer}.attn.hook_z": zero_head}).logits
    kl = kl_per_position(full, patched)
    assert kl.max() > 1e-6  # the head mattered: the comparison is not between two unpatched runs
    assert np.allclose(kl, dumped["ablation.kl"], rtol=1e-4, atol=1e-7)


def test_the_atlas_named_hook_and_the_alias_patch_alike(atlas):
    model = atlas.open(MODEL)

    def zero_alias(z):
        z[:, 2, :] = 0

    def zero_flat(z):  # [L, heads * d_head]: head 2 is columns 32..48
        assert z.shape == (len(TEXT), 64)
        out = z.copy()
        out[:, 32:48] = 0
        return out
    a = model.run(TEXT, hooks={"blocks.0.attn.hook_z": zero_alias}).logits  # edits in place, returns None
    b = model.run(TEXT, hooks={"decoder.layer0.self_attn.heads": zero_flat}).logits
    assert np.array_equal(a, b)
    assert not np.array_equal(a, model.run(TEXT).logits)


def test_a_hook_that_only_reads_changes_nothing_and_sees_the_traced_state(atlas):
    model = atlas.open(MODEL)
    seen = {}
    trace = model.run(TEXT, hidden=True, hooks={
        "blocks.0.hook_resid_post": lambda x: seen.__setitem__("post0", x),
        "blocks.1.attn.hook_z": lambda z: seen.__setitem__("z1", z)})
    assert np.array_equal(trace.logits, model.run(TEXT).logits)
    assert np.array_equal(seen["post0"], trace["decoder.layer0.hidden"])  # hook_resid_post is the traced hidden state
    assert seen["z1"].shape == (len(TEXT), 4, 16)
    assert seen["post0"].flags.owndata  # a copy the hook may keep


def test_replacing_resid_post_patches_the_rest_of_the_forward(atlas):
    # activation patching: layer 0's output of text A put into the run of text B (same length)
    model = atlas.open(MODEL)
    a, b = "patching heads", "patching tails"
    clean = model.run(a, hidden=True)
    patched = model.run(b, hooks={"blocks.0.hook_resid_post": lambda x: np.array(clean["decoder.layer0.hidden"])})
    # layer 1 and the head see only layer 0's output: the patched run of B is the run of A
    assert np.allclose(patched.logits, clean.logits, rtol=0, atol=1e-5)
    assert not np.allclose(model.run(b).logits, clean.logits, atol=1e-3)


def test_a_replacement_of_the_wrong_shape_is_a_value_error(atlas):
    model = atlas.open(MODEL)
    with pytest.raises(ValueError, match=r"shape \(3, 4\).*\(14, 4, 16\)"):
        model.run(TEXT, hooks={"blocks.0.attn.hook_z": lambda z: np.zeros((3, 4))})
    with pytest.raises(ValueError, match="returned a str"):
        model.run(TEXT, hooks={"blocks.0.hook_resid_post": lambda x: "nope"})
    assert model.run(TEXT).logits.shape == (len(TEXT), 256)  # the model still runs


def test_an_exception_in_a_hook_reaches_the_caller(atlas):
    model = atlas.open(MODEL)

    def broken(_):
        raise ZeroDivisionError("from the hook")
    with pytest.raises(ZeroDivisionError, match="from the hook"):
        model.run(TEXT, hooks={"blocks.1.attn.hook_z": broken})
    assert model.run(TEXT).logits.shape == (len(TEXT), 256)


def test_unknown_hook_names_raise_key_error_naming_the_nearest(atlas):
    model = atlas.open(MODEL)
    with pytest.raises(KeyError, match="blocks.0.attn.hook_z"):
        model.run(TEXT, hooks={"blocks.0.attn.hook_zz": lambda z: None})
    with pytest.raises(TypeError, match="callable"):
        model.run(TEXT, hooks={"blocks.0.attn.hook_z": 3})
    assert "decoder.layer1.output" in model.hook_names()


def test_a_hook_the_forward_never_reaches_is_an_error(atlas):
    # Transformer-XL's own stack calls no layer-output hooks: a patch there would do nothing
    model = atlas.open("preset:tiny-xl")
    names = [n for n in model.hook_names() if n.endswith(".output")]
    with pytest.raises(atlas.AtlasError, match="never called"):
        model.run(TEXT, hooks={names[0]: lambda x: None})


def test_ctrl_c_during_a_run_is_a_keyboard_interrupt_and_the_model_runs_on(atlas):
    import _thread
    model = atlas.open(MODEL)
    # the SIGINT Ctrl-C sends, simulated in the middle of the forward (inside a hook, so Python
    # raises it there; between layers without hooks, the run checks for it: docs/python.md)
    with pytest.raises(KeyboardInterrupt):
        model.run(TEXT, hooks={"blocks.0.attn.hook_z": lambda z: _thread.interrupt_main()})
    assert model.run(TEXT).logits.shape == (len(TEXT), 256)


def test_zero_values_of_a_head_equal_its_zeroed_output(atlas):
    # o_h(i) = sum_j a_ij v_j: with v of head h all 0 the head writes nothing, as hook_z zeroed
    model = atlas.open(MODEL)

    def zero_v(v):  # [L, heads, d_head], per query head
        v[:, 2, :] = 0
    zero_pattern = lambda p: p.__setitem__(2, 0)  # [heads, q, k]: head 2 attends nowhere

    def zero_z(z):
        z[:, 2, :] = 0
    by_v = model.run(TEXT, hooks={"blocks.1.attn.hook_v": zero_v}).logits
    by_pattern = model.run(TEXT, hooks={"blocks.1.attn.hook_pattern": zero_pattern}).logits
    by_z = model.run(TEXT, hooks={"blocks.1.attn.hook_z": zero_z}).logits
    assert not np.allclose(by_z, model.run(TEXT).logits, atol=1e-4)
    assert np.allclose(by_v, by_z, rtol=0, atol=1e-5)
    assert np.allclose(by_pattern, by_z, rtol=0, atol=1e-5)


def test_zero_queries_make_a_head_average_the_values_it_sees(atlas):
    # q_h = 0: every score is 0, so the causal head's output at i is the mean of v_j, j <= i
    model = atlas.open(MODEL)
    seen = {}

    def zero_q(q):
        q[:, 1, :] = 0
    model.run(TEXT, hooks={"decoder.layer0.self_attn.q": lambda q: zero_q(q.reshape(len(TEXT), 4, 16)),
                           "blocks.0.attn.hook_v": lambda v: seen.__setitem__("v", v.copy()),
                           "blocks.0.attn.hook_z": lambda z: seen.__setitem__("z", z.copy())})
    v, z = seen["v"][:, 1, :].astype(np.float64), seen["z"][:, 1, :]
    running_mean = np.cumsum(v, axis=0) / np.arange(1, len(TEXT) + 1)[:, None]
    assert np.allclose(z, running_mean, rtol=1e-4, atol=1e-5)


def test_a_pattern_hook_that_only_reads_changes_nothing(atlas):
    model = atlas.open(MODEL)
    seen = {}
    trace = model.run(TEXT, hooks={"blocks.1.attn.hook_pattern": lambda p: seen.__setitem__("p", p)})
    assert np.array_equal(trace.logits, model.run(TEXT).logits)
    assert np.array_equal(seen["p"], trace["blocks.1.attn.hook_pattern"])  # the traced map


def test_grouped_query_key_and_value_hooks_are_per_query_head(atlas):
    model = atlas.open("preset:tiny-llama")
    config = model.config
    heads, kv = config["n_heads"], config["attention"]["kv_heads"]
    assert kv < heads
    with pytest.raises(KeyError, match="grouped-query"):
        model.run("abc", hooks={"blocks.0.attn.hook_k": lambda k: None})
    seen = {}
    model.run("abcd", hooks={"decoder.layer0.self_attn.k": lambda k: seen.__setitem__("k", k)})
    d_head = config["d_model"] // heads
    k = seen["k"].reshape(4, heads, d_head)
    group = heads // kv
    assert np.array_equal(k[:, 0, :], k[:, group - 1, :])  # query heads of one group read one key head


def test_a_pattern_hook_on_a_mechanism_kernel_is_never_called(atlas):
    model = atlas.open("preset:alibi-lm")
    with pytest.raises(atlas.AtlasError, match="never called.*softmax"):
        model.run(TEXT, hooks={"blocks.0.attn.hook_pattern": lambda p: None})


def test_attn_out_and_mlp_out_are_what_the_residual_adds(atlas):
    # pre-norm: resid_post = (resid_pre + attn_out) + mlp_out, read in one run; blocks.0's
    # resid_pre is the stack's input (the embeddings entering layer 0)
    model = atlas.open(MODEL)
    seen = {}

    def keep(name):
        def fn(x):
            seen[name] = x.copy()
        return fn
    names = [f"blocks.{l}.{h}" for l in range(2) for h in ("hook_resid_pre", "hook_attn_out", "hook_mlp_out",
                                                           "hook_resid_post")]
    plain = model.run(TEXT)
    tr = model.run(TEXT, hooks={n: keep(n) for n in names})
    np.testing.assert_array_equal(tr.logits, plain.logits)  # reading changes nothing
    for l in range(2):
        b = f"blocks.{l}."
        mid = seen[b + "hook_resid_pre"] + seen[b + "hook_attn_out"]
        np.testing.assert_array_equal(seen[b + "hook_resid_post"], mid + seen[b + "hook_mlp_out"])
    np.testing.assert_array_equal(seen["blocks.1.hook_resid_pre"], seen["blocks.0.hook_resid_post"])
    assert seen["blocks.0.hook_resid_pre"].shape == (len(TEXT), model.config["d_model"])
    assert {"decoder.input", "decoder.layer0.ffn.out", "decoder.layer1.self_attn.out"} <= set(model.hook_names())


def test_replacing_the_embeddings_and_the_mlp_output(atlas):
    model = atlas.open(MODEL)
    other = TEXT[::-1]  # the same length
    got = {}
    target = model.run(other, hooks={"blocks.0.hook_resid_pre": lambda x: got.setdefault("e", x.copy())})
    # another text's embeddings in place of this one's: that text's run
    swapped = model.run(TEXT, hooks={"decoder.input": lambda x: got["e"]})
    np.testing.assert_array_equal(swapped.logits, target.logits)
    # a zeroed MLP output: layer 1's output is then its input plus its attention output
    seen = {}
    model.run(TEXT, hooks={"blocks.1.hook_mlp_out": lambda x: np.zeros_like(x),
                           "blocks.1.hook_resid_pre": lambda x: seen.setdefault("pre", x.copy()),
                           "blocks.1.hook_attn_out": lambda x: seen.setdefault("attn", x.copy()),
                           "blocks.1.hook_resid_post": lambda x: seen.setdefault("post", x.copy())})
    np.testing.assert_array_equal(seen["post"], seen["pre"] + seen["attn"])


@pytest.mark.parametrize("preset,ffn", [("tiny-xl", "decoder.layer1.ffn.out"), ("tiny-ut-act", "decoder.universal.ffn.out"),
                                        ("tiny-reformer", "blocks.1.hook_mlp_out")])
def test_mlp_out_and_the_stack_input_in_xl_universal_and_reversible_stacks(atlas, preset, ffn):
    # another text's stack inputs (one call per Transformer-XL segment, replayed in order) give
    # that text's run; a zero MLP output moves the logits
    model = atlas.open("preset:" + preset)
    text = "the quick brown fox jumps over the lazy dog, twice over"  # more than one XL segment
    other = text[::-1]
    inputs = []
    target = model.run(other, hooks={"decoder.input": lambda x: inputs.append(x.copy())})
    replay = iter(inputs)
    swapped = model.run(text, hooks={"decoder.input": lambda x: next(replay)})
    np.testing.assert_array_equal(swapped.logits, target.logits)
    assert next(replay, None) is None  # every segment's input was replaced
    plain = model.run(text).logits
    zeroed = model.run(text, hooks={ffn: np.zeros_like}).logits
    assert np.abs(zeroed - plain).max() > 1e-4


def numpy_layer_norm(x, eps):
    """LayerNorm of each row in float64 with gamma 1 and beta 0: a preset's norms as
    core/model/params.cpp initialises them (ones and zeros)."""
    x = x.astype(np.float64)
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + eps)


def keeper(seen, name):
    def fn(x):
        seen[name] = x.copy()
    return fn


def test_pre_norm_resid_mid_and_the_norms_outputs(atlas):
    # pre-norm: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out bit for bit;
    # ln1 normalises resid_pre, ln2 resid_mid, ln_final the last layer's output (numpy oracle)
    model = atlas.open(MODEL)
    eps = model.config["norm_eps"]
    seen = {}
    names = [f"blocks.{l}.{h}" for l in range(2) for h in (
        "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post",
        "ln1.hook_normalized", "ln2.hook_normalized")] + ["ln_final.hook_normalized", "decoder.layer1.resid_mid",
                                                        "decoder.layer0.ffn_norm", "decoder.layer1.resid_post"]
    plain = model.run(TEXT)
    tr = model.run(TEXT, hooks={n: keeper(seen, n) for n in names})
    np.testing.assert_array_equal(tr.logits, plain.logits)  # reading changes nothing
    for l in range(2):
        b = f"blocks.{l}."
        np.testing.assert_array_equal(seen[b + "hook_resid_mid"], seen[b + "hook_resid_pre"] + seen[b + "hook_attn_out"])
        np.testing.assert_array_equal(seen[b + "hook_resid_post"], seen[b + "hook_resid_mid"] + seen[b + "hook_mlp_out"])
        np.testing.assert_allclose(seen[b + "ln1.hook_normalized"], numpy_layer_norm(seen[b + "hook_resid_pre"], eps),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(seen[b + "ln2.hook_normalized"], numpy_layer_norm(seen[b + "hook_resid_mid"], eps),
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen["ln_final.hook_normalized"], numpy_layer_norm(seen["blocks.1.hook_resid_post"], eps),
                               rtol=1e-5, atol=1e-5)
    # the Atlas names and the aliases are one hook point
    np.testing.assert_array_equal(seen["decoder.layer1.resid_mid"], seen["blocks.1.hook_resid_mid"])
    np.testing.assert_array_equal(seen["decoder.layer0.ffn_norm"], seen["blocks.0.ln2.hook_normalized"])
    np.testing.assert_array_equal(seen["decoder.layer1.resid_post"], seen["blocks.1.hook_resid_post"])


def test_replacing_ln2_by_hand_leaves_the_logits_and_zeroing_ln_final_leaves_nothing(atlas):
    model = atlas.open(MODEL)
    eps = model.config["norm_eps"]
    plain = model.run(TEXT).logits
    mid = {}
    by_hand = model.run(TEXT, hooks={
        "blocks.1.hook_resid_mid": keeper(mid, "x"),
        "blocks.1.ln2.hook_normalized": lambda y: numpy_layer_norm(mid["x"], eps).astype(np.float32)}).logits
    np.testing.assert_allclose(by_hand, plain, rtol=1e-4, atol=1e-4)
    # not vacuous: ln2's output replaced by its input moves the logits
    moved = model.run(TEXT, hooks={"blocks.1.ln2.hook_normalized": lambda y: mid["x"]}).logits
    assert np.abs(moved - plain).max() > 1e-3
    # tiny-decoder's head is tied with no bias: a zero final state gives zero logits
    zeroed = model.run(TEXT, hooks={"ln_final.hook_normalized": np.zeros_like}).logits
    np.testing.assert_array_equal(zeroed, np.zeros_like(plain))


def test_post_norm_resid_mid_is_the_sum_before_ln1(atlas):
    # post-norm (TransformerLens's HookedEncoder): resid_mid = resid_pre + attn_out, ln1 its
    # norm; resid_post = ln1 + mlp_out before ln2; the layer's output is ln2's
    model = atlas.open("preset:tiny-encoder")
    eps = model.config["norm_eps"]
    seen = {}
    names = [f"blocks.{l}.{h}" for l in range(2) for h in (
        "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "ln1.hook_normalized", "hook_mlp_out",
        "ln2.hook_normalized", "hook_resid_post")] + ["encoder.layer0.resid_post"]
    model.run(TEXT, hooks={n: keeper(seen, n) for n in names})
    for l in range(2):
        b = f"blocks.{l}."
        np.testing.assert_array_equal(seen[b + "hook_resid_mid"], seen[b + "hook_resid_pre"] + seen[b + "hook_attn_out"])
        np.testing.assert_allclose(seen[b + "ln1.hook_normalized"], numpy_layer_norm(seen[b + "hook_resid_mid"], eps),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(seen[b + "hook_resid_post"], seen[b + "ln2.hook_normalized"])
    np.testing.assert_array_equal(seen["encoder.layer0.resid_post"],
                                  seen["blocks.0.ln1.hook_normalized"] + seen["blocks.0.hook_mlp_out"])
    with pytest.raises(KeyError, match="post-norm"):
        model.run(TEXT, hooks={"ln_final.hook_normalized": lambda y: None})


def test_resid_mid_and_norm_hooks_on_a_stack_that_does_not_call_them_are_an_error(atlas):
    model = atlas.open("preset:tiny-xl")
    for name in ("decoder.layer0.resid_mid", "decoder.layer0.ffn_norm"):
        with pytest.raises(atlas.AtlasError, match="never called.*Transformer-XL"):
            model.run(TEXT, hooks={name: lambda x: None})


@pytest.mark.parametrize("preset", ["tiny-decoder", "tiny-llama", "tiny-scalenorm"])
def test_hook_scale_is_each_rows_divisor_and_reading_it_changes_nothing(atlas, preset):
    # numpy oracle: LayerNorm sqrt(var + eps), RMSNorm sqrt(mean x^2 + eps), ScaleNorm max(|x|, eps)
    model = atlas.open("preset:" + preset)
    eps, kind = model.config["norm_eps"], model.config["norm"]
    seen = {}
    names = ["blocks.0.hook_resid_pre", "blocks.0.ln1.hook_scale", "blocks.1.hook_resid_mid", "blocks.1.ln2.hook_scale",
             "decoder.layer1.ffn_norm.scale"]
    plain = model.run(TEXT).logits
    hooked = model.run(TEXT, hooks={n: keeper(seen, n) for n in names}).logits
    np.testing.assert_array_equal(hooked, plain)

    def divisor(x):
        x = x.astype(np.float64)
        if kind == "layernorm":
            return np.sqrt(x.var(-1, keepdims=True) + eps)
        if kind == "rmsnorm":
            return np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)
        return np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps)
    assert seen["blocks.0.ln1.hook_scale"].shape == (len(TEXT), 1)
    np.testing.assert_allclose(seen["blocks.0.ln1.hook_scale"], divisor(seen["blocks.0.hook_resid_pre"]), rtol=1e-6)
    np.testing.assert_allclose(seen["blocks.1.ln2.hook_scale"], divisor(seen["blocks.1.hook_resid_mid"]), rtol=1e-6)
    np.testing.assert_array_equal(seen["decoder.layer1.ffn_norm.scale"], seen["blocks.1.ln2.hook_scale"])


def test_replacing_hook_scale_rescales_the_normalized_rows(atlas):
    # doubling row 3's scale of ln2 equals halving row 3 of ln2's output by hand (gamma 1, beta 0)
    model = atlas.open(MODEL)
    eps = model.config["norm_eps"]
    mid = {}

    def double_row(s):
        s[3] *= 2
    a = model.run(TEXT, hooks={"blocks.1.hook_resid_mid": keeper(mid, "x"),
                               "blocks.1.ln2.hook_scale": double_row}).logits

    def by_hand(y):
        y = numpy_layer_norm(mid["x"], eps)
        y[3] /= 2
        return y.astype(np.float32)
    b = model.run(TEXT, hooks={"blocks.1.ln2.hook_normalized": by_hand}).logits
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    plain = model.run(TEXT).logits
    np.testing.assert_array_equal(a[:3], plain[:3])  # a causal model: the rows before 3 are untouched
    assert np.abs(a[3] - plain[3]).max() > 1e-3
