#!/usr/bin/env python3
"""Baseline for bench_gpt2_torch: GPT-2-small's architecture in PyTorch (Debian's python3-torch),
random weights, float32, no grad, every attention map kept (as output_attentions=True keeps
them). Prints one JSON line per length: {"tokens": N, "median_ms": T}.
Usage: torch_gpt2.py LENGTH [LENGTH ...]   (run by bench_gpt2_torch)"""
import json
import math
import sys
import time

import torch

D, HEADS, LAYERS, VOCAB, CTX, FF = 768, 12, 12, 50257, 1024, 3072


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(D)
        self.c_attn = torch.nn.Linear(D, 3 * D)
        self.c_proj = torch.nn.Linear(D, D)
        self.ln_2 = torch.nn.LayerNorm(D)
        self.c_fc = torch.nn.Linear(D, FF)
        self.mlp_proj = torch.nn.Linear(FF, D)

    def forward(self, x, mask, maps):
        L = x.shape[0]
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=1)
        q, k, v = (t.view(L, HEADS, D // HEADS).transpose(0, 1) for t in (q, k, v))
        scores = q @ k.transpose(1, 2) / math.sqrt(D // HEADS)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        maps.append(probs)
        a = (probs @ v).transpose(0, 1).reshape(L, D)
        x = x + self.c_proj(a)
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D)
        self.wpe = torch.nn.Embedding(CTX, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(D)

    def forward(self, ids):
        L = ids.shape[0]
        x = self.wte(ids) + self.wpe(torch.arange(L))
        mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        maps = []
        for b in self.blocks:
            x = b(x, mask, maps)
        return self.ln_f(x) @ self.wte.weight.T, maps


def loaded_blas():
    """Debian's torch links the generic libblas.so.3; which library that is depends on the
    alternatives (libopenblas0-pthread installs OpenBLAS as the default)."""
    with open("/proc/self/maps") as maps:
        text = maps.read()
    for name in ("openblas", "blis", "mkl", "atlas"):
        if "lib" + name in text:
            return name
    return "reference BLAS (install libopenblas0-pthread)"


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = Gpt2().eval()
    for length in (int(a) for a in sys.argv[1:]):
        ids = torch.randint(0, VOCAB, (length,))
        times = []
        with torch.no_grad():
            model(ids)  # warm-up
            for _ in range(5):
                t0 = time.perf_counter()
                model(ids)
                times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        print(json.dumps({"tokens": length, "median_ms": times[len(times) // 2],
                          "torch": torch.__version__, "blas": loaded_blas()}), flush=True)


if __name__ == "__main__":
    main()
