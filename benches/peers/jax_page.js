// The page side of benches/peers/jax_steps.mjs (loaded into headless Chromium
// as window.__suite): the MLP and CNN Adam training steps of skiff's
// benches/browser/jit.js, written with jax-js, timed eager and jitted. jax-js
// is served by jax_steps.mjs under /jax-js/ from a cache outside the repo.
import * as jax from '/jax-js/dist/index.js';

const { numpy: np, nn, lax, random, tree } = jax;

// PyTorch's defaults, as in skiff's optim.Adam and torch_steps.py.
const LR = 1e-3;
const B1 = 0.9;
const B2 = 0.999;
const EPS = 1e-8;

// Weights as torch.nn initializes them: U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// biases too. Linear weights are stored [in, out] (x @ w); conv weights
// [out, in, kh, kw], which is jax-js's lax.conv layout (NCHW input, OIHW kernel).
const LAYERS = {
  // 784-256-128-10, ReLU.
  mlp: [
    ['w1', [784, 256], 784], ['b1', [256], 784],
    ['w2', [256, 128], 256], ['b2', [128], 256],
    ['w3', [128, 10], 128], ['b3', [10], 128],
  ],
  // conv 1->8 k3, ReLU, max-pool 2, conv 8->16 k3, ReLU, max-pool 2, linear 400->10 (28 -> 26 -> 13 -> 11 -> 5).
  cnn: [
    ['c1w', [8, 1, 3, 3], 9], ['c1b', [8], 9],
    ['c2w', [16, 8, 3, 3], 72], ['c2b', [16], 72],
    ['fw', [400, 10], 400], ['fb', [10], 400],
  ],
};
const INPUT = { mlp: (n) => [n, 784], cnn: (n) => [n, 1, 28, 28] };

function initParams(kind, seed) {
  const layers = LAYERS[kind];
  const keys = [...random.split(random.key(seed), layers.length)];
  const params = {};
  layers.forEach(([name, shape, fanIn], i) => {
    const bound = 1 / Math.sqrt(fanIn);
    params[name] = random.uniform(keys[i], shape, { minval: -bound, maxval: bound });
  });
  return params;
}

// Max-pool 2x2, stride 2, over the last two axes (floor mode: 11 -> 5).
const maxPool2 = (h) => lax.reduceWindow(h, (w) => np.max(w), [2, 2], [2, 2]);

// Forward passes. jax-js arrays are reference counted and every op consumes
// its operands, so each parameter is used exactly once here.
const FORWARD = {
  mlp(p, x) {
    let h = nn.relu(np.matmul(x, p.w1).add(p.b1));
    h = nn.relu(np.matmul(h, p.w2).add(p.b2));
    return np.matmul(h, p.w3).add(p.b3);
  },
  cnn(p, x) {
    let h = lax.conv(x, p.c1w, [1, 1], 'VALID').add(p.c1b.reshape([1, 8, 1, 1]));
    h = maxPool2(nn.relu(h));
    h = lax.conv(h, p.c2w, [1, 1], 'VALID').add(p.c2b.reshape([1, 16, 1, 1]));
    h = maxPool2(nn.relu(h));
    return np.matmul(h.reshape([h.shape[0], 400]), p.fw).add(p.fb);
  },
};

/** Mean softmax cross-entropy of `logits` [n, 10] against int32 `labels` [n]. */
function crossEntropy(logits, labels) {
  const logp = nn.logSoftmax(logits);
  return logp.mul(nn.oneHot(labels, 10)).sum(-1).mean().neg();
}

/**
 * One training step: loss and gradients by valueAndGrad, then Adam (written
 * with jax-js ops: the package ships no optimizers). Consumes `state`, `x` and
 * `y`; returns [new state, loss]. The step count t is a float32 scalar array,
 * so the jitted step compiles once.
 */
function makeStep(kind) {
  const forward = FORWARD[kind];
  const lossFn = (params, x, y) => crossEntropy(forward(params, x), y);
  const valueAndGrad = jax.valueAndGrad(lossFn);
  return (state, x, y) => {
    const { params, m, v, t } = state;
    const [loss, grads] = valueAndGrad(tree.ref(params), x, y);
    const t1 = t.add(1);
    // 1 - b^t as exp(t log b).
    const bc1 = np.exp(t1.ref.mul(Math.log(B1))).neg().add(1);
    const bc2 = np.exp(t1.ref.mul(Math.log(B2))).neg().add(1);
    const next = { params: {}, m: {}, v: {}, t: t1 };
    for (const k of Object.keys(params)) {
      const g = grads[k];
      const mk = m[k].mul(B1).add(g.ref.mul(1 - B1));
      const vk = v[k].mul(B2).add(g.ref.mul(g).mul(1 - B2));
      const update = mk.ref.div(bc1.ref).div(np.sqrt(vk.ref.div(bc2.ref)).add(EPS));
      next.params[k] = params[k].sub(update.mul(LR));
      next.m[k] = mk;
      next.v[k] = vk;
    }
    bc1.dispose();
    bc2.dispose();
    return [next, loss];
  };
}

