"""docs/python_example.ipynb executed headless, as a user would run it (Debian's nbconvert and
ipykernel, installed by scripts/setup.sh)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

NOTEBOOK = ROOT / "docs" / "python_example.ipynb"


def test_the_example_notebook_runs_and_shows_its_results(tmp_path):
    pytest.importorskip("nbconvert", reason="python3-nbconvert is not installed (scripts/setup.sh installs it)")
    pytest.importorskip("ipykernel", reason="python3-ipykernel is not installed (scripts/setup.sh installs it)")
    import nbformat
    import attention_atlas
    # the kernel runs in docs/: it finds the module through an absolute PYTHONPATH
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(attention_atlas.__file__).resolve().parents[1]))
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=300", "--output-dir", str(tmp_path), str(NOTEBOOK)],
                   check=True, capture_output=True, text=True, env=env, timeout=600)
    executed = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    text = "\n".join(out.get("text", "") for cell in executed.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))
    assert "decoder.layer0.self_attn" in text
    assert "True" in text  # pattern.base is tr: no copy
    change = float(text.split("without head 0.0:")[1].split()[0])
    assert change > 0  # the hook changed the logits
    assert not any(out.get("output_type") == "error" for cell in executed.cells
                   for out in cell.get("outputs", []))
    # the figure cell shows the app's heatmap inline: its SVG is the one Trace.figure draws
    svgs = [out["data"]["image/svg+xml"] for cell in executed.cells for out in cell.get("outputs", [])
            if "image/svg+xml" in out.get("data", {})]
    assert len(svgs) == 1
    svg = "".join(svgs[0]) if isinstance(svgs[0], list) else svgs[0]
    tr = attention_atlas.open("demo:induction").run("the cat sat on the mat. the cat sat on the mat.")
    assert svg == tr.figure(layer=1, head=2).svg()
    if shutil.which("rsvg-convert"):  # rendered, and not blank
        png = subprocess.run(["rsvg-convert", "-f", "png"], input=svg.encode(), capture_output=True,
                             check=True, timeout=60).stdout
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
