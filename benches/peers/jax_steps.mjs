// The jax-js side of the `jit` group of benches/browser/run.mjs: the same MLP
// (784-256-128-10) and CNN (conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3,
// ReLU, max-pool 2, linear 400->10) Adam training steps at batch 64, written
// with jax-js (@jax-js/jax 0.1.25) and run in headless Chromium with the
// flags of the skiff browser suites (tests/browser/lib/browser.mjs): on
// WebGPU (SwiftShader, software) or on jax-js's wasm backend (the cpu pass,
// WebGPU hidden). Each run times the step eager (jax.valueAndGrad and the
// Adam update op by op) and jitted (the whole step under jax.jit), and prints
// ms per step: the mean over the timed steps, each of which reads its loss
// back, from a fully computed state to the last step's fully computed state.
// Adam (lr 1e-3, PyTorch's betas and eps) is written with jax-js ops: the
// package ships no optimizer. The page side is benches/peers/jax_page.js.
// Not part of `npm test` and not in skiff's package.json: timings are never
// asserted.
//
//   node benches/peers/jax_steps.mjs [mlp|cnn] [webgpu|wasm] [steps]
//   node benches/peers/jax_steps.mjs cnn webgpu 5
//   node benches/peers/jax_steps.mjs matmul webgpu
//
// `matmul` times 256^3 and 512^3 f32 products instead (GFLOP/s), as skiff's
// benches/browser/bench.js `matmul` does: the same-run peer of its figure.
//
// Defaults: mlp, webgpu, 20 timed steps for the MLP and 5 for the CNN (a few
// hundred ms per step on SwiftShader), after 3 warm-up steps eager and 5
// jitted (the first jitted call traces and compiles).
//
// Needs playwright-core (skiff's devDependency: npm install) and Chromium
// (SKIFF_CHROMIUM, default /usr/bin/chromium). On first use it installs
// @jax-js/jax@0.1.25 from the npm registry with
//   npm install --prefix ~/.cache/skiff-peers/jax-js-0.1.25 @jax-js/jax@0.1.25 --no-save --no-package-lock
// (SKIFF_PEERS_CACHE moves ~/.cache/skiff-peers), outside the repo, and
// serves that package to the page under /jax-js/.
//
// The page is served without cross-origin isolation, as the skiff suites
// are, so jax-js's wasm backend runs single-threaded (it starts worker
// threads only where SharedArrayBuffer exists); the first line says so.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PASSES, loadSuite, openSession } from '../../tests/browser/lib/browser.mjs';

const JAX_VERSION = '0.1.25';
const KINDS = ['mlp', 'cnn', 'matmul'];
const DEVICES = ['webgpu', 'wasm'];
const DEFAULT_STEPS = { mlp: 20, cnn: 5, matmul: 1 };
const WARMUP = { eager: 3, jit: 5 };

const [kind = 'mlp', device = 'webgpu', stepsArg] = process.argv.slice(2);
const usage = 'usage: node benches/peers/jax_steps.mjs [mlp|cnn|matmul] [webgpu|wasm] [steps]';
if (!KINDS.includes(kind)) throw new Error(`unknown model ${kind}: ${usage}`);
if (!DEVICES.includes(device)) throw new Error(`unknown device ${device}: ${usage}`);
const steps = stepsArg === undefined ? DEFAULT_STEPS[kind] : Number(stepsArg);
if (!Number.isInteger(steps) || steps < 1) throw new Error(`steps must be a positive integer, got ${stepsArg}: ${usage}`);

/** The directory of @jax-js/jax at JAX_VERSION, installed into the cache first if missing. */
function jaxPackage() {
  const cache = process.env.SKIFF_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'skiff-peers');
  const prefix = path.join(cache, `jax-js-${JAX_VERSION}`);
  const dir = path.join(prefix, 'node_modules', '@jax-js', 'jax');
  const installed = () => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version === JAX_VERSION;
    } catch {
      return false;
    }
  };
  if (!installed()) {
    fs.mkdirSync(prefix, { recursive: true });
    console.error(`installing @jax-js/jax@${JAX_VERSION} into ${prefix}`);
    execFileSync('npm', ['install', '--prefix', prefix, `@jax-js/jax@${JAX_VERSION}`, '--no-save', '--no-package-lock', '--no-audit', '--no-fund'], {
      cwd: prefix,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (!installed()) throw new Error(`npm did not install @jax-js/jax@${JAX_VERSION} into ${prefix}`);
  }
  return dir;
}

const jaxDir = jaxPackage();
const pass = device === 'webgpu' ? PASSES.webgpu : PASSES.cpu;
const s = await openSession(pass, { mounts: { '/jax-js/': jaxDir } });
try {
  await loadSuite(s, '/benches/peers/jax_page.js');
  const info = await s.call('setup', device);
  if (device === 'webgpu') {
    const a = info.adapter;
    const desc = a ? [a.description, a.vendor && `vendor ${a.vendor}`, a.architecture && `architecture ${a.architecture}`, a.device && `device ${a.device}`].filter(Boolean).join(', ') : '?';
    console.log(`jax-js ${JAX_VERSION} webgpu adapter: ${desc}`);
  } else {
    const threads = info.sharedArrayBuffer ? `SharedArrayBuffer present, up to ${info.hardwareConcurrency} threads` : 'single-threaded (no SharedArrayBuffer: page not cross-origin isolated)';
    console.log(`jax-js ${JAX_VERSION} wasm backend: ${threads}`);
  }
  if (kind === 'matmul') {
    // bench.js's sizes and products per run on WebGPU (benches/browser/run.mjs).
    for (const [n, reps] of [[256, 2], [512, 1]]) {
      const r = await s.call('matmul', n, reps);
      if (r.device !== device) throw new Error(`jax-js ran on ${r.device}, not ${device}`);
      console.log(`jax-js ${JAX_VERSION} matmul ${n}^3 ${device}: ${r.gflops.toFixed(2)} GFLOP/s (${r.ms.toFixed(1)} ms for ${reps})`);
    }
  }
  for (const mode of kind === 'matmul' ? [] : ['eager', 'jit']) {
    const r = await s.call('bench', kind, mode, { batch: 64, steps, warmup: WARMUP[mode] });
    if (r.device !== device) throw new Error(`jax-js ran on ${r.device}, not ${device}`);
    const f = (v, d = 1) => v.toFixed(d);
    console.log(
      `jax-js ${JAX_VERSION} ${kind} ${device} ${mode}: ${f(r.msPerStep)} ms/step` +
        ` (${r.steps} steps after ${r.warmup} warm-up in ${f(r.warmupMs, 0)} ms; median step ${f(r.medianMs)};` +
        ` loss ${f(r.firstLoss, 4)} -> ${f(r.lastLoss, 4)})`,
    );
  }
} finally {
  await s.close();
}
