"""Fixtures of the attention_atlas tests: the CLI they compare with, and its dumps.

ctest runs these with PYTHONPATH=<build>/python and ATLAS_CLI=<build>/app/atlas
(tests/python/CMakeLists.txt); by hand:
    PYTHONPATH=build/release/python ATLAS_CLI=build/release/app/atlas python3 -m pytest tests/python -q
"""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("ATLAS_CLI", str(ROOT / "build" / "release" / "app" / "atlas"))


def run_cli(*args, check=True):
    """Runs the atlas CLI; returns the CompletedProcess (text output)."""
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"atlas {' '.join(args)} failed: {proc.stderr}")
    return proc


def cli_dump(tmp_path, model, *args):
    """atlas run MODEL ARGS --dump DIR: (manifest dict, {name: array read with numpy.load})."""
    out = tmp_path / "dump"
    run_cli("run", model, *args, "--dump", str(out))
    manifest = json.loads((out / "manifest.json").read_text())
    arrays = {a["name"]: np.load(out / a["file"]) for a in manifest["arrays"]}
    return manifest, arrays


@pytest.fixture(scope="session")
def atlas():
    import attention_atlas
    return attention_atlas
