#!/usr/bin/env python3
"""The table of bench/quant_vs_llamacpp.sh: Atlas against llama.cpp per file, length and thread
count, with medians over one or more result folders.

    quant_vs_llamacpp_table.py --files "1b-q8_0 ..." --lengths "128 512" --threads "1 2" DIR...

A folder holds, per run KEY = FILE-nN-tT: KEY.llama.json (bench/llama_cpp_prompt.mjs),
KEY.atlas.json (atlas bench --json), KEY.{llama,atlas}.time (/usr/bin/time -f '%M %e %U %S'),
KEY.{llama,atlas}.load (1-minute load average before the run), KEY.atlas.err.
"""
import argparse
import json
import os
import statistics


def read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def read_json(path):
    text = read(path)
    try:
        return json.loads(text.splitlines()[-1]) if text else None
    except ValueError:
        return None


def rss_wall(path):
    text = read(path)
    try:
        kb, wall = text.splitlines()[-1].split()[:2]
        return int(kb) / 1024.0, float(wall)
    except (AttributeError, ValueError, IndexError):
        return None, None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="%.0f"):
    return "-" if x is None else f % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", required=True)
    ap.add_argument("--lengths", required=True)
    ap.add_argument("--threads", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    row = "%-10s %4s %2s | %8s %8s %7s %6s %6s %-11s | %8s %6s %6s %-11s | %8s"
    head = row % ("file", "N", "T", "llama ms", "cpu ms", "tok/s", "RSS MB", "load s", "load1",
                  "Atlas ms", "RSS MB", "wall s", "load1", "Atlas/ll")
    print("\n" + head + "\n" + "-" * len(head))
    for f in a.files.split():
        for n in a.lengths.split():
            for t in a.threads.split():
                llama, atlas, failed = [], [], False
                for d in a.dirs:
                    k = os.path.join(d, "%s-n%s-t%s" % (f, n, t))
                    lj, aj = read_json(k + ".llama.json"), read_json(k + ".atlas.json")
                    if lj:
                        rss, _ = rss_wall(k + ".llama.time")
                        llama.append((lj["median_ms"], lj.get("cpu_ms_median"), rss,
                                      lj.get("load_s", 0) + lj.get("context_s", 0),
                                      read(k + ".llama.load")))
                    if aj:
                        rss, wall = rss_wall(k + ".atlas.time")
                        atlas.append((aj["median_ms"], rss, wall, read(k + ".atlas.load")))
                    elif read(k + ".atlas.err") is not None:
                        failed = True

                def col(rows, i):
                    return median([r[i] for r in rows])

                def loads(rows, i):
                    return "/".join(r[i] for r in rows if r[i]) or "-"

                lms, ams = col(llama, 0), col(atlas, 0)
                print(row % (
                    f, n, t, fmt(lms), fmt(col(llama, 1)),
                    fmt(int(n) * 1000 / lms if lms else None, "%.1f"), fmt(col(llama, 2)),
                    fmt(col(llama, 3), "%.2f"), loads(llama, 4),
                    fmt(ams) if ams else ("failed" if failed else "-"), fmt(col(atlas, 1)),
                    fmt(col(atlas, 2), "%.1f"), loads(atlas, 3),
                    fmt(ams / lms if ams and lms else None, "%.2f")))
    print("""
llama ms: llama.cpp's wall time for the prompt (one batch; logits as the JSON's "logits" field,
  by default the last position only), median of the in-process repeats, then the median over
  %d result folder(s). cpu ms: that process's CPU time per prompt (all threads; stretched less
  than the wall time by a loaded machine, but spinning threads count). load s: loadModel +
  createContext.
Atlas ms: atlas bench's median (every attention map traced, logits at every position). wall s:
  the whole process, load included. RSS: peak resident set (mapped file pages count).
load1: 1-minute load average just before each run, one per folder; read the times with it."""
          % len(a.dirs))


if __name__ == "__main__":
    main()
