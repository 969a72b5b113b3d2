// The page half of webgpu-index.test.mjs: index tensors made on the GPU
// (int32 zeros/full, argmax results) used as indices and labels, out-of-range
// values made on the GPU, and a GPU allocation that fails in the driver.
// Each export returns plain data; the Node half asserts on it.
import * as skiff from '/web/index.js';

const arr = async (t) => Array.from(await t.data());
const GPU = { device: 'webgpu' };
const I32 = { dtype: 'int32', device: 'webgpu' };

export async function setup() {
  const info = await skiff.init({ device: 'webgpu' });
  return { device: info.device };
}

const readbacks = () => skiff.memory().gpu.readbacks;

/** Runs `fn` (synchronous skiff calls) and reports whether it read anything back. */
function noReadback(fn) {
  const before = readbacks();
  const out = fn();
  return { out, readbacks: readbacks() - before };
}

/** A [rows, cols] float tensor with distinct values, as a flat array. */
function ramp(rows, cols, seed) {
  return Array.from({ length: rows * cols }, (_, i) => (((i * 37 + seed * 11) % 29) - 14) / 7);
}

/**
 * Each op on device-made int32 indices (zeros, full, argmax), forward and
 * backward, next to the same op on the cpu with the same index values; and
 * how many readbacks the op itself made.
 */
export async function deviceMadeIndices() {
  const out = {};
  const scores = ramp(4, 5, 1);
  const labelSets = {
    zeros: () => skiff.zeros([4], I32),
    full: () => skiff.full([4], 3, I32),
    argmax: () => skiff.tensor(ramp(4, 5, 2), { shape: [4, 5], ...GPU }).argmax(1),
  };
  for (const [name, make] of Object.entries(labelSets)) {
    const labels = make();
    const cpuLabels = skiff.tensor(await labels.data(), { dtype: 'int32', shape: [4], device: 'cpu' });
    const run = (device, y) => {
      const x = skiff.tensor(scores, { shape: [4, 5], device, requiresGrad: true });
      const { out: loss, readbacks: r } = noReadback(() => x.crossEntropy(y, { labelSmoothing: 0.1 }));
      loss.backward();
      return { loss, grad: x.grad, readbacks: r };
    };
    const g = run('webgpu', labels);
    const c = run('cpu', cpuLabels);
    out[`crossEntropy/${name}`] = {
      readbacks: g.readbacks,
      gpu: [await g.loss.item(), ...(await arr(g.grad))],
      cpu: [await c.loss.item(), ...(await arr(c.grad))],
    };
  }
  // gather, indexSelect, embedding, scatterAdd, indexAdd on zeros/full/argmax indices.
  const x = ramp(5, 3, 3);
  const ops = {
    'gather/full': [() => skiff.full([2, 3], 4, I32), (t, i) => t.gather(0, i), [5, 3]],
    'gather/argmax': [() => skiff.tensor(ramp(2, 5, 4), { shape: [2, 5], ...GPU }).argmax(1, { keepdim: true }), (t, i) => t.gather(0, i.expand([2, 3])), [5, 3]],
    'indexSelect/zeros': [() => skiff.zeros([3], I32), (t, i) => t.indexSelect(0, i), [5, 3]],
    'indexSelect/full': [() => skiff.full([2], 2, I32), (t, i) => t.indexSelect(1, i), [5, 3]],
    'embedding/full': [() => skiff.full([2, 2], 4, I32), (t, i) => i.embedding(t), [5, 3]],
    'embedding/argmax': [() => skiff.tensor(ramp(3, 5, 5), { shape: [3, 5], ...GPU }).argmax(1), (t, i) => i.embedding(t), [5, 3]],
    'scatterAdd/full': [() => skiff.full([2, 3], 1, I32), (t, i) => t.scatterAdd(0, i, skiff.ones([2, 3], { device: t.device })), [5, 3]],
    'scatterAdd/argmax': [() => skiff.tensor(ramp(2, 5, 6), { shape: [2, 5], ...GPU }).argmax(1, { keepdim: true }).expand([2, 3]).contiguous(), (t, i) => t.scatterAdd(0, i, skiff.ones([2, 3], { device: t.device })), [5, 3]],
    'indexAdd/zeros': [() => skiff.zeros([4], I32), (t, i) => t.indexAdd(0, i, skiff.ones([4, 3], { device: t.device })), [5, 3]],
  };
  for (const [name, [make, op, shape]] of Object.entries(ops)) {
    const index = make();
    const cpuIndex = skiff.tensor(await index.data(), { dtype: 'int32', shape: index.shape, device: 'cpu' });
    const run = (device, i) => {
      const t = skiff.tensor(x, { shape, device, requiresGrad: true });
      const { out: y, readbacks: r } = noReadback(() => op(t, i));
      const n = y.shape.reduce((a, b) => a * b, 1);
      const w = Array.from({ length: n }, (_, k) => (((k * 13) % 11) - 5) / 5);
      y.mul(skiff.tensor(w, { shape: y.shape, device })).sum().backward();
      return { y, grad: t.grad, readbacks: r };
    };
    const g = run('webgpu', index);
    const c = run('cpu', cpuIndex);
    out[name] = { readbacks: g.readbacks, gpu: [...(await arr(g.y)), ...(await arr(g.grad))], cpu: [...(await arr(c.y)), ...(await arr(c.grad))] };
  }
  return out;
}

