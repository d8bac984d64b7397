"""Images as input from Python: Model.run(uint8 array) against `atlas run --image` on the same
pixels written as a binary PPM (the CLI decodes the file; Python hands over the array)."""
import numpy as np
import pytest

from conftest import cli_dump


def write_ppm(path, rgb):
    h, w, _ = rgb.shape
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + rgb.astype(np.uint8).tobytes())


@pytest.fixture
def picture():
    return np.random.default_rng(11).integers(0, 256, size=(37, 53, 3), dtype=np.uint8)


@pytest.mark.parametrize("model", ["preset:tiny-vit", "preset:tiny-local2d"])
def test_an_image_array_runs_as_the_cli_runs_its_file(atlas, tmp_path, picture, model):
    write_ppm(tmp_path / "in.ppm", picture)
    manifest, dumped = cli_dump(tmp_path, model, "--image", str(tmp_path / "in.ppm"))
    trace = atlas.open(model).run(picture)
    assert trace.tokens == [t["label"] for t in manifest["tokens"]]
    assert trace.ids == [t["id"] for t in manifest["tokens"]]
    maps = [m["name"] for m in trace.catalogue]
    assert maps
    for name in maps:
        assert np.array_equal(trace[name], dumped[name]), name


def test_a_grey_image_is_the_rgb_image_with_three_equal_channels(atlas):
    grey = np.random.default_rng(3).integers(0, 256, size=(20, 24), dtype=np.uint8)
    model = atlas.open("preset:tiny-vit")
    a = model.run(grey).logits
    b = model.run(np.repeat(grey[:, :, None], 3, axis=2)).logits
    assert np.array_equal(a, b)


def test_a_strided_view_reads_the_pixels_it_shows(atlas, picture):
    model = atlas.open("preset:tiny-vit")
    view = picture[::2, ::-1, :]  # not contiguous
    assert np.array_equal(model.run(view).logits, model.run(np.ascontiguousarray(view)).logits)


def test_analyses_take_images(atlas, picture):
    sweep = atlas.open("preset:tiny-vit").ablate(picture, sweep="layers", metric="kl")
    assert sweep["effects"].shape[1] == 1 and np.all(sweep["effects"] >= 0)


def test_bad_images_are_refused_with_the_reason(atlas, picture):
    vit = atlas.open("preset:tiny-vit")
    with pytest.raises(TypeError, match="uint8"):
        vit.run(picture.astype(np.float32) / 255)
    with pytest.raises(atlas.AtlasError, match="alpha"):
        vit.run(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(atlas.AtlasError, match=r"\[H, W\]"):
        vit.run(np.zeros((2, 8, 8, 3), np.uint8))
    with pytest.raises(atlas.AtlasError):
        vit.run(np.zeros((0, 8, 3), np.uint8))
    with pytest.raises(atlas.AtlasError, match="does not take images"):
        atlas.open("preset:tiny-decoder").run(picture)
