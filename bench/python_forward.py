#!/usr/bin/env python3
"""A forward from Python (attention_atlas) against the CLI's `atlas bench` on the same model and
tokens, and the cost of one Python hook call (docs/python.md). Not a test: timings, no asserts.

    PYTHONPATH=build/release/python python3 bench/python_forward.py [MODEL] [LENGTH] [REPEATS]

MODEL defaults to preset:vanilla-base, LENGTH to 128, REPEATS to 9. The CLI is
build/release/app/atlas (ATLAS_CLI overrides it).
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import attention_atlas as aa

root = pathlib.Path(__file__).resolve().parents[1]
cli = os.environ.get("ATLAS_CLI", str(root / "build" / "release" / "app" / "atlas"))
model_spec = sys.argv[1] if len(sys.argv) > 1 else "preset:vanilla-base"
length = int(sys.argv[2]) if len(sys.argv) > 2 else 128
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 9

model = aa.open(model_spec)
vocab = model.config["vocab_size"]
ids = [(i * 7 + 32) % vocab for i in range(length)]  # atlas bench's synthetic tokens (cmd_bench.cpp)
target = ids if model.config["architecture"] == "encoder-decoder" else None


def forward_ms(**options):
    t0 = time.perf_counter()
    trace = model.run(ids, target=target, **options)
    ms = (time.perf_counter() - t0) * 1e3
    del trace  # freed outside the timing, as atlas bench's result is
    return ms


def cli_ms():
    out = subprocess.run([cli, "bench", model_spec, "--length", str(length), "--repeats", str(repeats), "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


# Rounds alternate between Python and the CLI so that a busy neighbour weighs on both alike.
forward_ms()  # warm-up, as atlas bench's
python, native = [], []
for _ in range(3):
    python.append(statistics.median(forward_ms() for _ in range(repeats)))
    native.append(cli_ms())
python_ms, native_ms = statistics.median(python), statistics.median(native)
print(f"{model.name} at {length} tokens: Python {python_ms:.2f} ms, atlas bench {native_ms:.2f} ms, "
      f"ratio {python_ms / native_ms:.3f}")

# A no-op hook on every attention sub-layer: paired runs with and without, median difference.
hooks = {n: (lambda a: None) for n in model.hook_names() if n.endswith(".heads")}
differences = [forward_ms(hooks=hooks) - forward_ms() for _ in range(3 * repeats)]
extra = statistics.median(differences)
print(f"{len(hooks)} no-op hooks (copy in, call, copy back): {extra:+.2f} ms per run, "
      f"{extra / max(len(hooks), 1) * 1e3:.0f} us per hook call")