function initState(kind, seed) {
  const params = initParams(kind, seed);
  const zeros = () => Object.fromEntries(Object.entries(params).map(([k, p]) => [k, np.zeros(p.shape)]));
  return { params, m: zeros(), v: zeros(), t: np.array(0) };
}

/** Starts jax-js on `device` ('webgpu' or 'wasm'); says what it runs on. */
export async function setup(device) {
  const available = await jax.init(device);
  if (!available.includes(device)) throw new Error(`jax-js could not start its ${device} backend (got: ${available.join(', ') || 'none'})`);
  jax.defaultDevice(device);
  const info = {
    device: jax.defaultDevice(),
    crossOriginIsolated: globalThis.crossOriginIsolated ?? false,
    // jax-js's wasm backend uses worker threads only where SharedArrayBuffer exists.
    sharedArrayBuffer: typeof SharedArrayBuffer !== 'undefined',
    hardwareConcurrency: navigator.hardwareConcurrency,
  };
  if (device === 'webgpu') {
    const a = jax.getWebGPUDevice().adapterInfo;
    info.adapter = a ? { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description } : null;
  }
  return info;
}

const median = (a) => {
  const s = [...a].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * `warmup` then `steps` timed steps of `kind` ('mlp' or 'cnn') at `batch`,
 * eager (mode 'eager') or through jax.jit (mode 'jit'), from a fresh model of
 * the same seed. Every step reads its loss back before the next starts; the
 * timing starts once the warm-up's whole state (parameters, Adam moments) is
 * computed and ends once the last step's is (jax-js evaluates lazily: a step's
 * update runs at the latest when the next step needs it), so it covers the
 * `steps` steps entirely. Returns ms per step (the mean over the timed steps),
 * the median of single steps, and the first and last losses. A single step
 * is timed up to its loss read back, which in eager mode needs only the
 * forward pass: its backward pass and update run when the next step reads the
 * parameters (the first timed step is short, the others a whole step each).
 */
export async function bench(kind, mode, { batch = 64, steps = 10, warmup = 3 } = {}) {
  const [kx, ky] = [...random.split(random.key(1), 2)];
  const x = random.normal(kx, INPUT[kind](batch));
  const y = random.randint(ky, { minval: 0, maxval: 10, shape: [batch], dtype: np.int32 });
  let state = initState(kind, 0);
  const eagerStep = makeStep(kind);
  const step = mode === 'jit' ? jax.jit(eagerStep) : eagerStep;
  const losses = [];
  const run = async () => {
    const [next, loss] = step(state, x.ref, y.ref);
    state = next;
    losses.push((await loss.data())[0]);
  };
  try {
    const w0 = performance.now();
    for (let i = 0; i < warmup; i++) await run();
    await jax.blockUntilReady(state);
    const warmupMs = performance.now() - w0;
    const times = [];
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      const s0 = performance.now();
      await run();
      times.push(performance.now() - s0);
    }
    await jax.blockUntilReady(state);
    const total = performance.now() - t0;
    return {
      kind,
      mode,
      device: jax.defaultDevice(),
      batch,
      steps,
      warmup,
      msPerStep: total / steps,
      medianMs: median(times),
      warmupMs,
      firstLoss: losses[0],
      lastLoss: losses.at(-1),
    };
  } finally {
    tree.dispose(state);
    x.dispose();
    y.dispose();
    if (mode === 'jit') step.dispose();
  }
}

/**
 * GFLOP/s of an n x n by n x n f32 product in jax-js, timed as skiff's
 * benches/browser/bench.js times its own: `reps` products per run, each
 * summed into one scalar that is read back at the end of the run; the median
 * of `runs` runs after `warmup` (the first one compiles the kernels).
 */
export async function matmul(n, reps, { runs = 5, warmup = 2 } = {}) {
  const [ka, kb] = [...random.split(random.key(2), 2)];
  const a = random.normal(ka, [n, n]);
  const b = random.normal(kb, [n, n]);
  const once = async () => {
    let acc = np.zeros([]);
    for (let i = 0; i < reps; i++) acc = acc.add(np.matmul(a.ref, b.ref).sum());
    await acc.data();
  };
  try {
    for (let i = 0; i < warmup; i++) await once();
    const times = [];
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      await once();
      times.push(performance.now() - t0);
    }
    const ms = median(times);
    return { n, reps, device: jax.defaultDevice(), ms, gflops: (2 * n * n * n * reps) / (ms / 1000) / 1e9 };
  } finally {
    a.dispose();
    b.dispose();
  }
}

