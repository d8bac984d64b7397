"""attention_atlas.open, config, tokenize and run against the CLI's own dumps and the preset files."""
import json

import numpy as np
import pytest

from conftest import ROOT, cli_dump

TEXT = "the cat sat on the mat"


def test_config_holds_the_preset_files_values(atlas):
    model = atlas.open("preset:tiny-decoder")
    preset = json.loads((ROOT / "assets" / "presets" / "tiny-decoder.json").read_text())
    config = model.config
    assert isinstance(config, dict)
    for key, value in preset.items():
        if key in config and not isinstance(value, dict):
            assert config[key] == value, key
    assert config["n_layers"] == 2 and config["n_heads"] == 4


def test_tokenize_matches_the_cli_tokens(atlas, tmp_path):
    manifest, _ = cli_dump(tmp_path, "preset:tiny-decoder", "--text", TEXT)
    ids, labels = atlas.open("preset:tiny-decoder").tokenize(TEXT)
    assert ids == [t["id"] for t in manifest["tokens"]]
    assert labels == [t["label"] for t in manifest["tokens"]]
    assert len(ids) == len(TEXT.encode())  # the bytes tokenizer: one token a byte


# Models of different kinds: causal decoder, encoder, encoder-decoder (a target), sparse (CSR
# arrays and int32 companions), LSH (int32 buckets).
CASES = [
    ("preset:tiny-decoder", ["--scores", "--hidden"], dict(scores=True, hidden=True)),
    ("preset:tiny-encoder", ["--scores", "--value-norms"], dict(scores=True, value_norms=True)),
    ("preset:tiny-encoder-decoder", ["--target", "le chat", "--hidden"], dict(target="le chat", hidden=True)),
    ("preset:tiny-sparse-strided", [], {}),
    ("preset:tiny-reformer", [], {}),
]


@pytest.mark.parametrize("spec,flags,options", CASES, ids=[c[0] for c in CASES])
def test_arrays_equal_the_cli_dump_by_value(atlas, tmp_path, spec, flags, options):
    manifest, dumped = cli_dump(tmp_path, spec, "--text", TEXT, *flags)
    trace = atlas.open(spec).run(TEXT, **options)
    assert trace.names() == [a["name"] for a in manifest["arrays"]]
    for entry in manifest["arrays"]:
        name = entry["name"]
        got = trace[name]
        assert got.dtype == dumped[name].dtype, name
        assert got.shape == dumped[name].shape, name
        assert np.array_equal(got, dumped[name], equal_nan=True), name
        assert trace.meaning(name) == entry["meaning"]
    assert trace.tokens == [t["label"] for t in manifest["tokens"]]
    assert trace.ids == [t["id"] for t in manifest["tokens"]]
    if "target_tokens" in manifest:
        assert trace.target_tokens == [t["label"] for t in manifest["target_tokens"]]


@pytest.mark.parametrize("spec", ["preset:tiny-decoder", "preset:tiny-sparse-strided", "preset:tiny-encoder-decoder"])
def test_catalogue_describes_the_maps_the_cli_describes(atlas, tmp_path, spec):
    extra = ["--target", "le chat"] if "encoder-decoder" in spec else []
    manifest, dumped = cli_dump(tmp_path, spec, "--text", TEXT, *extra)
    trace = atlas.open(spec).run(TEXT, target="le chat" if extra else None)
    catalogue = trace.catalogue
    assert [m["name"] for m in catalogue] == [m["array"] for m in manifest["attention_maps"]]
    for mine, theirs in zip(catalogue, manifest["attention_maps"]):
        for key in ("stack", "sublayer", "layer", "kind", "heads", "queries", "keys", "normalized", "storage"):
            assert mine[key] == theirs[key], (mine["name"], key)
        if mine["shape"] is not None:
            assert mine["shape"] == dumped[mine["name"]].shape
        if "mask" in theirs:
            assert mine["companions"]["mask"] == theirs["mask"]


def test_run_on_ids_equals_run_on_text(atlas):
    model = atlas.open("preset:tiny-decoder")
    ids, labels = model.tokenize(TEXT)
    by_text, by_ids = model.run(TEXT), model.run(ids)
    assert by_ids.tokens == labels
    assert np.array_equal(by_text.logits, by_ids.logits)
    assert np.array_equal(by_ids.logits, model.run(np.array(ids, dtype=np.int64)).logits)


def test_logits_and_output(atlas):
    trace = atlas.open("preset:tiny-decoder").run(TEXT)
    assert trace.logits.shape == (len(TEXT), 256)
    assert np.shares_memory(trace.logits, trace["logits"])


def test_the_vulkan_backend_runs_the_same_model(atlas):
    try:
        gpu = atlas.open("preset:tiny-decoder", backend="vulkan")
    except atlas.AtlasError as e:
        pytest.skip(f"no Vulkan device: {e}")
    assert gpu.backend == "vulkan"
    on_gpu, on_cpu = gpu.run(TEXT), atlas.open("preset:tiny-decoder").run(TEXT)
    assert on_gpu.names() == on_cpu.names()
    # float32 on another device: the same values up to rounding
    assert np.allclose(on_gpu.logits, on_cpu.logits, rtol=1e-3, atol=1e-4)
    assert np.allclose(on_gpu["blocks.1.attn.hook_pattern"], on_cpu["blocks.1.attn.hook_pattern"], atol=1e-5)
    assert not on_gpu.logits.flags.owndata and on_gpu.logits.base is on_gpu
