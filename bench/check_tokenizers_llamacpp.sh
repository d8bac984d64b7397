#!/usr/bin/env bash
# Atlas's tokenization of GGUF files against llama.cpp's own, text by text.
#   bench/check_tokenizers_llamacpp.sh ATLAS_BINARY FILE.gguf [FILE.gguf ...]
# For each file and each test text (contractions, digit runs, CJK, emoji, whitespace runs,
# newlines), the ids Atlas gives (`atlas run FILE --text T --dump DIR`, the manifest's "tokens")
# are compared with llama.cpp's (bench/llama_cpp_prompt.mjs --tokenize, through node-llama-cpp
# installed under $LLAMACPP_NODE_DIR, default ~/.cache/attention-atlas/llamacpp). Prints one line per text and exits non-zero on any mismatch.
# `atlas run` runs the model too, so small files keep this quick.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
atlas=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

texts=(
  "We'RE 1234567 déjà-vu你好 🙂!!"
  "Don't stop: it's 3.14159 and 1000000 items."
  $'line one\n\n  indented\tand\ttabbed   \n'
  "HelloWORLDFoo l'été Ελληνικά Русский текст 日本語のテキスト 한국어"
  "a\`b ١٢٣٤ ½ x²  ..."
  "   leading and trailing   "
)

failed=0
for file in "$@"; do
  for text in "${texts[@]}"; do
    rm -rf "$work/dump"
    "$atlas" run "$file" --text "$text" --dump "$work/dump" > /dev/null
    atlas_ids=$(python3 -c 'import json,sys; print(json.dumps([t["id"] for t in json.load(open(sys.argv[1]))["tokens"]]))' "$work/dump/manifest.json")
    llama_ids=$(node "$here/llama_cpp_prompt.mjs" "$file" --tokenize "$text" |
      python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["ids"]))')
    label=$(printf '%q' "$text")
    if [[ "$atlas_ids" == "$llama_ids" ]]; then
      echo "same      $(basename "$file") $label"
    else
      echo "DIFFERENT $(basename "$file") $label"
      echo "  atlas     $atlas_ids"
      echo "  llama.cpp $llama_ids"
      failed=1
    fi
  done
done
exit $failed
