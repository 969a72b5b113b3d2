// The page half of tests/browser/worker.test.mjs: skiff in a Web Worker
// (skiff-ml/worker) driven from the page, which keeps its own skiff on the
// cpu. Each export returns plain data for the Node half to assert on.
import * as skiff from '/web/index.js';
import { SkiffWorker, transfer } from '/web/worker.js';

let w = null;
const workerUrl = (name, pass) => new URL(`./${name}${pass === 'cpu' ? '?hide-webgpu' : ''}`, import.meta.url);
const POINTS = [[1, 1], [-1, -1], [1, -1], [-1, 1], [0.3, -0.2]];

/** Starts the training worker; the page's own skiff runs on the cpu. */
export async function start(pass) {
  await skiff.init({ device: 'cpu' });
  w = await SkiffWorker.start(workerUrl('worker-train.js', pass), { device: pass === 'webgpu' ? 'webgpu' : 'auto', name: 'trainer' });
  return JSON.parse(JSON.stringify(w.backend));
}

/**
 * Trains `steps` steps in the worker while the page counts its animation
 * frames and asks the worker for a prediction as soon as the first metrics
 * arrive (answered between two training steps).
 */
export async function trainWhileDrawing(steps) {
  const metrics = [];
  const frames = [];
  let drawing = true;
  const frame = (t) => {
    frames.push(t);
    if (drawing) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  let midway = null;
  let trainDone = false;
  const stop = w.on('metrics', (m) => {
    metrics.push({ ...m, framesSoFar: frames.length });
    if (!midway) {
      midway = w.call('predict', { points: POINTS }).then((r) => ({ ...r, beforeTrainEnded: !trainDone }));
    }
  });
  const t0 = performance.now();
  const result = await w.call('train', { steps, every: 10 });
  const trainMs = performance.now() - t0;
  trainDone = true;
  drawing = false;
  stop();
  return { result, metrics, frames: frames.length, trainMs, midway: await midway };
}

/** The worker's weights loaded into a model on the page: its predictions against the worker's. */
export async function weightsOnThePage() {
  const inWorker = await w.call('predict', { points: POINTS });
  const { bytes, steps } = await w.call('weights');
  const model = new skiff.nn.Sequential(new skiff.nn.Linear(2, 16), new skiff.nn.ReLU(), new skiff.nn.Linear(16, 2));
  model.loadStateDict(bytes);
  const probs = skiff.tidy(() =>
    skiff.noGrad(() => model.forward(skiff.tensor(POINTS.flat(), { shape: [POINTS.length, 2] })).softmax(1)),
  );
  const values = await probs.data();
  probs.dispose();
  model.free();
  // And the other way: bytes the page moves to the worker leave the page.
  const sent = new Uint8Array(1000);
  const received = await w.call('received', transfer({ bytes: sent }, [sent.buffer]));
  return {
    received,
    sentAfter: sent.byteLength,
    steps,
    bytes: bytes.byteLength,
    isUint8Array: bytes instanceof Uint8Array,
    worker: inWorker.probs,
    page: POINTS.map((_, i) => values[2 * i + 1]),
  };
}

/** Aborts a long training call once its first metrics arrived; how long until it settled, and with what. */
export async function abortMidway() {
  const controller = new AbortController();
  let abortedAt = null;
  const stop = w.on('metrics', () => {
    if (abortedAt === null) {
      abortedAt = performance.now();
      controller.abort();
    }
  });
  const result = await w.call('train', { steps: 100_000, every: 5 }, { signal: controller.signal });
  const settleMs = performance.now() - abortedAt;
  stop();
  // An already aborted signal reaches the handler before its first step.
  const before = await w.call('train', { steps: 10 }, { signal: AbortSignal.abort() });
  return { result, settleMs, before };
}

/** An event emitted by work that outlived its call: it arrives after the call's result. */
export async function background() {
  const late = new Promise((resolve) => {
    const stop = w.on('late', (data) => (stop(), resolve(data)));
  });
  const result = await w.call('later', { ms: 20 });
  return { result, event: await late };
}

const caught = async (f) => {
  try {
    await f();
    return null;
  } catch (e) {
    return { name: e.name, message: e.message, op: e.op ?? null, kind: e.kind ?? null, skiff: e instanceof skiff.SkiffError };
  }
};

/** What goes wrong, and how it reads on the page. */
export async function errors(pass) {
  const out = {
    bad: await caught(() => w.call('bad')),
    unknown: await caught(() => w.call('nope')),
    method: await caught(() => w.call(42)),
    signal: await caught(() => w.call('predict', { points: POINTS }, { signal: 'stop' })),
    clone: await caught(() => w.call('predict', { points: POINTS, f: () => 1 })),
    start: await caught(() => SkiffWorker.start(42)),
    option: await caught(() => SkiffWorker.start(workerUrl('worker-train.js', pass), { devise: 'cpu' })),
    throws: await caught(() => SkiffWorker.start(workerUrl('worker-throws.js', pass))),
    transfer: await caught(() => transfer(7, [])),
    listener: await caught(() => w.on('metrics', 'not a function')),
  };
  // The worker still answers after all that.
  out.after = await w.call('predict', { points: POINTS });
  // relaxedSimd reaches the worker's init: a second worker on the SIMD128 baseline.
  const baseline = await SkiffWorker.start(workerUrl('worker-train.js', pass), { device: 'cpu', relaxedSimd: false });
  out.baselineSimd = baseline.backend.wasmSimd;
  out.baselineTrained = (await baseline.call('train', { steps: 5 })).done;
  baseline.terminate();
  // terminate(): a call in flight rejects, and so does any later call.
  const hanging = caught(() => w.call('hang'));
  w.terminate();
  out.terminated = await hanging;
  out.later = await caught(() => w.call('predict', { points: POINTS }));
  return out;
}
