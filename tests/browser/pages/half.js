// The page half of half.test.mjs: float16 tensors in the browser. On the
// wasm cpu backend they compute (f32 kernels, one rounding per op); on a
// WebGPU adapter without shader-f16 (SwiftShader) they are an error naming
// the missing feature, and float32 work goes on. Returns plain data.
import * as skiff from '/web/index.js';

export async function setup(device) {
  const info = await skiff.init({ device });
  return { device: info.device, shaderF16: info.adapter?.shaderF16 ?? null };
}

const arr = async (t) => Array.from(await t.data());

/** What a synchronous call throws ({ message, kind, op }), or null. */
function thrown(fn) {
  try {
    fn();
    return null;
  } catch (e) {
    return { message: String(e?.message ?? e), kind: e?.kind ?? null, op: e?.op ?? null };
  }
}

/** float16 on the cpu: casts, arithmetic, a product, gradients. */
export async function onTheCpu() {
  const cpu = { device: 'cpu' };
  const x = skiff.tensor([0.1, 1 + 1 / 4096, 65520, -2.5], { dtype: 'float16', ...cpu });
  const a = skiff.tensor([[1, 2], [3, 4]], { dtype: 'float16', ...cpu, requiresGrad: true });
  const b = skiff.tensor([[0.5, -1], [2, 0.25]], { dtype: 'float16', ...cpu });
  const p = a.matmul(b);
  p.mul(p).sum().backward();
  const viaCast = skiff.tensor([0.1, 3], cpu).toDtype('float16');
  return {
    dtype: x.dtype,
    values: await arr(x),
    product: await arr(p),
    productDtype: p.dtype,
    grad: await arr(a.grad),
    gradDtype: a.grad.dtype,
    cast: await arr(viaCast),
    backToFloat32: await arr(viaCast.toDtype('float32')),
    badDtype: thrown(() => skiff.zeros([2], { dtype: 'half' })),
  };
}

/** float16 asked of the WebGPU device. */
export async function onTheGpu() {
  const gpu = { device: 'webgpu' };
  const made = thrown(() => skiff.tensor([1, 2], { dtype: 'float16', ...gpu }));
  const zeros = thrown(() => skiff.zeros([2], { dtype: 'float16', ...gpu }));
  const moved = thrown(() => skiff.tensor([1, 2], { dtype: 'float16', device: 'cpu' }).to('webgpu'));
  // The device still works for float32 after the refusals.
  const ok = await arr(skiff.tensor([1, 2], gpu).mul(3));
  return { made, zeros, moved, ok };
}

/**
 * autocast and GradScaler on `device`: the dtypes autocast picks, what
 * backendInfo says, the console warning (counted), and scaled training steps
 * (one skipped on an inf gradient, with the scale halved).
 */
export async function mixedPrecision(device) {
  const { nn, optim } = skiff;
  const on = { device };
  const warnings = [];
  const warn = console.warn;
  console.warn = (...a) => warnings.push(a.join(' '));
  const x = skiff.tensor([[1, 2, 3, 4], [0.5, -1, 2, 0]], on);
  const w = skiff.tensor([[1, 0], [0, 1], [1, 1], [-1, 0.5]], on);
  const dtypes = skiff.autocast(() => {
    const y = x.matmul(w);
    return { matmul: y.dtype, softmax: y.softmax(1).dtype, sum: y.sum().dtype, relu: y.relu().dtype, enabled: skiff.isAutocastEnabled() };
  });
  skiff.autocast(() => x.matmul(w)); // a second scope: no second warning
  console.warn = warn;
  const model = new nn.Linear(4, 2);
  if (device === 'webgpu') model.to('webgpu');
  const opt = new optim.SGD(model.parameters(), { lr: 0.1 });
  const scaler = new skiff.GradScaler({ initScale: 1024, growthInterval: 2 });
  const labels = skiff.tensor([0, 1], { dtype: 'int32', ...on });
  const steps = [];
  const readbacks = () => skiff.memory().gpu?.readbacks ?? 0;
  for (const bad of [false, true, false, false]) {
    opt.zeroGrad();
    const input = bad ? skiff.tensor([[1, Infinity, 3, 4], [0.5, -1, 2, 0]], on) : x;
    const loss = skiff.autocast(() => model.forward(input).crossEntropy(labels));
    scaler.scale(loss).backward();
    const before = readbacks();
    const stepped = await scaler.step(opt);
    steps.push({ stepped, readbacks: readbacks() - before, lossDtype: loss.dtype });
    scaler.update();
  }
  const misuse = thrown(() => scaler.update());
  return {
    autocast: skiff.backendInfo().autocast,
    dtypes,
    after: skiff.isAutocastEnabled(),
    warnings,
    steps,
    scale: scaler.getScale(),
    weightDtype: model.parameters()[0].dtype,
    misuse,
    badOption: thrown(() => new skiff.GradScaler({ backoffFactor: 2 })),
  };
}
