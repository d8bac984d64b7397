"""TransformerLens names as aliases of Atlas's arrays (docs/python.md, "TransformerLens names")."""
import numpy as np
import pytest

TEXT = "aliases of arrays"


@pytest.fixture(scope="module")
def decoder_trace(atlas):
    return atlas.open("preset:tiny-decoder").run(TEXT, hidden=True, scores=True, qk=True)


def test_hook_pattern_is_the_layers_self_attention(decoder_trace):
    for layer in range(2):
        pattern = decoder_trace[f"blocks.{layer}.attn.hook_pattern"]
        atlas_map = decoder_trace[f"decoder.layer{layer}.self_attn"]
        assert pattern.shape == (4, len(TEXT), len(TEXT))  # [heads, q, k]: no batch axis
        assert np.array_equal(pattern, atlas_map)
        # the oracle of a causal softmax: rows sum to one, nothing above the diagonal
        assert np.allclose(pattern.sum(-1), 1.0, atol=1e-5)
        assert np.all(np.triu(pattern, k=1) == 0)


def test_residual_aliases_are_the_hidden_states(decoder_trace):
    assert np.array_equal(decoder_trace["blocks.0.hook_resid_post"], decoder_trace["decoder.layer0.hidden"])
    assert np.array_equal(decoder_trace["blocks.1.hook_resid_post"], decoder_trace["decoder.layer1.hidden"])
    assert np.array_equal(decoder_trace["blocks.1.hook_resid_pre"], decoder_trace["decoder.layer0.hidden"])


def test_scores_q_and_k_aliases(decoder_trace):
    assert np.array_equal(decoder_trace["blocks.1.attn.hook_attn_scores"],
                          decoder_trace["decoder.layer1.self_attn.scores"])
    q = decoder_trace["blocks.0.attn.hook_q"]
    flat = decoder_trace["decoder.layer0.self_attn.q"]  # [L, heads * d_head]
    assert q.shape == (len(TEXT), 4, 16)
    for h in range(4):  # head h is columns h*16 .. (h+1)*16 of the flat array
        assert np.array_equal(q[:, h, :], flat[:, h * 16:(h + 1) * 16])
    assert np.shares_memory(q, flat)
    assert decoder_trace["blocks.0.attn.hook_k"].shape == (len(TEXT), 4, 16)


def test_aliases_are_listed_and_contained(decoder_trace):
    aliases = decoder_trace.aliases()
    assert "blocks.1.attn.hook_pattern" in aliases and "blocks.0.hook_resid_post" in aliases
    assert "blocks.0.hook_resid_pre" not in aliases
    assert "blocks.0.attn.hook_pattern" in decoder_trace
    assert "blocks.7.attn.hook_pattern" not in decoder_trace


def test_unknown_names_raise_key_error_naming_the_nearest(decoder_trace):
    with pytest.raises(KeyError, match="blocks.0.attn.hook_pattern"):
        decoder_trace["blocks.0.attn.hook_patern"]
    with pytest.raises(KeyError, match="decoder.layer1.self_attn"):
        decoder_trace["decoder.layer1.self_atn"]
    with pytest.raises(KeyError, match="2 layers"):
        decoder_trace["blocks.5.attn.hook_pattern"]
    with pytest.raises(KeyError, match="embeddings"):
        decoder_trace["blocks.0.hook_resid_pre"]


def test_an_alias_of_an_untraced_array_says_which_option_traces_it(atlas):
    trace = atlas.open("preset:tiny-decoder").run(TEXT)
    with pytest.raises(KeyError, match="hidden=True"):
        trace["blocks.0.hook_resid_post"]


def test_encoder_aliases_name_the_encoder_layers(atlas):
    trace = atlas.open("preset:tiny-encoder").run(TEXT)
    assert np.array_equal(trace["blocks.1.attn.hook_pattern"], trace["encoder.layer1.attn"])


def test_encoder_decoder_models_have_no_blocks_aliases(atlas):
    trace = atlas.open("preset:tiny-encoder-decoder").run(TEXT, target="x")
    with pytest.raises(KeyError, match="one stack"):
        trace["blocks.0.attn.hook_pattern"]
