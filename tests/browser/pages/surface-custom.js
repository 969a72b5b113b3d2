// Custom ops (skiff.customOp) against analytic values: x * sigmoid(x) as one
// kernel (WGSL on WebGPU, its JS cpu function on the cpu) with first and
// second derivatives, the WebGPU kernel against the cpu function, scalars
// and broadcasting, a shape rule, capture under jit, and the errors: WGSL
// the browser's compiler refuses (WebGPU) names the user's line, and calls
// or definitions that do not fit name the op. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

const sig = (v) => 1 / (1 + Math.exp(-v));
// d/dx x s(x) and d2/dx2.
const d1 = (v) => sig(v) * (1 + v * (1 - sig(v)));
const d2 = (v) => sig(v) * (1 - sig(v)) * (2 + v * (1 - 2 * sig(v)));

const SILU = `fn compute(i: u32) -> f32 {
    let x = X0[i];
    return x / (1.0 + exp(-x));
}`;

// A scenario may run twice in one module instance (Node runs each suite in
// one process): each run registers its own names.
let runs = 0;

export const customScenarios = {
  async customOps(skiff) {
    const c = checker();
    const tag = `${runs++}`;
    const gpu = skiff.getDefaultDevice() === 'webgpu';
    const cpu = { device: 'cpu' };

    const silu = await skiff.customOp({
      name: `silu_${tag}`,
      wgsl: SILU,
      cpu: ({ inputs: [x] }) => x.data.map((v) => v * sig(v)),
      backward: ({ inputs: [x], grad }) => {
        const s = x.sigmoid();
        return grad.mul(s.add(x.mul(s).mul(s.neg().add(1))));
      },
    });
    const xs = [-3, -0.5, 0, 0.25, 2, 4];
    const x = skiff.tensor(xs, { requiresGrad: true });
    const y = silu(x);
    c.equal('the op runs on the default device', [y.device, y.shape], [skiff.getDefaultDevice(), [6]]);
    c.close('x * sigmoid(x)', await arr(y), xs.map((v) => v * sig(v)));
    const [g] = skiff.grad([y.sum()], [x], { createGraph: true });
    c.close("the first derivative (backward in skiff ops)", await arr(g), xs.map(d1));
    const [g2] = skiff.grad([g.sum()], [x]);
    c.close('the second derivative (createGraph through the backward)', await arr(g2), xs.map(d2), { atol: 1e-5, rtol: 1e-4 });
    if (gpu) {
      const many = skiff.randn([4096]).mul(3);
      const [onGpu, onCpu] = [silu(many), silu(await many.toAsync('cpu'))];
      c.close('the WGSL kernel on WebGPU matches the cpu function', await arr(onGpu), await arr(onCpu), { atol: 1e-5, rtol: 1e-5 });
    }

    // Two inputs that broadcast, two scalars: a + s0 * b + s1.
    const axpb = await skiff.customOp({
      name: `axpb_${tag}`,
      inputs: 2,
      scalars: 2,
      wgsl: 'fn compute(i: u32) -> f32 { return X0[bcast(0u, i)] + scalar(0u) * X1[bcast(1u, i)] + scalar(1u); }',
      cpu: (call) => {
        const [a, b] = call.inputs;
        const [s0, s1] = call.scalars;
        return Float64Array.from({ length: call.numel }, (_, i) => a.data[call.bcast(0, i)] + s0 * b.data[call.bcast(1, i)] + s1);
      },
      backward: ({ grad, scalars }) => [grad, grad.mul(scalars[0]).sum(0)],
    });
    const a = skiff.tensor([[1, 2, 3], [4, 5, 6]], { requiresGrad: true });
    const b = skiff.tensor([10, 20, 30], { requiresGrad: true });
    const z = axpb(a, b, [0.5, -1]);
    c.equal('broadcast shape', z.shape, [2, 3]);
    c.close('a + 0.5 b - 1', await arr(z), [5, 11, 17, 8, 14, 20]);
    z.sum().backward();
    c.close('its gradients', [await arr(a.grad), await arr(b.grad)], [[1, 1, 1, 1, 1, 1], [1, 1, 1]]);
    c.close('the cpu function, the same values', await arr(axpb(await a.toAsync('cpu'), await b.toAsync('cpu'), [0.5, -1])), [5, 11, 17, 8, 14, 20]);

    // A shape rule and a kernel that loops: each row's sum of squares.
    const rowSumsq = await skiff.customOp({
      name: `row_sumsq_${tag}`,
      wgsl: `fn compute(i: u32) -> f32 {
    let d = in_dim(0u, 1u);
    var s = 0.0;
    for (var j = 0u; j < d; j = j + 1u) { let v = X0[i * d + j]; s = s + v * v; }
    return s;
}`,
      shape: ([[n, d]]) => {
        if (d === undefined) throw new Error('takes a matrix');
        return [n];
      },
      cpu: ({ inputs: [m] }) => Array.from({ length: m.shape[0] }, (_, r) => m.data.slice(r * m.shape[1], (r + 1) * m.shape[1]).reduce((s, v) => s + v * v, 0)),
    });
    const m = skiff.tensor([[1, 2], [3, 4], [5, 6]]);
    c.close('row sums of squares of [3, 2], transposed to [2, 3]', await arr(rowSumsq(m.transpose(0, 1))), [1 + 9 + 25, 4 + 16 + 36]);
    await c.throws('a shape the rule refuses', () => rowSumsq(skiff.tensor([1, 2])), new RegExp(`^row_sumsq_${tag}: .*takes a matrix`));

    // Captured under jit: the kernel is one step of the program.
    const step = skiff.jit((t) => silu(t).mul(2));
    step(skiff.tensor([1, 2]));
    const again = step(skiff.tensor([-1, 0.5]));
    c.close('jit replays the custom op', await arr(again), [-1, 0.5].map((v) => 2 * v * sig(v)));
    c.equal('one capture, one replay', [step.captures, step.replays], [1, 1]);
    c.ok('the program names the kernel', step.program.includes(`custom:silu_${tag}`), step.program);

    // Errors: each names the op (or customOp for a definition).
    await c.throws('two inputs to a one-input op', () => silu(x, x), new RegExp(`^silu_${tag}: .*takes 1 inputs, got 2`));
    await c.throws('a number for a tensor', () => silu(3), new RegExp(`^silu_${tag}: input 0 must be a Tensor`));
    await c.throws('scalars missing', () => axpb(a, b), new RegExp(`^axpb_${tag}: the last argument must be the array of 2 scalars`));
    await c.throws('an int32 input', () => silu(skiff.tensor([1, 2], { dtype: 'int32' })), /float tensors/, /int32 at input 0/);
    await c.throws('no cpu function', () => skiff.customOp({ name: `nocpu_${tag}`, wgsl: SILU }), /^customOp: cpu must be a function/);
    await c.throws('an unknown key', () => skiff.customOp({ name: `k_${tag}`, wgsl: SILU, cpu: () => [], grad: () => [] }), /^customOp: unknown option "grad"/);
    await c.throws('a name taken', () => skiff.customOp({ name: `silu_${tag}`, wgsl: SILU, cpu: () => [] }), /already registered/);
    await c.throws(
      'bindings of its own',
      () => skiff.customOp({ name: `bind_${tag}`, wgsl: '@group(0) @binding(5) var<storage, read> Y: array<f32>;\nfn compute(i: u32) -> f32 { return Y[i]; }', cpu: () => [] }),
      /^customOp: .*declares bindings/,
    );
    const short = await skiff.customOp({ name: `short_${tag}`, wgsl: SILU, cpu: () => [0] });
    await c.throws('a cpu function returning too few values', () => short(skiff.tensor([1, 2, 3], cpu)), new RegExp(`^short_${tag}: .*returned 1 values for an output of shape \\[3\\]`));
    const throwing = await skiff.customOp({ name: `throws_${tag}`, wgsl: SILU, cpu: () => { throw new Error('boom'); } });
    await c.throws('a cpu function that throws', () => throwing(skiff.tensor([1], cpu)), /its cpu function failed: it threw: boom/);
    const noBackward = await skiff.customOp({ name: `nograd_${tag}`, wgsl: SILU, cpu: ({ inputs: [v] }) => v.data });
    await c.throws('differentiating an op without backward', () => noBackward(skiff.tensor([1, 2], { requiresGrad: true })).sum().backward(), /has no backward/);

    // WGSL the browser's compiler refuses: the line of the user's source.
    const bad = `fn compute(i: u32) -> f32 {\n    return X0[i] * nope;\n}`;
    const badDef = { name: `bad_wgsl_${tag}`, wgsl: bad, cpu: ({ inputs: [v] }) => v.data };
    if (gpu) {
      await c.throws('WGSL that does not compile', () => skiff.customOp(badDef), new RegExp(`^customOp: custom op 'bad_wgsl_${tag}': its WGSL does not compile`), /at line 2/, /X0\[i\] \* nope/);
      c.close('the device works on after it', await arr(silu(skiff.tensor([1]))), [sig(1)]);
      const fixed = await skiff.customOp({ ...badDef, wgsl: SILU });
      c.close('the refused name is free again', await arr(fixed(skiff.tensor([1]))), [sig(1)]);
    } else {
      // Without WebGPU no WGSL compiler is at hand: the op registers and its cpu function runs.
      const unchecked = await skiff.customOp(badDef);
      c.close('without WebGPU the WGSL is not compiled', await arr(unchecked(skiff.tensor([7]))), [7]);
    }
    return c.report();
  },
};
