// Issue 17's speed targets in one sitting. Each round runs skiff and the
// peer of every target in turn, so that load on the machine falls on both
// alike; at the end it prints, per target, the figure or ratio of every
// round, their median and the rounds that met the target (a markdown table,
// for benches/README.md). Not part of `npm test`: timings are never asserted.
//
//   node benches/peers/targets.mjs [rounds]        (default 5)
//
// Per round, in this order:
//   - Chromium, WebGPU (SwiftShader): skiff's `matmul` at 256^3 (three runs)
//     and 512^3 (two), then the CNN step eager and compiled (bench.js);
//     jax-js's matmul and CNN step, eager and jit (jax_steps.mjs);
//   - Chromium, wasm cpu fallback: skiff's 512^3 matmul (three runs) and the
//     CNN step, on the relaxed-SIMD build Chromium loads and on the SIMD128
//     baseline other engines load (the baseline for information: no target);
//   - native cpu: examples/steps.rs's CNN step eager and compiled, then
//     PyTorch's (torch_steps.py);
//   - lavapipe: the same CNN steps on `Device::gpu()`, then Burn's wgpu
//     (benches/peers/burn).
//
// Needs `npm run build:test` (the browser parts) and
// `cargo build --release --example steps` (the native ones). A peer that is
// missing skips its targets, with a line saying so:
//   - PyTorch: importable by $SKIFF_TORCH_PYTHON (default python3);
//   - Burn: the binary at $SKIFF_BURN_STEPS (default
//     /work/burn-target/release/burn-steps; build it with its features
//     `burn-defaults`, as benches/peers/burn/Cargo.toml says);
//   - jax-js: installed by jax_steps.mjs on first use (needs the npm registry).
// lavapipe needs XDG_RUNTIME_DIR set to an existing directory (mode 700).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PASSES, loadSuite, openSession } from '../../tests/browser/lib/browser.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.argv[2] ?? 5);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive integer, got ${process.argv[2]}`);

const steps = path.join(root, 'target/release/examples/steps');
const torchPython = process.env.SKIFF_TORCH_PYTHON ?? 'python3';
const burn = process.env.SKIFF_BURN_STEPS ?? '/work/burn-target/release/burn-steps';

/** stdout of a command, or null (with the reason on stderr) when it fails. */
function run(cmd, args, what) {
  try {
    return execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    console.error(`${what}: ${cmd} failed: ${(e.stderr || e.message).toString().trim().split('\n').at(-1)}`);
    return null;
  }
}

/** The number `pattern` captures in `text` (a command's output), or null. */
function number(text, pattern) {
  const m = text?.match(pattern);
  return m ? Number(m[1]) : null;
}

const haveSteps = fs.existsSync(steps);
const haveTorch = run(torchPython, ['-c', 'import torch'], 'PyTorch') !== null;
const haveBurn = fs.existsSync(burn);
if (!haveSteps) console.error(`skipping the native targets: no ${steps} (cargo build --release --example steps)`);
if (!haveTorch) console.error(`skipping PyTorch: ${torchPython} cannot import torch (set SKIFF_TORCH_PYTHON)`);
if (!haveBurn) console.error(`skipping Burn: no ${burn} (set SKIFF_BURN_STEPS)`);

/** Opens a page on `pass`, initialises skiff (bench.js) and runs `work` on the session. */
async function skiffPage(pass, relaxedSimd, work) {
  const s = await openSession(pass);
  try {
    await loadSuite(s, '/benches/browser/bench.js');
    const info = await s.call('setup', pass.gpu ? 'webgpu' : 'cpu', relaxedSimd);
    return await work(s, info);
  } finally {
    await s.close();
  }
}

async function repeat(n, f) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await f());
  return out;
}

