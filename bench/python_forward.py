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


def median_ms(**options):
    model.run(ids, target=target, **options)  # warm-up, as atlas bench
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.run(ids, target=target, **options)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


python_ms = median_ms()
out = subprocess.run([cli, "bench", model_spec, "--length", str(length), "--repeats", str(repeats), "--json"],
                     capture_output=True, text=True, check=True).stdout
cli_ms = json.loads(out.strip().splitlines()[-1])["median_ms"]
print(f"{model.name} at {length} tokens: Python {python_ms:.2f} ms, atlas bench {cli_ms:.2f} ms, "
      f"ratio {python_ms / cli_ms:.3f}")

heads = [n for n in model.hook_names() if n.endswith(".heads")]
calls = len(heads)
hooked_ms = median_ms(hooks={n: (lambda a: None) for n in heads})
print(f"{calls} no-op hooks (copy in, call, copy back): +{hooked_ms - python_ms:.2f} ms per run, "
      f"{(hooked_ms - python_ms) / max(calls, 1) * 1e3:.0f} us per hook call")
