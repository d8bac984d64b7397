#!/usr/bin/env node
// llama.cpp's prompt processing time on a GGUF file, through node-llama-cpp 3.x's prebuilt CPU
// binaries (never built here, never committed): the baseline of bench/quant_vs_llamacpp.sh.
//
//   node bench/llama_cpp_prompt.mjs MODEL.gguf [--tokens N] [--threads T] [--repeats R]
//        [--logits last|all|none] [--flash-attention auto|on|off] [--text TEXT]
//   node bench/llama_cpp_prompt.mjs MODEL.gguf --tokenize TEXT
//
// Timing mode prints one JSON object: the load time (getLlama excluded, loadModel + context
// creation reported separately), and the prompt time of N tokens evaluated in one batch
// (contextSize >= N, batchSize = N) into a fresh sequence, after one warm-up, as the median of
// R repeats (median_ms, wall; cpu_ms_median, the process's CPU time). Token ids are `atlas
// bench`'s ((i * 7 + 32) % vocab, no BOS) unless --text is given (its tokens, repeated to N).
// --logits: which positions get logits: "last" (as llama-bench and a real prompt do; default),
// "all" (every position, like a full forward that keeps every position's logits), "none"
// (llama.cpp then skips the output head).
// --tokenize mode prints {"text", "ids"} with llama.cpp's ids for TEXT (special tokens parsed,
// BOS added as the model's metadata asks).
//
// node-llama-cpp is looked up in $LLAMACPP_NODE_DIR (default
// ~/.cache/attention-atlas/llamacpp), installed with
//   npm install --omit=optional --ignore-scripts node-llama-cpp @node-llama-cpp/linux-x64
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";

function usage(msg) {
  if (msg) process.stderr.write(`llama_cpp_prompt: ${msg}\n`);
  process.stderr.write(
    "usage: node llama_cpp_prompt.mjs MODEL.gguf [--tokens N] [--threads T] [--repeats R]\n" +
      "         [--logits last|all|none] [--flash-attention auto|on|off] [--text TEXT]\n" +
      "       node llama_cpp_prompt.mjs MODEL.gguf --tokenize TEXT\n");
  process.exit(2);
}

const opts = { tokens: 128, threads: 1, repeats: 5, logits: "last", flash: "auto", text: null, tokenize: null };
let modelPath = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  if (a === "--tokens") opts.tokens = parseInt(value(), 10);
  else if (a === "--threads") opts.threads = parseInt(value(), 10);
  else if (a === "--repeats") opts.repeats = parseInt(value(), 10);
  else if (a === "--logits") opts.logits = value();
  else if (a === "--flash-attention") opts.flash = value();
  else if (a === "--text") opts.text = value();
  else if (a === "--tokenize") opts.tokenize = value();
  else if (a === "-h" || a === "--help") usage();
  else if (!a.startsWith("--") && modelPath === null) modelPath = a;
  else usage(`unknown argument ${a}`);
}
if (!modelPath) usage("no MODEL");
if (!(opts.tokens >= 1) || !(opts.threads >= 1) || !(opts.repeats >= 1)) usage("bad --tokens/--threads/--repeats");
if (!["last", "all", "none"].includes(opts.logits)) usage("--logits must be last, all or none");
if (!["auto", "on", "off"].includes(opts.flash)) usage("--flash-attention must be auto, on or off");

const nodeDir = process.env.LLAMACPP_NODE_DIR || path.join(os.homedir(), ".cache/attention-atlas/llamacpp");
let nlc, nlcVersion = "3.x";
try {
  const require = createRequire(path.join(nodeDir, "package.json"));
  const entry = require.resolve("node-llama-cpp");
  nlc = await import(pathToFileURL(entry).href);
  try {  // dist/index.js -> package.json
    nlcVersion = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), "..", "package.json"))).version;
  } catch {}
} catch (e) {
  process.stderr.write(`llama_cpp_prompt: node-llama-cpp not found under ${nodeDir} (${e.message})\n`);
  process.exit(3);
}
const { getLlama, LlamaLogLevel } = nlc;

// llama.cpp's log: kept (not printed) to report which CPU variant and buffer types it chose.
const log = [];
const t0 = performance.now();
const llama = await getLlama({
  gpu: false,
  build: "never",
  maxThreads: opts.threads,
  logLevel: LlamaLogLevel.debug,
  logger: (level, message) => {
    log.push(String(message).trimEnd());
    if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) process.stderr.write(`llama.cpp: ${message}`);
  },
});
const initS = (performance.now() - t0) / 1000;

