// The "layers" group of the browser benchmark (re-exported by bench.js): the
// work of examples/layer_steps.rs, in the browser, on the backend init()
// chose. Native figures and PyTorch's are from benches/layers.sh.
import * as sk from '/web/index.js';
import { median, samples } from './timing.js';

const { nn } = sk;

/** A layer's forward and backward of sum(output) on an input of `shape`: the gradients of the input and of every parameter. */
async function layerCall(layer, shape) {
  const r = sk.randn(shape);
  const x = sk.tensor(await r.data(), { shape, requiresGrad: true });
  r.dispose();
  const params = layer.parameters();
  return async () => {
    const [y, ...grads] = sk.tidy(() => {
      const y = layer.forward(x).sum();
      return [y, ...sk.grad(y, [x, ...params])];
    });
    await Promise.all([y.data(), grads[0].data()]);
    sk.dispose([y, ...grads]);
  };
}

const WORK = {
  // LSTM 256 -> 256 over 64 steps at batch 32 (sequence first).
  lstm: () => layerCall(new nn.LSTM(256, 256), [64, 32, 256]),
  // A DCGAN ConvTranspose2d: 128 -> 64 channels, kernel 4, stride 2, padding 1.
  convt: () => layerCall(new nn.ConvTranspose2d(128, 64, 4, { stride: 2, padding: 1 }), [64, 128, 16, 16]),
  // A sort of 2^20 floats: the values and their positions, forward only.
  sort: async () => {
    const x = sk.randn([1 << 20]);
    return async () => {
      // One sort: Rust's sort is this argsort and gather (JS's sort returns
      // the values alone).
      const [values, indices] = sk.tidy(() => {
        const indices = x.argsort(0);
        return [x.gather(0, indices), indices];
      });
      await Promise.all([values.data(), indices.data()]);
      sk.dispose([values, indices]);
    };
  },
};

/** ms per call of `kind` ('lstm', 'convt', 'sort'): the median of `runs` calls after `warmup`. */
export async function layerStep(kind, { runs = 5, warmup = 2 } = {}) {
  sk.manualSeed(0);
  const call = await WORK[kind]();
  const ts = await samples(call, { runs, warmup });
  return { kind, ms: median(ts), runs: ts };
}
