#!/usr/bin/env bash
# Prompt processing of quantized Llama files: Atlas against llama.cpp on the same GGUF files.
#
#   bench/quant_vs_llamacpp.sh [--files "1b-q8_0 1b-q4_k_m 8b-q4_k_m"] [--lengths "128 512"]
#                              [--threads "1 2"] [--repeats R] [--no-atlas] [--no-llamacpp]
#                              [--logits last|all|none] [--table-also DIR]...
#   bench/quant_vs_llamacpp.sh --table-only DIR [--table-also DIR]... [--files ...] ...
#
# Files: $ATLAS_BIG_MODELS (default /work/bigmodels)/NAME.gguf, NAME = SHAPE-TYPE (shape 1b or
# 8b, type q8_0, q4_k_m, f16 or bf16), made with random weights by bench/make_llama_gguf.cpp
# (compiled here with g++ into build/bench-tools/) when missing, under nice -n 5.
# llama.cpp: bench/llama_cpp_prompt.mjs through node-llama-cpp's prebuilt CPU binaries in
# $LLAMACPP_NODE_DIR (default ~/.cache/attention-atlas/llamacpp; installed there if missing with
#   npm install --omit=optional --ignore-scripts node-llama-cpp @node-llama-cpp/linux-x64).
# Atlas: `$ATLAS_BIN bench FILE --length N --threads T --repeats R --json` (default
# build/release/app/atlas), under a virtual-memory limit (85% of RAM, or MemAvailable less 3 GB
# if lower) so that a load that would not fit fails cleanly instead of meeting the OOM killer;
# a failure is reported and the run goes on.
# Both are timed after a warm-up, median of R repeats in one process; peak RSS, wall, user and
# system time of each process by /usr/bin/time (file pages of a mapped model count); the Atlas
# binary's date and checksum per run in KEY.atlas.bin. Timing runs are not niced. The 1-minute
# load average before each run is printed next to it: on a shared machine read the figures
# with it. Raw JSON and logs go to $OUT_DIR (default $ATLAS_BIG_MODELS/results-DATE); the table
# gives medians over that folder and those of earlier runs named with --table-also (repeat the
# whole run on a noisy machine). --table-only DIR prints the table of folders without running.
#
# What is compared: llama.cpp evaluates the prompt in one batch with logits for the last
# position only (--logits last, as llama-bench does); atlas bench runs a full forward with every
# attention map traced and logits at every position. --logits all makes llama.cpp compute every
# position's logits too (the output head then costs the same on both sides).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS=${ATLAS_BIG_MODELS:-/work/bigmodels}
ATLAS=${ATLAS_BIN:-$ROOT/build/release/app/atlas}
NODE_DIR=${LLAMACPP_NODE_DIR:-$HOME/.cache/attention-atlas/llamacpp}
GEN=$ROOT/build/bench-tools/make_llama_gguf
FILES="1b-q8_0 1b-q4_k_m 8b-q4_k_m"
LENGTHS="128 512"
THREADS="1 2"
REPEATS=""
LOGITS=last
RUN_ATLAS=1
RUN_LLAMA=1
TABLE_ALSO=()
TABLE_ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --files) FILES=$2; shift 2 ;;
    --lengths) LENGTHS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --logits) LOGITS=$2; shift 2 ;;
    --no-atlas) RUN_ATLAS=0; shift ;;
    --no-llamacpp) RUN_LLAMA=0; shift ;;
    --table-also) TABLE_ALSO+=("$2"); shift 2 ;;
    --table-only) TABLE_ONLY=$2; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "quant_vs_llamacpp: unknown argument $1" >&2; exit 2 ;;
  esac
done
table() {
  python3 "$ROOT/bench/quant_vs_llamacpp_table.py" --files "$FILES" --lengths "$LENGTHS" \
    --threads "$THREADS" "$OUT" ${TABLE_ALSO[@]+"${TABLE_ALSO[@]}"}
}
if [ -n "$TABLE_ONLY" ]; then
  OUT=$TABLE_ONLY
  table
  exit
fi
OUT=${OUT_DIR:-$MODELS/results-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$MODELS" "$OUT" || exit 1
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "quant_vs_llamacpp: /usr/bin/time is needed for peak RSS" >&2; exit 1; }

