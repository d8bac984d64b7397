"""Bad input is a Python exception with the engine's message (the CLI's), never a crash
(docs/bad-input.md, "Python module")."""
import pytest

from conftest import run_cli


def cli_message(*args):
    """The message the CLI prints for the same bad input (its stderr, non-zero exit)."""
    proc = run_cli(*args, check=False)
    assert proc.returncode != 0
    return proc.stderr


def test_atlas_error_is_a_runtime_error(atlas):
    assert issubclass(atlas.AtlasError, RuntimeError)


def test_a_missing_file(atlas, tmp_path):
    path = str(tmp_path / "nowhere" / "model.safetensors")
    with pytest.raises(atlas.AtlasError) as e:
        atlas.open(path)
    assert "nowhere" in str(e.value)
    assert str(e.value) in cli_message("run", path, "--text", "x")


def test_a_corrupt_safetensors_file(atlas, tmp_path):
    path = tmp_path / "broken.safetensors"
    path.write_bytes(b"\xff\xff\xff\xff\xff\xff\xff\x7fnot a header")
    with pytest.raises(atlas.AtlasError) as e:
        atlas.open(str(path))
    assert "broken.safetensors" in str(e.value)
    assert str(e.value) in cli_message("run", str(path), "--text", "x")


def test_a_corrupt_gguf_file(atlas, tmp_path):
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 24)
    with pytest.raises(atlas.AtlasError) as e:
        atlas.open(str(path))
    assert "broken.gguf" in str(e.value)


def test_an_unknown_preset(atlas):
    with pytest.raises(atlas.AtlasError, match="no-such-model") as e:
        atlas.open("preset:no-such-model")
    assert str(e.value) in cli_message("run", "preset:no-such-model", "--text", "x")


def test_an_unknown_backend(atlas):
    with pytest.raises(atlas.AtlasError, match="backend"):
        atlas.open("preset:tiny-decoder", backend="tpu")


def test_empty_text(atlas):
    with pytest.raises(atlas.AtlasError, match="empty") as e:
        atlas.open("preset:tiny-decoder").run("")
    assert str(e.value) in cli_message("run", "preset:tiny-decoder", "--text", "")


def test_over_long_input(atlas):
    model = atlas.open("preset:tiny-decoder")  # max_positions 1024, one token a byte
    with pytest.raises(atlas.AtlasError, match="1024") as e:
        model.run("a" * 1100)
    assert str(e.value) in cli_message("run", "preset:tiny-decoder", "--text", "a" * 1100)
    with pytest.raises(atlas.AtlasError, match="max_positions"):
        model.run([97] * 1100)


def test_token_ids_outside_the_vocabulary_and_of_the_wrong_type(atlas):
    model = atlas.open("preset:tiny-decoder")
    with pytest.raises(atlas.AtlasError, match="token id 300 is outside the vocabulary of 256"):
        model.run([1, 2, 300])
    with pytest.raises(TypeError, match="integers"):
        model.run([1, 2.5])
    with pytest.raises(TypeError):
        model.run(3.0)


def test_a_target_for_a_model_without_a_decoder_input(atlas):
    with pytest.raises(atlas.AtlasError, match="encoder-decoder"):
        atlas.open("preset:tiny-decoder").run("abc", target="def")


def test_an_unknown_maps_value(atlas):
    with pytest.raises(atlas.AtlasError, match="on-demand"):
        atlas.open("preset:tiny-decoder").run("abc", maps="sometimes")


def test_a_run_the_memory_guard_refuses(atlas, monkeypatch):
    monkeypatch.setenv("ATLAS_MEMORY_BUDGET", "2M")  # read at each check (core/model/memory_budget.h)
    model = atlas.open("preset:tiny-decoder")
    text = "a" * 1000  # 4 heads x 1000 x 1000 float32 maps per layer: far above 2 MB
    with pytest.raises(atlas.AtlasError, match="ATLAS_MEMORY_BUDGET") as e:
        model.run(text, scores=True)
    assert str(e.value) in cli_message("run", "preset:tiny-decoder", "--text", text, "--scores")
