// The "jit" group of the browser benchmark (re-exported by bench.js): one
// training step (zeroGrad, forward, cross-entropy, backward, Adam) of the MLP
// or the CNN, eager against compiled by skiff.jit, in one run on the backend
// init() chose. Two models from the same seed, one stepped eagerly and one
// through the compiled function, timed in alternating rounds so that load on
// the machine falls on both alike.
import * as sk from '/web/index.js';
import { median } from './timing.js';

const { nn, optim } = sk;

export const JIT_MODELS = {
  // 784-256-128-10, ReLU.
  mlp: {
    build: () => new nn.Sequential(new nn.Linear(784, 256), new nn.ReLU(), new nn.Linear(256, 128), new nn.ReLU(), new nn.Linear(128, 10)),
    input: (n) => [n, 784],
  },
  // conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3, ReLU, max-pool 2, linear 400->10 (28 -> 26 -> 13 -> 11 -> 5).
  cnn: {
    build: () =>
      new nn.Sequential(
        new nn.Conv2d(1, 8, 3), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Conv2d(8, 16, 3), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Flatten(), new nn.Linear(400, 10),
      ),
    input: (n) => [n, 1, 28, 28],
  },
  // 2-16-2 (the XOR net of the test suites): kernels too small to hide the
  // per-kernel host cost, which is what a replay saves.
  tiny: {
    build: () => new nn.Sequential(new nn.Linear(2, 16), new nn.ReLU(), new nn.Linear(16, 2)),
    input: (n) => [n, 2],
    classes: 2,
  },
};

/** A model of `kind` seeded like every other, with its Adam and training step. */
function setup(kind) {
  sk.manualSeed(15);
  const model = JIT_MODELS[kind].build();
  const params = model.parameters();
  const opt = new optim.Adam(params, { lr: 1e-3 });
  sk.dispose(params);
  const step = (x, y) => {
    opt.zeroGrad();
    const loss = model.forward(x).crossEntropy(y);
    loss.backward();
    opt.step();
    return loss;
  };
  return { model, opt, step };
}

/** ms per step of `inner` steps back to back, the last loss read back at the end (a loop that logs now and then). */
async function timeSteps(step, x, y, inner) {
  const t0 = performance.now();
  let loss = null;
  for (let i = 0; i < inner; i++) {
    loss?.dispose();
    loss = sk.tidy(() => step(x, y));
  }
  await loss.data();
  loss.dispose();
  return (performance.now() - t0) / inner;
}

/**
 * Eager against compiled for `kind` ('mlp', 'cnn' or 'tiny') at `batch`: after
 * `warmup` steps of each (the compiled one captures during these), `runs`
 * alternating rounds of `inner` steps each. Returns the medians (ms per
 * step), their ratio, the median of the rounds' ratios, and the compiled
 * program's kernels per step.
 */
export async function jitStep(kind, { batch = 64, runs = 5, inner = 10, warmup = 3 } = {}) {
  const eager = setup(kind);
  const compiled = setup(kind);
  const jitted = sk.jit(compiled.step);
  const x = sk.randn(JIT_MODELS[kind].input(batch));
  const y = sk.randint(0, JIT_MODELS[kind].classes ?? 10, [batch]);
  try {
    await timeSteps(eager.step, x, y, warmup);
    await timeSteps(jitted, x, y, warmup);
    const capturesAfterWarmup = jitted.captures;
    const times = { eager: [], compiled: [] };
    for (let r = 0; r < runs; r++) {
      times.eager.push(await timeSteps(eager.step, x, y, inner));
      times.compiled.push(await timeSteps(jitted, x, y, inner));
    }
    const eagerMs = median(times.eager);
    const compiledMs = median(times.compiled);
    return {
      kind,
      batch,
      eagerMs,
      compiledMs,
      ratio: eagerMs / compiledMs,
      // Each round's eager time over the compiled one right after it: load that
      // drifts over the run cancels out of these better than out of the medians.
      pairedRatio: median(times.eager.map((e, i) => e / times.compiled[i])),
      kernels: jitted.kernels,
      captures: jitted.captures,
      // Every timed compiled call must have replayed: a capture there would time eager code.
      capturedWhileTimed: jitted.captures - capturesAfterWarmup,
      replays: jitted.replays,
      runs: times,
    };
  } finally {
    jitted.clear();
    sk.dispose([x, y]);
    for (const { model, opt } of [eager, compiled]) {
      model.free();
      opt.free();
    }
  }
}

/**
 * The cost of deterministic mode (skiff.setDeterministic) for `kind` at
 * `batch`, eager: two models from the same seed, one stepped in the default
 * mode and one in deterministic mode, in alternating rounds of `inner` steps
 * after `warmup` of each. Returns the medians (ms per step) and the median of
 * the rounds' deterministic / default ratios. The cpu only: the mode does not
 * change WebGPU kernels.
 */
export async function determinismStep(kind, { batch = 64, runs = 5, inner = 10, warmup = 3 } = {}) {
  const was = sk.isDeterministic();
  const modes = { fast: setup(kind), deterministic: setup(kind) };
  const x = sk.randn(JIT_MODELS[kind].input(batch));
  const y = sk.randint(0, JIT_MODELS[kind].classes ?? 10, [batch]);
  const timed = async (mode, n) => {
    sk.setDeterministic(mode === 'deterministic');
    return timeSteps(modes[mode].step, x, y, n);
  };
  try {
    for (const mode of Object.keys(modes)) await timed(mode, warmup);
    const times = { fast: [], deterministic: [] };
    for (let r = 0; r < runs; r++) {
      for (const mode of Object.keys(modes)) times[mode].push(await timed(mode, inner));
    }
    return {
      kind,
      batch,
      fastMs: median(times.fast),
      deterministicMs: median(times.deterministic),
      pairedRatio: median(times.deterministic.map((d, i) => d / times.fast[i])),
      runs: times,
    };
  } finally {
    sk.setDeterministic(was);
    sk.dispose([x, y]);
    for (const { model, opt } of Object.values(modes)) {
      model.free();
      opt.free();
    }
  }
}