# 1. The generator and the files.
if [ ! -x "$GEN" ] || [ "$ROOT/bench/make_llama_gguf.cpp" -nt "$GEN" ]; then
  mkdir -p "$(dirname "$GEN")"
  echo "compiling $GEN"
  g++ -std=c++20 -O2 "$ROOT/bench/make_llama_gguf.cpp" -o "$GEN" || exit 1
fi
for f in $FILES; do
  path=$MODELS/$f.gguf
  [ -f "$path" ] && continue
  shape=${f%%-*}
  type=${f#*-}
  echo "generating $path"
  nice -n 5 "$GEN" --shape "$shape" --type "$type" -o "$path" || { echo "could not make $path" >&2; exit 1; }
done

# 2. llama.cpp through node-llama-cpp.
if [ "$RUN_LLAMA" = 1 ] && [ ! -d "$NODE_DIR/node_modules/node-llama-cpp" ]; then
  echo "installing node-llama-cpp into $NODE_DIR"
  mkdir -p "$NODE_DIR" && (cd "$NODE_DIR" &&
    npm install --omit=optional --ignore-scripts node-llama-cpp @node-llama-cpp/linux-x64 >npm.log 2>&1) ||
    { echo "npm install failed, see $NODE_DIR/npm.log" >&2; RUN_LLAMA=0; }
fi
if [ "$RUN_ATLAS" = 1 ] && [ ! -x "$ATLAS" ]; then
  echo "no Atlas binary at $ATLAS: Atlas runs skipped"
  RUN_ATLAS=0
fi
MEM_KB=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
vmem_kb() {  # 85% of RAM, or what is available less 3 GB for the rest of the machine if lower
  local avail
  avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  avail=$((avail - 3 * 1024 * 1024))
  local cap=$((MEM_KB * 85 / 100))
  [ "$avail" -lt "$cap" ] && cap=$avail
  echo "$cap"
}

load1() { cut -d' ' -f1 /proc/loadavg; }
repeats_for() {  # fewer repeats on the 8B files unless asked
  if [ -n "$REPEATS" ]; then echo "$REPEATS"; elif [ "${1%%-*}" = 8b ]; then echo 3; else echo 5; fi
}

echo "results in $OUT; machine: $(nproc) cores, $((MEM_KB / 1024 / 1024)) GB RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
for f in $FILES; do
  path=$MODELS/$f.gguf
  cat "$path" >/dev/null  # warm page cache, as for a model opened before
  for n in $LENGTHS; do
    for t in $THREADS; do
      r=$(repeats_for "$f")
      key=$f-n$n-t$t
      if [ "$RUN_LLAMA" = 1 ]; then
        echo "$(load1)" >"$OUT/$key.llama.load"
        $TIME -f '%M %e %U %S' -o "$OUT/$key.llama.time" \
          node "$ROOT/bench/llama_cpp_prompt.mjs" "$path" --tokens "$n" --threads "$t" --repeats "$r" \
          --logits "$LOGITS" >"$OUT/$key.llama.json" 2>"$OUT/$key.llama.err" ||
          echo "llama.cpp failed on $key (see $OUT/$key.llama.err)"
      fi
      if [ "$RUN_ATLAS" = 1 ]; then
        echo "$(load1)" >"$OUT/$key.atlas.load"
        # which build ran: the binary may be rebuilt between runs
        echo "$(stat -c '%y' "$ATLAS") $(md5sum <"$ATLAS" | cut -c1-12)" >"$OUT/$key.atlas.bin"
        (ulimit -v "$(vmem_kb)"
         exec $TIME -f '%M %e %U %S' -o "$OUT/$key.atlas.time" \
           "$ATLAS" bench "$path" --length "$n" --threads "$t" --repeats "$r" --json) \
          >"$OUT/$key.atlas.json" 2>"$OUT/$key.atlas.err" ||
          echo "Atlas failed on $key: $(grep -v '^Command exited' "$OUT/$key.atlas.err" | grep -v '^\s*$' | tail -1 | cut -c1-200)"
      fi
      echo "done $key (load before: llama.cpp $(cat "$OUT/$key.llama.load" 2>/dev/null || echo -), Atlas $(cat "$OUT/$key.atlas.load" 2>/dev/null || echo -))"
    done
  done
done

# 3. The table (bench/quant_vs_llamacpp_table.py): medians over this run's folder and any
# given with --table-also.
table