const t1 = performance.now();
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const loadS = (performance.now() - t1) / 1000;

if (opts.tokenize !== null) {
  const ids = Array.from(model.tokenize(opts.tokenize, true));
  // model.tokenize does not add BOS; llama.cpp's tokenizer adds it when the file asks for it
  const bos = model.tokens.bos;
  const addBos = model.tokens.shouldPrependBosToken;
  process.stdout.write(JSON.stringify({ text: opts.tokenize, ids: addBos && bos != null ? [bos, ...ids] : ids,
                                        bos_added: Boolean(addBos && bos != null) }) + "\n");
  await model.dispose();
  await llama.dispose();
  process.exit(0);
}

let ids;
if (opts.text !== null) {
  const base = Array.from(model.tokenize(opts.text, false));
  if (base.length === 0) usage("--text has no tokens");
  ids = Array.from({ length: opts.tokens }, (_, i) => base[i % base.length]);
} else {
  // the vocabulary size: the tokenizer's token list (every file has one), else the arch's key
  const meta = model.fileInfo?.metadata ?? {};
  const arch = meta.general?.architecture;
  const vocabSize = meta.tokenizer?.ggml?.tokens?.length ?? (arch && meta[arch]?.vocab_size);
  if (!(vocabSize > 0)) usage("cannot tell the vocabulary size of the file");
  ids = Array.from({ length: opts.tokens }, (_, i) => (i * 7 + 32) % vocabSize);
}

const t2 = performance.now();
const flashAttention = opts.flash === "auto" ? undefined : opts.flash === "on";
const context = await model.createContext({
  contextSize: opts.tokens,
  batchSize: opts.tokens,
  threads: { ideal: opts.threads, min: opts.threads },
  sequences: 1,
  ...(flashAttention === undefined ? {} : { flashAttention }),
});
const contextS = (performance.now() - t2) / 1000;
const sequence = context.getSequence();

async function evaluateOnce() {
  await sequence.clearHistory();  // a fresh sequence: no cached prefix
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  if (opts.logits === "none") {
    await sequence.evaluateWithoutGeneratingNewTokens(ids);
  } else {
    const input = ids.map((id, i) =>
      opts.logits === "all" || i === ids.length - 1 ? [id, { generateNext: { token: true } }] : id);
    await sequence.controlledEvaluate(input);
  }
  const wall = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  cpuMs.push((cpu.user + cpu.system) / 1000);
  return wall;
}
const cpuMs = [];

await evaluateOnce();  // warm-up: first touch of the weights and buffers
cpuMs.length = 0;
const ms = [];
for (let r = 0; r < opts.repeats; ++r) ms.push(await evaluateOnce());
const sorted = [...ms].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)];

const pick = (re) => log.filter((l) => re.test(l));
const result = {
  engine: "llama.cpp (node-llama-cpp " + nlcVersion + ")",
  model: path.basename(modelPath),
  tokens: opts.tokens,
  threads: opts.threads,
  repeats: opts.repeats,
  logits: opts.logits,
  median_ms: median,
  min_ms: sorted[0],
  max_ms: sorted[sorted.length - 1],
  all_ms: ms,
  // CPU time of the whole process (every thread) per evaluation, median: on a loaded machine
  // the wall time stretches, this much less (threads that spin at barriers still count)
  cpu_ms_median: [...cpuMs].sort((a, b) => a - b)[Math.floor(cpuMs.length / 2)],
  tokens_per_s: (opts.tokens * 1000) / median,
  init_s: initS,
  load_s: loadS,
  context_s: contextS,
  context_size: context.contextSize,
  batch_size: context.batchSize,
  flash_attention: context.flashAttention,
  model_size_bytes: model.size,
  max_rss_kb: process.resourceUsage().maxRSS,
  cpu_backend: pick(/load_backend|CPU backend|libggml-cpu/i).slice(0, 3),
  buffers: pick(/buffer size/i),
  context_log: pick(/flash_attn|n_ubatch|n_threads/i).slice(0, 6),
  repacked_tensors: pick(/repack tensor/i).length,
  system_info: llama.systemInfo,
};
process.stdout.write(JSON.stringify(result) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
