// Ops written by their users (docs/custom-ops.md): a WGSL kernel for
// WebGPU, a JS function for the wasm cpu backend, an optional shape rule and
// a backward written with skiff ops. Rust registers the kernel and runs it
// (src/web/custom.rs); this file makes each call a differentiable Function.

import * as raw from '../pkg/skiff.js';
import { checkOptions, describe, fail } from './checks.js';
import { ready } from './state.js';

/** What a cpu function gets: its inputs (row-major Float64Arrays), the call's scalars, the output's shape. */
class CpuCall {
  constructor(datas, shapes, scalars, shape) {
    this.inputs = datas.map((data, k) => ({ data, shape: shapes[k] }));
    this.scalars = Array.from(scalars);
    this.shape = shape;
    this.numel = shape.reduce((a, b) => a * b, 1);
  }

  /** The element of input k that output element i reads when input k broadcasts to the output (WGSL's bcast). */
  bcast(k, i) {
    const inShape = this.inputs[k].shape;
    const [r, rk] = [this.shape.length, inShape.length];
    let [rem, at, stride] = [i, 0, 1];
    for (let d = r - 1; d >= 0; d--) {
      const c = rem % this.shape[d];
      rem = Math.floor(rem / this.shape[d]);
      if (d + rk >= r) {
        const s = inShape[d + rk - r];
        if (s !== 1) at += c * stride;
        stride *= s;
      }
    }
    return at;
  }
}

/**
 * Registers an op written by the user and resolves to a function that runs
 * it on tensors (differentiable when a backward is given):
 *   const silu = await skiff.customOp({
 *     name: 'silu',
 *     wgsl: 'fn compute(i: u32) -> f32 { let x = X0[i]; return x / (1.0 + exp(-x)); }',
 *     cpu: ({ inputs: [x] }) => x.data.map((v) => v / (1 + Math.exp(-v))),
 *     backward: ({ inputs: [x], grad }) => {
 *       const s = x.sigmoid();
 *       return grad.mul(s.add(x.mul(s).mul(s.neg().add(1))));
 *     },
 *   });
 *   silu(x);                      // an op with scalars: op(a, b, [0.5, 2])
 * Definition: { name, wgsl, cpu, inputs = 1, scalars = 0, shape?, backward? }.
 * With WebGPU open, the promise rejects when the browser's WGSL compiler
 * refuses the kernel, naming the line of `wgsl`.
 */
export async function customOp(definition) {
  ready('customOp');
  if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) {
    throw fail('customOp', 'argument', `the definition must be an object { name, wgsl, cpu, ... }, got ${describe(definition)}`);
  }
  checkOptions('customOp', definition, ['name', 'wgsl', 'cpu', 'inputs', 'scalars', 'shape', 'backward']);
  const { name, wgsl, cpu, inputs = 1, scalars = 0, shape, backward } = definition;
  if (typeof cpu !== 'function') throw fail('customOp', 'argument', `cpu must be a function, got ${describe(cpu)}`);
  if (backward !== undefined && typeof backward !== 'function') {
    throw fail('customOp', 'argument', `backward must be a function, got ${describe(backward)}`);
  }
  const cpuRaw = (datas, shapes, values, outShape) => cpu(new CpuCall(datas, shapes, values, outShape));
  raw.registerCustomOp(name, inputs, scalars, wgsl, cpuRaw, shape);
  await raw.compileCustomOp(name);

  // Each call is one Function (the engine's version-checked copies of the
  // inputs and output come back in backward).
  const backwardOf = (ctx, grad, sc) => {
    if (!backward) {
      throw fail(name, 'autograd', `custom op '${name}' has no backward: give customOp a backward to differentiate it`);
    }
    const saved = ctx.savedTensors;
    const xs = saved.slice(0, -1);
    const out = backward({ inputs: xs, output: saved[saved.length - 1], grad, scalars: sc });
    const grads = Array.isArray(out) ? out : [out];
    if (grads.length !== xs.length) {
      throw fail(name, 'autograd', `custom op '${name}': backward returned ${grads.length} gradients for ${xs.length} inputs`);
    }
    grads.forEach((g, k) => {
      if (g instanceof raw.Tensor && `${g.shape}` !== `${xs[k].shape}`) {
        throw fail(name, 'autograd', `custom op '${name}': backward returned a gradient of shape [${g.shape}] for input ${k} of shape [${xs[k].shape}]`);
      }
    });
    return grads;
  };
  const op = (...args) => {
    let sc = [];
    if (scalars > 0) {
      sc = args.pop();
      if (!Array.isArray(sc)) throw fail(name, 'argument', `the last argument must be the array of ${scalars} scalars, got ${describe(sc)}`);
    }
    args.forEach((x, k) => {
      if (!(x instanceof raw.Tensor)) throw fail(name, 'argument', `input ${k} must be a Tensor, got ${describe(x)}`);
    });
    // The kernel runs first, so its errors name the op; the Function then
    // records it, saving the inputs and the output.
    const y = raw.callCustomOp(name, args, sc);
    const ctx = new raw.FunctionCtx();
    const forward = (...xs) => {
      ctx.saveForBackward([...xs, y]);
      return y;
    };
    return raw.applyFunction(name, ctx, forward, (g) => backwardOf(ctx, g, sc), args)[0];
  };
  Object.defineProperty(op, 'name', { value: name });
  return op;
}
