// The browser benchmark page module (loaded by benches/browser/run.mjs into
// headless Chromium): per-op overhead, matmul throughput and the MLP training
// step (784-256-128-10, Adam) on the backend init() chose, in plain eager mode;
// and the jit group (jit.js): eager against compiled steps.
import * as sk from '/web/index.js';
import { time } from './timing.js';

export { determinismStep, jitStep } from './jit.js';
export { layerStep } from './layers.js';

/** init() on `device`; `relaxedSimd` picks the .wasm build (undefined: the engine's best). */
export async function setup(device, relaxedSimd) {
  return sk.init({ device, relaxedSimd });
}

/** Microseconds per op for a chain of 1-element adds (one readback at the end), with and without autograd. */
export async function perOp(n = 2000) {
  const out = {};
  for (const grad of [false, true]) {
    const ms = await time(
      () =>
        sk.tidy(() => {
          const a = sk.tensor([1], { requiresGrad: grad });
          let t = a;
          for (let i = 0; i < n; i++) t = t.add(a);
          return t;
        }),
      { runs: 5, warmup: 3, sync: async (t) => { await t.data(); t.dispose(); } },
    );
    out[grad ? 'withGrad' : 'noGrad'] = (ms * 1000) / n;
  }
  return out;
}

/** GFLOP/s of an n x n x n matmul (reps products per timed run). */
export async function matmul(n, reps) {
  const a = sk.randn([n, n]);
  const b = sk.randn([n, n]);
  const ms = await time(
    () => sk.tidy(() => {
      let acc = sk.zeros([]);
      for (let i = 0; i < reps; i++) acc = acc.add(a.matmul(b).sum());
      return acc;
    }),
    { runs: 5, warmup: 2, sync: async (t) => { await t.data(); t.dispose(); } },
  );
  a.dispose();
  b.dispose();
  return (2 * n * n * n * reps) / (ms / 1000) / 1e9;
}

/** Median ms per Adam training step of the 784-256-128-10 MLP at `batch`. */
export async function mlpStep(batch, runs, inner) {
  sk.manualSeed(0);
  const model = new sk.nn.Sequential(
    new sk.nn.Linear(784, 256), new sk.nn.ReLU(), new sk.nn.Linear(256, 128), new sk.nn.ReLU(), new sk.nn.Linear(128, 10),
  );
  const opt = new sk.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = sk.randn([batch, 784]);
  const y = sk.randint(0, 10, [batch]);
  const step = () =>
    sk.tidy(() => {
      opt.zeroGrad();
      const loss = model.forward(x).crossEntropy(y);
      loss.backward();
      opt.step();
      return loss;
    });
  // Each timed step ends with the loss read back, as a training loop that logs it would.
  const ms = await time(step, { runs, inner, warmup: 5, sync: async (l) => { await l.data(); l.dispose(); } });
  x.dispose();
  y.dispose();
  return ms;
}
