// A module worker serving skiff (skiff-ml/worker's serve()) for
// tests/browser/worker.test.mjs: trains a 2-16-2 MLP on the XOR blobs,
// streams its loss, answers predictions mid-training, hands over its
// weights, and fails on purpose.
//
// `?hide-webgpu` hides WebGPU from this worker, as the cpu pass hides it
// from the page (a page's init script does not reach its workers).
import * as skiff from '/web/index.js';
import { serve, transfer } from '/web/worker.js';
import { xorBlobs } from './scenarios.js';

if (new URL(import.meta.url).searchParams.has('hide-webgpu')) {
  delete globalThis.WorkerNavigator.prototype.gpu;
  if ('gpu' in navigator) throw new Error('worker-train.js: could not hide navigator.gpu');
}

const N = 64;
let model = null;
let optimizer = null;
let data = null;
let steps = 0;

function build() {
  skiff.manualSeed(7);
  model = new skiff.nn.Sequential(new skiff.nn.Linear(2, 16), new skiff.nn.ReLU(), new skiff.nn.Linear(16, 2));
  optimizer = new skiff.optim.Adam(model.parameters(), { lr: 0.05 });
  const { xs, ys } = xorBlobs(N, 1);
  data = { x: skiff.keep(skiff.tensor(xs, { shape: [N, 2] })), y: skiff.keep(skiff.tensor(ys, { dtype: 'int32' })) };
}

const handlers = {
  /** `steps` Adam steps (until ctx.signal aborts), the loss emitted every `every` steps. */
  async train({ steps: wanted, every = 10 }, ctx) {
    if (!model) build();
    let loss = null;
    let done = 0;
    while (done < wanted && !ctx.signal.aborted) {
      const l = skiff.tidy(() => {
        optimizer.zeroGrad();
        const out = model.forward(data.x).crossEntropy(data.y);
        out.backward();
        optimizer.step();
        return out.detach();
      });
      done += 1;
      steps += 1;
      if (done % every === 0 || done === wanted) {
        loss = await l.item();
        ctx.emit('metrics', { step: steps, loss });
      }
      l.dispose();
      await ctx.yield();
    }
    return { done, steps, loss, aborted: ctx.signal.aborted };
  },

  /** Class-1 probabilities of `points` ([x, y] pairs). */
  async predict({ points }) {
    const probs = skiff.tidy(() =>
      skiff.noGrad(() => model.forward(skiff.tensor(points.flat(), { shape: [points.length, 2] })).softmax(1)),
    );
    const values = await probs.data();
    probs.dispose();
    return { steps, probs: points.map((_, i) => values[2 * i + 1]) };
  },

  /** The model's state dict (safetensors), moved to the page, not copied. */
  async weights() {
    const bytes = await model.stateDict();
    return transfer({ bytes, steps }, [bytes.buffer]);
  },

  /** The length of bytes the page moved here. */
  received({ bytes }) {
    return bytes.length;
  },

  /** A shape error from skiff, thrown in the worker. */
  bad() {
    return skiff.zeros([2, 3]).matmul(skiff.zeros([4, 5]));
  },

  /** Emits 'late' after the call returned, through serve()'s own emit. */
  later({ ms }) {
    setTimeout(() => background.emit('late', { after: ms }), ms);
    return 'scheduled';
  },

  /** Never settles: for terminate(). */
  hang() {
    return new Promise(() => {});
  },
};

const background = serve(skiff, handlers);
