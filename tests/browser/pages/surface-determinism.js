// Deterministic mode (skiff.setDeterministic) against the bits a native run
// checked in (tests/determinism/expected.js, written by tests/determinism/main.rs):
// - on the cpu, a seeded MLP and CNN run (100 Adam steps each) must give the
//   native run's loss at every step and its final parameters, bit for bit;
//   with the test build, so must every registry case's forward output;
// - on WebGPU, which the mode does not cover, the same runs must stay within
//   1e-5 relative of the cpu after 100 steps (docs/determinism.md's documented bound).
// Returns { count, failures }. The model, data and digest are built here
// exactly as tests/determinism/main.rs builds them natively.
//
// No skiff import: the module under test is passed in (browser and Node).

import { checker } from './checks.js';
import expected from '../../determinism/expected.js';

const STEPS = 100;

/** 32-bit FNV-1a over a Float32Array's little-endian bytes, as 8 hex digits. */
function digest(values) {
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return hex(h);
}
const hex = (u) => u.toString(16).padStart(8, '0');
const bitsOf = (x) => new Uint32Array(new Float32Array([x]).buffer)[0];
const fromBits = (h) => new Float32Array(new Uint32Array([parseInt(h, 16)]).buffer)[0];

/** Batch `step` of the synthetic data: exact multiples of 2^-16, four batches in turn. */
function batch(step, rows, features) {
  const s = step % 4;
  const x = new Float32Array(rows * features);
  for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761 + s * 40503) % 65536) / 65536 - 0.5;
  const y = Array.from({ length: rows }, (_, r) => (r * 7 + s * 3) % 10);
  return { x, y };
}

const models = {
  mlp: (nn) => [new nn.Sequential(new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10)), [32, 784]],
  cnn: (nn) => [
    new nn.Sequential(
      new nn.Conv2d(1, 8, 3),
      new nn.ReLU(),
      new nn.MaxPool2d(2),
      new nn.Conv2d(8, 16, 3),
      new nn.ReLU(),
      new nn.MaxPool2d(2),
      new nn.Flatten(),
      new nn.Linear(400, 10),
    ),
    [16, 1, 28, 28],
  ],
};

/** 100 Adam steps (lr 1e-3) of `name` from seed 21 on `device`: { losses, params }. */
async function train(skiff, name, device) {
  const before = skiff.getDefaultDevice();
  skiff.setDefaultDevice(device);
  try {
    skiff.manualSeed(21);
    const [model, shape] = models[name](skiff.nn);
    const parameters = model.parameters();
    const optimizer = new skiff.optim.Adam(parameters);
    const losses = [];
    for (let step = 0; step < STEPS; step++) {
      const { x, y } = batch(step, shape[0], shape.slice(1).reduce((a, b) => a * b));
      const loss = skiff.tidy(() => {
        optimizer.zeroGrad();
        const out = model.forward(skiff.tensor(x, { shape })).crossEntropy(skiff.tensor(y, { dtype: 'int32' }));
        out.backward();
        optimizer.step();
        return out.detach();
      });
      losses.push(await loss.item());
      loss.dispose();
    }
    const params = [];
    for (const p of parameters) params.push(await p.data());
    skiff.dispose(parameters);
    model.free();
    optimizer.free();
    return { losses, params };
  } finally {
    skiff.setDefaultDevice(before);
  }
}

/** The step whose loss bits differ from the checked-in ones, or -1. */
const firstDifferentStep = (losses, want) => losses.findIndex((l, i) => hex(bitsOf(l)) !== want[i]);

export const determinismScenarios = {
  async determinism(skiff) {
    const c = checker();
    const gpu = skiff.getDefaultDevice() === 'webgpu';
    const was = skiff.isDeterministic();
    c.equal('the mode is off by default', was, false);
    skiff.setDeterministic(true);
    try {
      c.equal('setDeterministic(true) turns it on', skiff.isDeterministic(), true);
      for (const name of ['mlp', 'cnn']) {
        const want = expected[name];
        const cpu = await train(skiff, name, 'cpu');
        const step = firstDifferentStep(cpu.losses, want.losses);
        c.ok(
          `${name}: every step's loss has the native run's bits`,
          step === -1,
          step === -1 ? '' : `step ${step}: ${cpu.losses[step]} (${hex(bitsOf(cpu.losses[step]))}) vs ${fromBits(want.losses[step])} (${want.losses[step]})`,
        );
        c.equal(`${name}: the final parameters' digests are the native run's`, cpu.params.map(digest), want.params);
        if (gpu) {
          // WebGPU runs its own math: within 1e-5 relative after 100 steps.
          const onGpu = await train(skiff, name, 'webgpu');
          const last = fromBits(want.losses[STEPS - 1]);
          const lossError = Math.abs(onGpu.losses[STEPS - 1] - last) / Math.abs(last);
          c.ok(`${name} on WebGPU: the final loss within 1e-5 of the cpu's`, lossError <= 1e-5, `relative ${lossError}`);
          let worst = 0;
          cpu.params.forEach((p, i) => {
            let [diff, norm] = [0, 0];
            p.forEach((v, j) => {
              diff += (onGpu.params[i][j] - v) ** 2;
              norm += v * v;
            });
            worst = Math.max(worst, Math.sqrt(diff / norm));
          });
          c.ok(`${name} on WebGPU: the final parameters within 1e-5 of the cpu's (relative, as vectors)`, worst <= 1e-5, `relative ${worst}`);
        }
      }
      if (skiff.testing) {
        // The registry's forward outputs (f32, f64 and f16, on the cpu).
        const got = new Map(skiff.testing.forwardDigests());
        const differ = Object.entries(expected.registry).filter(([label, d]) => got.get(label) !== d);
        const extra = [...got.keys()].filter((label) => !(label in expected.registry));
        c.equal(
          'every registry case gives the native forward bits',
          [...differ.slice(0, 5).map(([label, d]) => `${label}: ${got.get(label)} vs ${d}`), ...extra.slice(0, 5)],
          [],
        );
      }
    } finally {
      skiff.setDeterministic(was);
    }
    c.equal('setDeterministic(false) turns it off again', skiff.isDeterministic(), was);
    await c.throws('setDeterministic("yes") is an error naming the call', () => skiff.setDeterministic('yes'), /setDeterministic.*boolean/s);
    return c.report();
  },
};
