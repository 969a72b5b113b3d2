// A custom op in JS (docs/custom-ops.md): SiLU, x * sigmoid(x), as one WGSL
// kernel (run on WebGPU) and a JS function (run on the cpu backend), with a
// backward written in skiff ops, so it differentiates twice.
//   node examples/js/custom-op.mjs
import * as skiff from 'skiff-ml';

await skiff.init();
const silu = await skiff.customOp({
  name: 'silu',
  wgsl: 'fn compute(i: u32) -> f32 { let x = X0[i]; return x / (1.0 + exp(-x)); }',
  cpu: ({ inputs: [x] }) => x.data.map((v) => v / (1 + Math.exp(-v))), // the wasm cpu backend
  backward: ({ inputs: [x], grad }) => {
    const s = x.sigmoid();
    return grad.mul(s.add(x.mul(s).mul(s.neg().add(1))));
  },
});
const x = skiff.tensor([-1, 0, 2], { requiresGrad: true });
const y = silu(x);
y.sum().backward();
console.log(`silu: ${Array.from(await y.data(), (v) => v.toFixed(6)).join(', ')}`);
console.log(`grad: ${Array.from(await x.grad.data(), (v) => v.toFixed(6)).join(', ')}`);
