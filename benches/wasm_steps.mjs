// Times the published package's cpu fallback in Node: per-op host cost, a
// 512x512 matmul, and one eager Adam training step of the MLP and of the CNN
// (batch 64). Used to weigh a change to how the .wasm is built (opt-level,
// wasm-opt) against its speed: run it on two builds alternately, e.g.
//
//   farm-bench --vs 'node benches/wasm_steps.mjs /tmp/a.wasm' -- node benches/wasm_steps.mjs /tmp/b.wasm
//
// Needs `npm run build` (pkg/'s JS glue; any .wasm built from the same source
// and features loads with it). Prints one JSON line; not part of npm test.
import * as sk from '../web/node.js';

const wasm = process.argv[2];
await sk.init({ device: 'cpu', ...(wasm ? { wasm } : {}) });
const { nn, optim } = sk;

const median = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];

/** Median ms per call of `fn` over `runs` rounds of `inner` calls, after `warmup` calls. */
async function time(fn, { runs = 7, inner = 1, warmup = 2 }) {
  for (let i = 0; i < warmup; i++) await fn();
  const ts = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) await fn();
    ts.push((performance.now() - t0) / inner);
  }
  return median(ts);
}

/** A chain of `n` one-element adds with autograd on, read back at the end: µs per op. */
async function perOp(n = 2000) {
  const ms = await time(async () => {
    const t = sk.tidy(() => {
      const a = sk.tensor([1], { requiresGrad: true });
      let s = a;
      for (let i = 0; i < n; i++) s = s.add(a);
      return s;
    });
    await t.data();
    t.dispose();
  }, { runs: 5 });
  return (ms * 1000) / n;
}

async function matmul(n = 512) {
  const a = sk.randn([n, n]);
  const b = sk.randn([n, n]);
  const ms = await time(async () => {
    const c = a.matmul(b);
    await c.data();
    c.dispose();
  }, { runs: 7, inner: 2 });
  return (2 * n ** 3) / ms / 1e6;
}

const MODELS = {
  mlp: [() => new nn.Sequential(new nn.Linear(784, 256), new nn.ReLU(), new nn.Linear(256, 128), new nn.ReLU(), new nn.Linear(128, 10)), [64, 784]],
  cnn: [
    () =>
      new nn.Sequential(
        new nn.Conv2d(1, 8, 3), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Conv2d(8, 16, 3), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Flatten(), new nn.Linear(400, 10),
      ),
    [64, 1, 28, 28],
  ],
};

/** ms per eager step (zeroGrad, forward, cross-entropy, backward, Adam). */
async function trainStep(kind) {
  const [build, shape] = MODELS[kind];
  sk.manualSeed(47);
  const model = build();
  const params = model.parameters();
  const opt = new optim.Adam(params, { lr: 1e-3 });
  sk.dispose(params);
  const x = sk.randn(shape);
  const y = sk.randint(0, 10, [shape[0]]);
  return time(async () => {
    const loss = sk.tidy(() => {
      opt.zeroGrad();
      const l = model.forward(x).crossEntropy(y);
      l.backward();
      opt.step();
      return l;
    });
    await loss.data();
    loss.dispose();
  }, { runs: 7, inner: 3 });
}

const round = (v) => Math.round(v * 100) / 100;
console.log(
  JSON.stringify({
    wasm: wasm ?? 'pkg (default build)',
    perOpUs: round(await perOp()),
    matmul512Gflops: round(await matmul()),
    mlpStepMs: round(await trainStep('mlp')),
    cnnStepMs: round(await trainStep('cnn')),
  }),
);