const median = (a) => {
  const s = a.filter((v) => v !== null && Number.isFinite(v)).sort((p, q) => p - q);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const jax = (...args) => run('node', [path.join(root, 'benches/peers/jax_steps.mjs'), ...args], `jax-js ${args.join(' ')}`);

/** One round's figures: ms per step, GFLOP/s (medians of a page's runs). */
async function round() {
  const r = {};
  await skiffPage(PASSES.webgpu, undefined, async (s, info) => {
    r.adapter = info.adapter?.name;
    r.ss256 = median(await repeat(3, () => s.call('matmul', 256, 2)));
    r.ss512 = median(await repeat(2, () => s.call('matmul', 512, 1)));
    const cnn = await s.call('jitStep', 'cnn', { batch: 64, runs: 5, inner: 2, warmup: 3 });
    [r.ssEager, r.ssCompiled] = [cnn.eagerMs, cnn.compiledMs];
  });
  const jm = jax('matmul', 'webgpu');
  r.jax256 = number(jm, /256\^3 webgpu: ([\d.]+)/);
  r.jax512 = number(jm, /512\^3 webgpu: ([\d.]+)/);
  const jc = jax('cnn', 'webgpu', '5');
  r.jaxEager = number(jc, /eager: ([\d.]+) ms/);
  r.jaxJit = number(jc, /jit: ([\d.]+) ms/);
  for (const [key, relaxedSimd] of [['relaxed', undefined], ['simd128', false]]) {
    await skiffPage(PASSES.cpu, relaxedSimd, async (s, info) => {
      if (key === 'relaxed' && info.wasmSimd !== 'relaxed') console.error(`the default build is ${info.wasmSimd}, not relaxed`);
      r[`${key}512`] = median(await repeat(3, () => s.call('matmul', 512, 8)));
      const cnn = await s.call('jitStep', 'cnn', { batch: 64, runs: 7, inner: 10, warmup: 3 });
      [r[`${key}Eager`], r[`${key}Compiled`]] = [cnn.eagerMs, cnn.compiledMs];
    });
  }
  if (haveSteps) {
    const ms = (out) => number(out, /: ([\d.]+) ms\/step/);
    r.cpuEager = ms(run(steps, ['cnn', 'eager', '200'], 'skiff cpu eager'));
    r.cpuCompiled = ms(run(steps, ['cnn', 'compiled', '200'], 'skiff cpu compiled'));
    if (haveTorch) r.torch = ms(run(torchPython, [path.join(root, 'benches/peers/torch_steps.py'), 'cnn', '200'], 'PyTorch'));
    r.lvpEager = ms(run(steps, ['cnn', 'eager', '40', 'gpu'], 'skiff lavapipe eager'));
    r.lvpCompiled = ms(run(steps, ['cnn', 'compiled', '40', 'gpu'], 'skiff lavapipe compiled'));
    if (haveBurn) r.burn = ms(run(burn, ['cnn', 'wgpu', '40'], 'Burn wgpu'));
  }
  return r;
}

const ratio = (a, b) => (a !== null && b ? a / b : null);
// Each target: what a round gives, its bound, and whether smaller is better.
const TARGETS = [
  ['native cpu CNN, skiff eager / PyTorch', (r) => ratio(r.cpuEager, r.torch), 0.8],
  ['native cpu CNN, skiff compiled / PyTorch', (r) => ratio(r.cpuCompiled, r.torch), 0.8],
  ['wasm (relaxed SIMD) CNN eager, ms', (r) => r.relaxedEager, 8],
  ['wasm (relaxed SIMD) CNN compiled, ms', (r) => r.relaxedCompiled, 8],
  ['wasm (SIMD128 baseline) CNN eager, ms (no target)', (r) => r.simd128Eager, null],
  ['wasm (SIMD128 baseline) CNN compiled, ms (no target)', (r) => r.simd128Compiled, null],
  ['SwiftShader CNN, skiff eager / jax-js eager', (r) => ratio(r.ssEager, r.jaxEager), 0.8],
  ['SwiftShader CNN, skiff compiled / jax-js jit', (r) => ratio(r.ssCompiled, r.jaxJit), 0.8],
  ['lavapipe CNN, skiff eager / Burn wgpu', (r) => ratio(r.lvpEager, r.burn), 0.6],
  ['lavapipe CNN, skiff compiled / Burn wgpu', (r) => ratio(r.lvpCompiled, r.burn), 0.6],
  ['wasm (relaxed SIMD) matmul 512^3, GFLOP/s', (r) => r.relaxed512, -40],
  ['wasm (SIMD128 baseline) matmul 512^3, GFLOP/s (no target)', (r) => r.simd128512, null],
  ['SwiftShader matmul 256^3, GFLOP/s', (r) => r.ss256, -5],
  ['SwiftShader matmul 256^3, jax-js GFLOP/s (no target)', (r) => r.jax256, null],
  ['SwiftShader matmul 512^3, GFLOP/s (no target)', (r) => r.ss512, null],
  ['SwiftShader matmul 512^3, jax-js GFLOP/s (no target)', (r) => r.jax512, null],
];

const all = [];
for (let i = 1; i <= rounds; i++) {
  const r = await round();
  all.push(r);
  console.log(`round ${i}: ${JSON.stringify(r, (k, v) => (typeof v === 'number' ? Number(v.toFixed(3)) : v))}`);
}

const fmt = (v) => (v === null ? '-' : v.toFixed(v < 10 ? 2 : 1));
console.log(`\n${rounds} rounds, ${new Date().toISOString().slice(0, 10)}, adapter ${all[0].adapter ?? '?'}\n`);
console.log('| target | bound | per round | median | rounds meeting it |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, of, bound] of TARGETS) {
  const vs = all.map(of);
  if (vs.every((v) => v === null)) continue;
  const meets = (v) => v !== null && (bound < 0 ? v >= -bound : v <= bound);
  const met = bound === null ? '-' : `${vs.filter(meets).length} of ${vs.filter((v) => v !== null).length}`;
  const b = bound === null ? '-' : bound < 0 ? `>= ${-bound}` : `<= ${bound}`;
  console.log(`| ${name} | ${b} | ${vs.map(fmt).join(', ')} | ${fmt(median(vs))} | ${met} |`);
}
process.exit(0);
