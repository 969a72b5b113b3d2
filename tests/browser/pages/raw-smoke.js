// Smoke test on the raw wasm-bindgen module (pkg/skiff.js), below the JS
// wrapper: the wasm loads, the backend opens, an op runs and reads back.
import initWasm, * as raw from '/pkg/skiff.js';

/** What the browser itself reports for its WebGPU adapter (null without one). */
async function browserAdapter() {
  if (!navigator.gpu) return null;
  const a = await navigator.gpu.requestAdapter();
  if (!a) return null;
  const { vendor, architecture, device, description } = a.info ?? {};
  return { vendor, architecture, device, description };
}

export async function run(passName) {
  const adapter = await browserAdapter();
  await initWasm();
  const info = await raw.initBackend(passName === 'webgpu' ? 'webgpu' : 'cpu');
  const x = raw.Tensor.fromData(new Float32Array([1, 2, 3]), [3], {});
  // Registry ops are generated methods: web/api.js installs them from
  // opMethods(); the raw module reaches them by id.
  const add = raw.opMethods().find((m) => m.name === 'add');
  const y = raw.callMethod1(add.id, x, 1);
  const values = Array.from(await y.data());
  const out = {
    info,
    adapter,
    hasGpu: 'gpu' in navigator,
    values,
    device: y.device,
    dtype: y.dtype,
    shape: Array.from(y.shape),
  };
  x.dispose();
  y.dispose();
  out.memory = raw.memoryInfo();
  return out;
}
