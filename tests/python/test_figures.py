"""Trace.figure: a view drawn by the app's painters. Oracles: `atlas export` of the same model,
input and selection (the SVG and PNG bytes and the .npy are the CLI's), and the trace's own
arrays (the figure's data is the selected map)."""
import numpy as np
import pytest

from conftest import run_cli

TEXT = "atlasofheadsatlasofheads"  # letters repeat: labels repeat


@pytest.fixture(scope="module")
def run(atlas):
    m = atlas.open("demo:induction")
    return m, m.run(TEXT)


def cli_export(tmp_path, name, *flags):
    out = tmp_path / name
    run_cli("export", "demo:induction", "--text", TEXT, *flags, "--out", str(out))
    return out


@pytest.mark.parametrize("flags, kwargs", [
    (("--layer", "1", "--head", "2"), dict(layer=1, head=2)),
    (("--view", "model"), dict(view="model")),
    (("--view", "tokens", "--layer", "1", "--head", "3", "--query", "20"), dict(view="tokens", layer=1, head=3, query=20)),
    (("--head", "rollout"), dict(head="rollout")),
    (("--layer", "0", "--head", "mean", "--colormap", "magma", "--scale", "log", "--normalize", "row"),
     dict(layer=0, head="mean", colormap="magma", scale="log", normalize="row")),
])
def test_a_figure_is_the_cli_export_byte_for_byte(run, tmp_path, flags, kwargs):
    _, tr = run
    fig = tr.figure(**kwargs)
    for ext in ("svg", "png"):
        cli = cli_export(tmp_path, "cli." + ext, *flags)
        mine = tmp_path / ("py." + ext)
        fig.save(str(mine))
        assert mine.read_bytes() == cli.read_bytes(), ext
    assert fig.svg() == (tmp_path / "cli.svg").read_text()
    assert fig.png() == (tmp_path / "cli.png").read_bytes()
    assert fig._repr_svg_() == fig.svg()
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_figure_data_is_the_selected_map_by_value(run, tmp_path):
    _, tr = run
    fig = tr.figure(layer=1, head=2)
    fig.save(str(tmp_path / "h.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "h.npy"), tr["decoder.layer1.self_attn"][2])
    assert fig.title == "decoder self-attention, layer 1, head 2"
    assert "layer 1, head 2" in fig.svg()
    pdf = tmp_path / "h.pdf"
    fig.save(str(pdf))
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_a_figure_outlives_its_trace_and_model(atlas):
    import gc
    m = atlas.open("demo:induction")
    tr = m.run(TEXT)
    expected = tr["decoder.layer0.self_attn"][1].copy()
    fig = tr.figure(layer=0, head=1)
    del tr, m
    gc.collect()
    assert fig.svg().startswith("<?xml")
    assert len(fig.png(dpi=30)) > 100
    assert expected.shape == (len(TEXT), len(TEXT))


def test_a_larger_dpi_gives_a_larger_png(run):
    _, tr = run
    fig = tr.figure(layer=1, head=0)
    small, large = fig.png(dpi=40), fig.png(dpi=160)
    width = lambda png: int.from_bytes(png[16:20], "big")
    assert width(large) == pytest.approx(4 * width(small), abs=2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(view="nope"), "view 'nope' is not one of heatmap, model"),
    (dict(layer=9), "--layer 9 is out of range: the decoder self-attention has 2 layers (0 to 1)"),
    (dict(head=7), "--head 7 is out of range"),
    (dict(head="median"), "--head 'median' is not a head number"),
    (dict(step=1), "--step is for Universal Transformer models"),
    (dict(segment=0), "--segment is for Transformer-XL models"),
    (dict(query=3), "query picks the query whose lines the tokens view draws"),
    (dict(view="tokens", query=99), "query 99 is out of range"),
    (dict(width=3), "give both width and height"),
    (dict(width=3, height=1e9), "between 0 and 100"),
    (dict(dpi=5), "dpi 5 is out of range"),
    (dict(colormap="jet"), "colormap 'jet' is not one of"),
    (dict(shared_scale=True), "shared_scale is for view=\"model\""),
])
def test_bad_figure_requests_raise_with_the_problem_named(run, atlas, kwargs, message):
    _, tr = run
    with pytest.raises(atlas.AtlasError) as e:
        tr.figure(**kwargs)
    assert message in str(e.value)


def test_saving_to_an_unknown_format_or_a_missing_folder_raises(run, atlas, tmp_path):
    _, tr = run
    fig = tr.figure()
    with pytest.raises(atlas.AtlasError):
        fig.save(str(tmp_path / "x.gif"))
    with pytest.raises(atlas.AtlasError):
        fig.save(str(tmp_path / "no" / "such" / "folder" / "x.svg"))
