"""Model.panel_figure / panel_plots / panels(): a variant panel's plot drawn as `atlas export
--panel` draws it. Oracles: the CLI's export of the same model, input, panel, plot and selection
(SVG bytes; the .npy is the plot's data), its --list-plots, and its refusals."""
import numpy as np
import pytest

from conftest import run_cli

XL_TEXT = "abababababababababababab"  # two segments of tiny-xl, labels repeat


def cli_panel(tmp_path, model, text, panel, *flags, ext="svg"):
    out = tmp_path / f"cli.{ext}"
    run_cli("export", model, "--text", text, "--panel", panel, *flags, "--out", str(out))
    return out


def test_panels_lists_the_apps_panels(atlas):
    panels = atlas.panels()
    for pid in ("xl", "lsh", "act", "lens", "heads", "qk"):
        assert pid in panels
    assert panels["xl"] == "Transformer-XL"
    listed = run_cli("export", "--help").stdout + run_cli("export", "--help").stderr
    assert all(pid in listed for pid in panels)


@pytest.mark.parametrize("model, text, panel, plot, flags, kwargs", [
    ("preset:tiny-xl", XL_TEXT, "xl", 1, ("--layer", "1", "--head", "2"), dict(layer=1, head=2)),
    ("preset:tiny-reformer", "abab abab abab", "lsh", 0, (), {}),
    ("preset:tiny-ut-act", "abab abab", "act", 0, (), {}),
    ("demo:induction", "abab abab", "lens", 0, (), {}),
    ("demo:induction", "abab abab", "heads", 0, (), {}),
    ("demo:induction", "abab abab", "predictions", 0, ("--query", "3"), dict(query=3)),
])
def test_a_panel_figure_is_the_cli_export_byte_for_byte(atlas, tmp_path, model, text, panel, plot, flags, kwargs):
    m = atlas.open(model)
    names = m.panel_plots(text, panel, **kwargs)
    listed = run_cli("export", model, "--text", text, "--panel", panel, *flags, "--list-plots").stdout.splitlines()
    assert [f"{i}: {n}" for i, n in enumerate(names)] == listed
    fig = m.panel_figure(text, panel, plot, **kwargs)
    cli = cli_panel(tmp_path, model, text, panel, "--plot", str(plot), *flags)
    assert fig.svg() == cli.read_text()
    mine = tmp_path / "py.npy"
    fig.save(str(mine))
    np.testing.assert_array_equal(np.load(mine), np.load(cli_panel(tmp_path, model, text, panel, "--plot", str(plot),
                                                                   *flags, ext="npy")))


def test_a_plot_is_chosen_by_a_part_of_its_name(atlas, tmp_path):
    m = atlas.open("preset:tiny-xl")
    with pytest.raises(atlas.AtlasError, match="names several plots"):  # one per segment
        m.panel_figure(XL_TEXT, "xl", "score terms", layer=0, head=1)
    by_name = m.panel_figure(XL_TEXT, "xl", "segment 0, layer 0, head 1: score", layer=0, head=1)
    assert "score terms a | b | c | d" in by_name.title
    assert by_name.svg() == m.panel_figure(XL_TEXT, "xl", 1, layer=0, head=1).svg()
    # The XL score terms (traced with scores) are in: the figure is wider than the attention one.
    assert by_name.size_inches[0] > m.panel_figure(XL_TEXT, "xl", 0, layer=0, head=1).size_inches[0]


@pytest.mark.parametrize("args, kwargs, message", [
    (("abab", "nope"), {}, "panel 'nope' is not a panel; the panels are"),
    (("abab", "xl"), {}, "the Transformer-XL panel has nothing to draw for this model"),
    (("abab", "lens", 99), {}, "--plot 99 is out of range"),
    (("abab", "lens", "no such plot"), {}, "no such plot"),
    (("abab", "heads"), dict(layer=99), "--layer 99"),
    (("abab", "ablation"), {}, "the ablation panel compares with an ablated run"),
    (("abab", "lens"), dict(dpi=5), "dpi 5 is out of range"),
    (("abab", "lens"), dict(width=3), "give both width and height"),
])
def test_bad_panel_requests_raise_atlas_errors(atlas, args, kwargs, message):
    m = atlas.open("demo:induction")
    with pytest.raises(atlas.AtlasError, match=message.replace("|", r"\|").replace("(", r"\(")):
        m.panel_figure(*args, **kwargs)


def test_a_plot_argument_of_another_type_is_a_type_error(atlas):
    m = atlas.open("demo:induction")
    with pytest.raises(TypeError):
        m.panel_figure("abab", "lens", 1.5)