/** An empty batch of device-made indices through every op. */
export async function emptyBatch() {
  const none = skiff.zeros([0], I32);
  const scores = skiff.zeros([0, 5], GPU).requiresGrad_(true);
  const loss = scores.crossEntropy(none, { reduction: 'sum' });
  loss.backward();
  const x = skiff.tensor(ramp(4, 3, 1), { shape: [4, 3], ...GPU });
  return {
    loss: await loss.item(),
    grad: scores.grad.shape,
    indexSelect: x.indexSelect(0, none).shape,
    gather: (await arr(x.gather(1, skiff.zeros([4, 0], I32)))).length,
    embedding: none.embedding(x).shape,
    scatterAdd: await arr(x.scatterAdd(0, skiff.zeros([0, 3], I32), skiff.zeros([0, 3], GPU))),
    x: await arr(x),
  };
}

async function rejection(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return String(e?.message ?? e);
  }
}

/** The SkiffError fields of what `promise` rejects with ({ isSkiffError, op, kind, innerOp }), or null. */
async function rejectionFields(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return { isSkiffError: e instanceof skiff.SkiffError, op: e?.op, kind: e?.kind, innerOp: e?.innerOp ?? null };
  }
}

/**
 * Each op with out-of-range indices made on the GPU: whether the call threw,
 * the message the next readback rejects with, the same result read again
 * (the error is reported once), the same indices used again, and a later
 * unrelated computation.
 */
export async function outOfRange() {
  const x = () => skiff.tensor(ramp(5, 3, 3), { shape: [5, 3], ...GPU });
  const cases = {
    gather: () => x().gather(0, skiff.full([2, 3], 7, I32)),
    indexSelect: () => x().indexSelect(0, skiff.full([2], -1, I32)),
    embedding: () => skiff.full([2, 2], 5, I32).embedding(x()),
    scatterAdd: () => x().scatterAdd(0, skiff.full([1, 3], 9, I32), skiff.ones([1, 3], GPU)),
    indexAdd: () => x().indexAdd(0, skiff.full([2], 6, I32), skiff.ones([2, 3], GPU)),
    crossEntropy: () => skiff.tensor(ramp(3, 4, 1), { shape: [3, 4], ...GPU }).crossEntropy(skiff.full([3], 4, I32), { reduction: 'none' }),
  };
  const out = {};
  for (const [name, run] of Object.entries(cases)) {
    let y;
    let threw = null;
    try {
      y = run();
    } catch (e) {
      threw = String(e?.message ?? e);
    }
    const first = y ? await rejection(y.data()) : null;
    const again = y ? await arr(y) : null;
    const reused = y ? await rejection(run().data()) : null;
    const reusedFields = y ? await rejectionFields(run().data()) : null;
    const later = await arr(skiff.tensor([1, 2, 3], GPU).mul(2));
    out[name] = { threw, first, again, reused, reusedFields, later };
  }
  out.x = Array.from(ramp(5, 3, 3));
  return out;
}

/**
 * zeros([2**14, 2**14]) on WebGPU: 1 GiB, within SwiftShader's maxBufferSize
 * (1 GiB) and so skiff's size check, but more than its driver can allocate.
 * The call returns (the browser learns of the failure only later); the next
 * readback rejects naming the op; work recorded before the allocation is
 * intact and work recorded with it reads as lost; the big tensor reads as an
 * error; its buffer never enters the pool; later work succeeds.
 */
export async function outOfMemory() {
  const before = skiff.memory().gpu;
  const earlier = skiff.tensor([1, 2, 3], GPU).mul(2);
  let big;
  let threw = null;
  try {
    big = skiff.zeros([2 ** 14, 2 ** 14], GPU);
  } catch (e) {
    threw = String(e?.message ?? e);
  }
  const withIt = earlier.add(1); // recorded in the batch the failed buffer invalidates
  const first = await rejection(withIt.data());
  const withItAgain = await rejection(withIt.data());
  const earlierValues = await arr(earlier);
  const bigRead = big ? await rejection(big.data()) : null;
  const bigReadFields = big ? await rejectionFields(big.data()) : null;
  big?.dispose();
  const afterDispose = skiff.memory().gpu;
  // The device keeps working: ops, a gradient, readbacks, a new allocation.
  const later = await arr(earlier.mul(10));
  const w = skiff.tensor([0.5, -0.5], { device: 'webgpu', requiresGrad: true });
  w.mul(w).sum().backward();
  const grad = await arr(w.grad);
  const fresh = await arr(skiff.zeros([1024, 1024], GPU).add(1).sum());
  return {
    threw,
    first,
    withItAgain,
    earlierValues,
    bigRead,
    bigReadFields,
    later,
    grad,
    fresh,
    liveBefore: before.liveBytes,
    liveAfter: afterDispose.liveBytes,
    pooledAfter: afterDispose.pooledBytes,
  };
}
