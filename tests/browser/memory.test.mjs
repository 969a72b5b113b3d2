// The wasm heap of a long cpu training loop in Node. The loop a page runs:
// a 784-128-10 MLP, Adam, and a fresh input tensor (and labels) made from JS
// arrays every step, as a data loader hands them over. The cpu buffer pool
// used to keep every freed input buffer (their exact lengths never matched a
// later request) until its fixed 256 MiB cap, and wasm memory never shrinks:
// about 22 MiB more per 100 steps. The pool now follows what is live, so
// after a warm-up the heap must stop growing.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';

const MiB = 1 << 20;
const STEPS = 1000;
const WARMUP = 100;
const BATCH = 64;

/** A small deterministic generator (xorshift32), so every run draws the same inputs. */
function generator(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

describe('memory: the cpu pool in a long training loop', { timeout: 600_000 }, () => {
  let skiff;
  let cleanup = () => {};
  before(async () => {
    assertBuilt({ wrapper: true });
    ({ skiff, cleanup } = await importForNode('skiff-memory-'));
    await skiff.init({ device: 'cpu' });
  });
  after(() => cleanup());

  test(`${STEPS} MLP steps with a fresh input each step: the wasm memory grows at most 10 MiB after step ${WARMUP}`, async (t) => {
    const { nn, optim, tensor, tidy, memory } = skiff;
    skiff.manualSeed(7);
    const model = new nn.Sequential([new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10)]);
    const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
    const rand = generator(12345);
    const x = new Float32Array(BATCH * 784);
    const y = new Int32Array(BATCH);
    const wasm = () => memory().cpu.wasmMemoryBytes;
    let atWarmup = 0;
    let loss = NaN;
    const samples = [];
    for (let step = 1; step <= STEPS; step++) {
      for (let i = 0; i < x.length; i++) x[i] = rand();
      for (let i = 0; i < y.length; i++) y[i] = Math.floor(rand() * 10);
      const l = tidy(() => {
        const input = tensor(x, { shape: [BATCH, 784] });
        const labels = tensor(y);
        opt.zeroGrad();
        const out = model.forward(input).crossEntropy(labels);
        out.backward();
        opt.step();
        return out;
      });
      if (step === STEPS) loss = await l.item();
      l.dispose();
      if (step === WARMUP) atWarmup = wasm();
      if (step % 100 === 0) {
        const m = memory();
        samples.push(`${step}: wasm ${(m.cpu.wasmMemoryBytes / MiB).toFixed(1)} MiB, live ${(m.cpu.liveBytes / MiB).toFixed(2)}, pooled ${(m.cpu.pooledBytes / MiB).toFixed(2)}, cap ${(m.cpu.capBytes / MiB).toFixed(2)}`);
        // The pool never holds more than its cap, and the cap follows what
        // is live (the recent peak, a 4 MiB floor): here well under 16 MiB.
        assert.ok(m.cpu.pooledBytes <= m.cpu.capBytes, samples.at(-1));
        assert.ok(m.cpu.capBytes <= 16 * MiB, samples.at(-1));
      }
    }
    const end = wasm();
    t.diagnostic(samples.join('; '));
    t.diagnostic(`wasm memory at step ${WARMUP}: ${(atWarmup / MiB).toFixed(1)} MiB, at step ${STEPS}: ${(end / MiB).toFixed(1)} MiB`);
    assert.ok(atWarmup > 0, 'memory().cpu.wasmMemoryBytes reads the WebAssembly.Memory');
    assert.ok(Number.isFinite(loss), `the loss stays finite (${loss})`);
    assert.ok(end - atWarmup <= 10 * MiB, `wasm memory grew ${((end - atWarmup) / MiB).toFixed(1)} MiB from step ${WARMUP} to ${STEPS} (at most 10 MiB)`);
  });

  test('emptyCache() empties the cpu pool and leaves live tensors alone', async () => {
    const { tensor, tidy, memory, emptyCache } = skiff;
    const keep = tensor(new Float32Array(8192).fill(2)); // 32 KiB: a pooled size
    tidy(() => {
      keep.mul(3).add(1); // frees two pooled-size buffers
    });
    assert.ok(memory().cpu.pooledBytes > 0, 'freed buffers wait in the pool');
    const live = memory().cpu.liveBytes;
    emptyCache();
    assert.equal(memory().cpu.pooledBytes, 0);
    assert.equal(memory().cpu.liveBytes, live);
    assert.deepEqual(Array.from((await keep.data()).slice(0, 2)), [2, 2]);
    keep.dispose();
  });
});
