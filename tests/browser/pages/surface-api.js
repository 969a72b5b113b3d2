// Module functions and Tensor methods outside the op registry, against
// hand-computed values: where, fold/unfold, grad mode, emptyCache,
// backendInfo, devices, safetensors, the in-place and conversion methods,
// autograd properties, and freeing handles. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

/** F.unfold of one [C, H, W] image in plain JS: rows (c, ki, kj), columns the window positions. */
function unfoldRef(x, [C, H, W], [kh, kw], [sh, sw], [ph, pw]) {
  const oh = Math.floor((H + 2 * ph - kh) / sh) + 1;
  const ow = Math.floor((W + 2 * pw - kw) / sw) + 1;
  const out = [];
  for (let c = 0; c < C; c++) {
    for (let a = 0; a < kh; a++) {
      for (let b = 0; b < kw; b++) {
        for (let i = 0; i < oh; i++) {
          for (let j = 0; j < ow; j++) {
            const [r, q] = [i * sh - ph + a, j * sw - pw + b];
            out.push(r >= 0 && r < H && q >= 0 && q < W ? x[(c * H + r) * W + q] : 0);
          }
        }
      }
    }
  }
  return { out, L: oh * ow };
}

export const apiScenarios = {
  async functions(skiff) {
    const { tensor } = skiff;
    const c = checker();

    // ---- where: tensors or numbers on either side; a number takes the other side's dtype.
    const cond = tensor([true, false, true]);
    const [a, b] = [tensor([1, 2, 3], { requiresGrad: true }), tensor([10, 20, 30], { requiresGrad: true })];
    const w = skiff.where(cond, a, b);
    c.equal('where(c, a, b)', await arr(w), [1, 20, 3]);
    w.sum().backward();
    c.equal('where: gradients follow the condition', [await arr(a.grad), await arr(b.grad)], [
      [1, 0, 1],
      [0, 1, 0],
    ]);
    c.equal('where(c, a, 0)', await arr(skiff.where(cond, a, 0)), [1, 0, 3]);
    c.equal('where(c, 7, b)', await arr(skiff.where(cond, 7, b)), [7, 20, 7]);
    const nums = skiff.where(cond, 1, 2);
    c.equal('where(c, 1, 2) is float32', [nums.dtype, await arr(nums)], ['float32', [1, 2, 1]]);
    const ints = skiff.where(cond, tensor(new Int32Array([4, 5, 6])), -1);
    c.equal('where of an int32 tensor and a number stays int32', [ints.dtype, await arr(ints)], ['int32', [4, -1, 6]]);
    c.equal('where broadcasts the condition', await arr(skiff.where(tensor([[true], [false]]), tensor([1, 2]), tensor([[5, 6], [7, 8]]))), [1, 2, 7, 8]);

    // ---- unfold / fold on a [1, 2, 3, 3] image, against plain JS.
    const img = Array.from({ length: 18 }, (_, k) => k - 4);
    const X = tensor(img, { shape: [1, 2, 3, 3] });
    const u = skiff.unfold(X, 2);
    const ref = unfoldRef(img, [2, 3, 3], [2, 2], [1, 1], [0, 0]);
    c.equal('unfold(x, 2): [N, C*kh*kw, L]', Array.from(u.shape), [1, 8, ref.L]);
    c.equal('unfold(x, 2) values', await arr(u), ref.out);
    const us = skiff.unfold(X, [2, 3], { stride: 2, padding: 1 });
    const refS = unfoldRef(img, [2, 3, 3], [2, 3], [2, 2], [1, 1]);
    c.equal('unfold(x, [2, 3], { stride: 2, padding: 1 })', [Array.from(us.shape), await arr(us)], [[1, 12, refS.L], refS.out]);
    // fold sums overlapping windows: fold(unfold(x)) = x times how many windows cover each pixel.
    const cover = [1, 2, 1, 2, 4, 2, 1, 2, 1];
    c.equal('fold(unfold(x, 2), 3, 2) = x * coverage', await arr(skiff.fold(u, 3, 2)), img.map((v, k) => v * cover[k % 9]));
    c.equal('fold(unfold(x, ...), ...) with stride and padding is exact here (no overlap)', await arr(skiff.fold(us, [3, 3], [2, 3], { stride: 2, padding: 1 })), img.map((v, k) => v * [1, 2, 1, 1, 2, 1, 1, 2, 1][k % 9]));

    // ---- grad mode.
    const x = tensor([1, 2], { requiresGrad: true });
    c.equal('setGradEnabled(false) returns the previous mode', skiff.setGradEnabled(false), true);
    c.equal('isGradEnabled() after setGradEnabled(false)', skiff.isGradEnabled(), false);
    const off = x.mul(2);
    c.equal('setGradEnabled(true) returns false', skiff.setGradEnabled(true), false);
    c.equal('nothing is recorded while disabled', [off.requiresGrad, off.gradFn, x.mul(2).requiresGrad], [false, undefined, true]);
    c.equal('enableGrad inside noGrad records', skiff.noGrad(() => skiff.enableGrad(() => x.mul(2).requiresGrad)), true);

    // ---- backend, devices, memory, emptyCache.
    const info = skiff.backendInfo();
    c.equal('backendInfo() names the default device', info.device, skiff.getDefaultDevice());
    c.ok('backendInfo() is what init chose (adapter on WebGPU, a reason on the cpu)', info.device === 'webgpu' ? info.adapter !== null && info.reason === null : info.adapter === null);
    const before = skiff.memory();
    const t = skiff.zeros([256], { device: 'cpu' });
    const during = skiff.memory();
    c.equal('memory(): one more tensor, 1 KiB more on the cpu', [during.tensors - before.tensors, during.bytes.cpu - before.bytes.cpu], [1, 1024]);
    t.dispose();
    c.equal('memory() after dispose', skiff.memory().tensors, before.tensors);
    const was = skiff.getDefaultDevice();
    skiff.setDefaultDevice('cpu');
    c.equal("setDefaultDevice('cpu'): new tensors and layers go there", [skiff.tensor([1]).device, new skiff.nn.Linear(1, 1).parameters()[0].device], ['cpu', 'cpu']);
    skiff.setDefaultDevice(was);
    c.equal('setDefaultDevice back', skiff.ones([1]).device, was);
    if (was === 'webgpu') {
      skiff.tidy(() => skiff.ones([4096]).add(1)); // leaves freed buffers in the pool
      c.ok('the GPU pool holds freed buffers', skiff.memory().gpu.pooledBytes > 0);
      skiff.emptyCache();
      c.equal('emptyCache() frees the pool', skiff.memory().gpu.pooledBytes, 0);
    } else {
      c.equal('emptyCache() without WebGPU has no GPU pool to free', [skiff.emptyCache(), skiff.memory().gpu], [undefined, null]);
    }
    // The cpu pool: 32 KiB buffers (a pooled size) freed by tidy wait there until emptyCache().
    skiff.tidy(() => {
      skiff.ones([8192], { device: 'cpu' }).add(1);
    });
    const cpuPool = skiff.memory().cpu;
    c.ok('the cpu pool holds freed buffers, within its cap', cpuPool.pooledBytes >= 2 * 32768 && cpuPool.pooledBytes <= cpuPool.capBytes);
    c.ok('memory().cpu.wasmMemoryBytes is the size of the wasm heap', cpuPool.wasmMemoryBytes >= cpuPool.liveBytes + cpuPool.pooledBytes);
    skiff.emptyCache();
    c.equal('emptyCache() frees the cpu pool too', [skiff.memory().cpu.pooledBytes, skiff.memory().cpu.liveBytes], [0, cpuPool.liveBytes]);

    // ---- safetensors: a record or [name, tensor] pairs; dtypes survive; a device on load.
    const bytes = await skiff.saveSafetensors([
      ['f', tensor([1.5, -2])],
      ['i', tensor(new Int32Array([3, 4]), { shape: [1, 2] })],
      ['m', tensor([true, false])],
    ]);
    const back = skiff.loadSafetensors(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), { device: 'cpu' });
    const seen = {};
    for (const [k, v] of Object.entries(back)) seen[k] = [v.dtype, Array.from(v.shape), v.device, await arr(v)];
    c.equal('saveSafetensors -> loadSafetensors (an ArrayBuffer, on the cpu)', seen, {
      f: ['float32', [2], 'cpu', [1.5, -2]],
      i: ['int32', [1, 2], 'cpu', [3, 4]],
      m: ['bool', [2], 'cpu', [1, 0]],
    });
    // WebGPU has no float64: such tensors stay on the cpu unless WebGPU is asked for by name.
    const mixed = await skiff.saveSafetensors({ s: tensor(new Float64Array([2]), { device: 'cpu' }), w: tensor([1]) });
    const loaded = skiff.loadSafetensors(mixed);
    c.equal('loadSafetensors: float64 on the cpu, the rest on the default device', [loaded.s.dtype, loaded.s.device, loaded.w.device], ['float64', 'cpu', was]);
    if (was === 'webgpu') {
      await c.throws("loadSafetensors of float64 with { device: 'webgpu' }", () => skiff.loadSafetensors(mixed, { device: 'webgpu' }), /^loadSafetensors:/, /"s"/, /float64/);
    }
    // The WGSL sources the WebGPU pass compiles with the browser's compiler: [name, source] pairs.
    const kernels = skiff.testing.kernelSources();
    c.ok('testing.kernelSources(): [name, WGSL] pairs', kernels.length > 10 && kernels.every(([n, src]) => typeof n === 'string' && /@compute/.test(src)));
    // The names of the kernels the WebGPU device compiled; without one, an Error naming it.
    if (was === 'webgpu') {
      const compiled = skiff.testing.compiledKernels();
      c.ok('testing.compiledKernels(): kernel names', compiled.length > 0 && compiled.every((n) => typeof n === 'string' && n.includes(':')));
    } else {
      await c.throws('testing.compiledKernels() without a WebGPU device', () => skiff.testing.compiledKernels(), /^compiledKernels:/, /no WebGPU device/);
    }
    const rec = skiff.loadSafetensors(await skiff.saveSafetensors({ w: tensor([[1, 2]]) }));
    c.equal('a record of tensors, loaded on the default device', [Array.from(rec.w.shape), rec.w.device], [[1, 2], skiff.getDefaultDevice()]);
    return c.report();
  },

  async tensorMethods(skiff) {
    const { tensor } = skiff;
    const c = checker();
    const m = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    c.equal('ndim, size, shape, dtype', [m.ndim, m.size, Array.from(m.shape), m.dtype], [2, 6, [2, 3], 'float32']);
    c.equal('flip([0, 1])', await arr(m.flip([0, 1])), [6, 5, 4, 3, 2, 1]);
    c.equal('flip(1)', await arr(m.flip(1)), [3, 2, 1, 6, 5, 4]);
    c.equal('select(1, -1)', await arr(m.select(1, -1)), [3, 6]);
    c.equal('view([3, -1])', [Array.from(m.view([3, -1]).shape), await arr(m.view([3, -1]))], [[3, 2], [1, 2, 3, 4, 5, 6]]);
    c.equal('expandAs', await arr(tensor([[1], [2]]).expandAs(m)), [1, 1, 1, 2, 2, 2]);
    c.equal('maskedFill(mask, 0) broadcasts the mask', await arr(m.maskedFill(tensor([true, false, true]), 0)), [0, 2, 0, 0, 5, 0]);
    c.equal('t()', [Array.from(m.t().shape), await arr(m.t())], [[3, 2], [1, 4, 2, 5, 3, 6]]);
    // Sizes that are not a shape: their product is no tensor's size (both were refused as too large).
    const long = skiff.zeros([30000]);
    c.equal('split([10000, 10000, 10000]) of a long axis', long.split([10000, 10000, 10000]).map((p) => p.size), [10000, 10000, 10000]);
    c.equal('pad([20000, 20000]) of one element', skiff.zeros([1]).pad([20000, 20000], 1).size, 40001);
    // clone copies; detach shares memory but leaves the graph.
    const src = tensor([1, 2], { requiresGrad: true });
    const cl = src.clone();
    const de = src.detach();
    c.equal('clone is recorded, detach is not', [cl.requiresGrad, de.requiresGrad, de.isLeaf], [true, false, true]);
    skiff.noGrad(() => src.mul_(10));
    c.equal('detach shares memory, clone does not', [await arr(de), await arr(cl)], [
      [10, 20],
      [1, 2],
    ]);
    // In-place ops return the same values in the same storage.
    const v = tensor([1, 2, 4]);
    v.add_(1);
    v.sub_(tensor([1, 1, 1]));
    v.mul_(tensor([2, 2, 2]));
    v.div_(4);
    c.equal('add_, sub_, mul_, div_ in place', await arr(v), [0.5, 1, 2]);
    c.equal('fill_(3)', await arr(v.fill_(3)), [3, 3, 3]);
    c.equal('zero_()', await arr(v.zero_()), [0, 0, 0]);
    c.equal('copy_ broadcasts and converts int32', await arr(skiff.zeros([2, 2]).copy_(tensor(new Int32Array([7, 8])))), [7, 8, 7, 8]);
    const f = tensor([1.7, -1.7, 0]);
    c.equal('int() truncates toward zero', [f.int().dtype, await arr(f.int())], ['int32', [1, -1, 0]]);
    c.equal('bool(): nonzero is true', [f.bool().dtype, await arr(f.bool())], ['bool', [1, 1, 0]]);
    c.equal('float() of int32', [f.int().float().dtype, await arr(f.int().float())], ['float32', [1, -1, 0]]);
    const cpu = tensor([0.5, 1], { device: 'cpu' });
    c.equal('double() (cpu only)', [cpu.double().dtype, await arr(cpu.double())], ['float64', [0.5, 1]]);
    c.equal('toString of a cpu tensor shows its values', tensor([[1, 2]], { device: 'cpu' }).toString(), 'Tensor(shape=[1, 2], dtype=float32, device=cpu, data=[1.0, 2.0])');
    c.close('item()', await tensor([[2.5]]).item(), 2.5);
    // The dtypes tests/types/dtypes.ts types (Tensor<D>), as the runtime gives them.
    const cpu64 = { device: 'cpu' };
    const dtypes = (ts) => ts.map((t) => t.dtype);
    c.equal(
      'creation infers the dtype as typed',
      dtypes([tensor([1]), tensor(new Float64Array(1), cpu64), tensor(new Int32Array(1)), tensor(new Uint8Array(1)), tensor([true]), tensor([])]).concat(
        dtypes([tensor(new Int32Array(1), { dtype: 'float32' }), skiff.full([1], true), skiff.full([1], 1), skiff.zeros([1]), skiff.randint(0, 2, [1]), skiff.arange(0, 2)]),
      ),
      ['float32', 'float64', 'int32', 'bool', 'bool', 'float32', 'float32', 'bool', 'float32', 'float32', 'int32', 'float32'],
    );
    const ints = tensor([0, 1], { dtype: 'int32' });
    c.equal(
      'ops keep or change the dtype as typed',
      dtypes([m.gt(1), ints.eq(0), m.argmax(1), m.argmin(), m.sum(), m.toDtype('int32'), ints.float(), m.bool(), ints.embedding(m.t()), ints.reshape([2, 1]).t()]),
      ['bool', 'bool', 'int32', 'int32', 'float32', 'int32', 'float32', 'bool', 'float32', 'int32'],
    );
    const kinds = [tensor([1]), tensor(new Float64Array(1), cpu64), ints, tensor([true])];
    c.equal('data() per dtype', (await Promise.all(kinds.map((t) => t.data()))).map((d) => d.constructor.name), ['Float32Array', 'Float64Array', 'Int32Array', 'Uint8Array']);
    c.equal('array() of a bool tensor: booleans; item() of one: a number', [await tensor([true, false]).array(), typeof (await tensor(true).item())], [[true, false], 'number']);
    const h = m.handle();
    m.dispose();
    c.equal('handle(): disposing one handle leaves the other', [m.isDisposed, h.isDisposed, await arr(h.sum())], [true, false, [21]]);
    const moved = await h.toAsync('cpu');
    c.equal("toAsync('cpu')", [moved.device, await arr(moved)], ['cpu', [1, 2, 3, 4, 5, 6]]);
    return c.report();
  },

  async autogradExtras(skiff) {
    const { tensor } = skiff;
    const c = checker();
    const x = tensor([1, 2, 3], { requiresGrad: true });
    const y = x.mul(x);
    c.equal('isLeaf, gradFn, requiresGrad', [x.isLeaf, y.isLeaf, x.gradFn, typeof y.gradFn, y.requiresGrad], [true, false, undefined, 'string', true]);
    y.retainGrad();
    y.sum().backward();
    c.equal('retainGrad keeps the gradient of a non-leaf', await arr(y.grad), [1, 1, 1]);
    c.equal('and the leaf gets 2x', await arr(x.grad), [2, 4, 6]);
    x.grad = tensor([9, 9, 9]);
    c.equal('the grad setter replaces .grad', await arr(x.grad), [9, 9, 9]);
    x.grad = undefined;
    c.equal('setting undefined clears it', x.grad, undefined);
    // A subclass of Function; needsInputGrad per input (PyTorch's ctx.needs_input_grad).
    class Scale extends skiff.Function {
      forward(ctx, a, b) {
        ctx.needs = [ctx.needsInputGrad(0), ctx.needsInputGrad(1), ctx.needsInputGrad(2)];
        ctx.saveForBackward(a, b);
        return a.mul(b);
      }
      backward(ctx, g) {
        const [a, b] = ctx.savedTensors;
        return [g.mul(b), ctx.needs[1] ? g.mul(a) : undefined];
      }
    }
    const fn = new Scale();
    const [p, q] = [tensor([2, 3], { requiresGrad: true }), tensor([5, 7])];
    const out = fn.apply(p, q);
    c.equal('a Function subclass: its name, and the node it records', [fn.name, out.gradFn], ['Scale', 'Scale']);
    out.sum().backward();
    c.equal('needsInputGrad is false for constants and past the inputs', await arr(p.grad), [5, 7]);
    const ctx = new skiff.FunctionCtx();
    c.equal('a fresh ctx needs nothing', ctx.needsInputGrad(0), false);
    ctx.saveForBackward(p, q);
    c.equal('ctx.savedTensors', ctx.savedTensors.length, 2);
    return c.report();
  },

  /**
   * testing.loseDevice(): without WebGPU an Error naming it; with WebGPU the
   * device is destroyed, later GPU work fails saying so, and the cpu still
   * works. Run last in a page: the GPU is gone afterwards.
   */
  async loseDevice(skiff, { gpu }) {
    const c = checker();
    // The error as { isSkiffError, name, op, kind } (null when nothing was thrown).
    const fields = async (fn) => {
      try {
        await fn();
        return null;
      } catch (e) {
        return { isSkiffError: e instanceof skiff.SkiffError, name: e.name, op: e.op, kind: e.kind };
      }
    };
    if (!gpu) {
      await c.throws('loseDevice() without a WebGPU device', () => skiff.testing.loseDevice(), /^loseDevice:/, /no WebGPU device/);
      c.equal('its SkiffError fields', await fields(() => skiff.testing.loseDevice()), { isSkiffError: true, name: 'SkiffError', op: 'loseDevice', kind: 'device' });
      return c.report();
    }
    const onGpu = skiff.ones([2], { device: 'webgpu' });
    skiff.testing.loseDevice();
    await c.throws('GPU work after loseDevice()', async () => skiff.ones([2], { device: 'webgpu' }).add(1).data(), /device was lost/);
    // From the destroyed device itself, not from its message: kind 'device-lost' for the op called.
    c.equal('a GPU op after loseDevice(): its SkiffError fields', await fields(() => onGpu.add(1)), {
      isSkiffError: true,
      name: 'SkiffError',
      op: 'add',
      kind: 'device-lost',
    });
    c.equal('a readback after loseDevice(): its SkiffError fields', await fields(() => onGpu.data()), {
      isSkiffError: true,
      name: 'SkiffError',
      op: 'data',
      kind: 'device-lost',
    });
    c.equal('the cpu still works', Array.from(await skiff.ones([2], { device: 'cpu' }).add(1).data()), [2, 2]);
    return c.report();
  },

  /**
   * autocast's scope (sync and async, restored after a throw) and GradScaler's
   * methods: scale, unscale_ then step (no second division), update, getScale.
   */
  async mixedPrecision(skiff) {
    const { tensor, optim } = skiff;
    const c = checker();
    const half = skiff.backendInfo().autocast.dtype;
    const x = tensor([[1, 2], [3, 4]]);
    c.ok('autocast: matmul in the device\'s f16 dtype', skiff.autocast(() => x.matmul(x).dtype) === half);
    c.ok('autocast is off outside', !skiff.isAutocastEnabled());
    const inside = await skiff.autocast(async () => skiff.isAutocastEnabled());
    c.ok('an async fn keeps autocast on until it settles', inside === true && !skiff.isAutocastEnabled());
    await c.throws('a throw inside restores the state', () => skiff.autocast(() => { throw new Error('inside'); }), /inside/);
    c.ok('after a throw autocast is off', !skiff.isAutocastEnabled());
    await c.throws('autocast without a function', () => skiff.autocast(3), /^autocast:/, /expects a function/);
    const p = tensor([1, -2], { requiresGrad: true });
    const opt = new optim.SGD([p], { lr: 0.5 });
    const scaler = new skiff.GradScaler({ initScale: 8 });
    const loss = p.mul(p).sum();
    const scaled = scaler.scale(loss);
    c.close('scale multiplies by the scale', await arr(scaled), [40]);
    scaled.backward();
    c.ok('unscale_ finds finite gradients', (await scaler.unscale_(opt)) === false);
    c.close('unscale_ divided the gradient', await arr(p.grad), [2, -4]);
    c.ok('step after unscale_ steps', (await scaler.step(opt)) === true);
    c.close('one SGD step on the unscaled gradient', await arr(p), [0, 0]);
    scaler.update();
    c.ok('getScale after one good step', scaler.getScale() === 8);
    await c.throws('GradScaler with an unknown option', () => new skiff.GradScaler({ scale: 2 }), /^GradScaler:/);
    await c.throws('step with no optimizer', () => scaler.step(3), /^GradScaler.step:/, /optimizer must be an Optimizer/);
    return c.report();
  },

  /** free() and [Symbol.dispose]() release any handle; a freed handle passed as an argument is an Error naming the op. */
  async handles(skiff) {
    const { tensor, nn, optim } = skiff;
    const c = checker();
    const make = {
      Tensor: () => tensor([1]),
      Module: () => new nn.ReLU(),
      Loss: () => new nn.MSELoss(),
      Optimizer: () => new optim.SGD([tensor([1], { requiresGrad: true })]),
      LrScheduler: () => new optim.StepLR(new optim.SGD([tensor([1], { requiresGrad: true })]), { stepSize: 1 }),
      FunctionCtx: () => new skiff.FunctionCtx(),
      HookHandle: () => tensor([1], { requiresGrad: true }).registerHook(() => undefined),
      ModuleHookHandle: () => new nn.ReLU().registerForwardHook(() => undefined),
      GradScaler: () => new skiff.GradScaler(),
    };
    // A member each class has, to show the handle is gone (wasm-bindgen throws on a freed one).
    const use = {
      Tensor: (t) => t.shape,
      Module: (m) => m.typeName,
      Loss: (l) => l.typeName,
      Optimizer: (o) => o.typeName,
      LrScheduler: (s) => s.typeName,
      FunctionCtx: (x) => x.savedTensors,
      HookHandle: (h) => h.remove(),
      ModuleHookHandle: (h) => h.remove(),
      GradScaler: (g) => g.getScale(),
    };
    for (const [cls, fresh] of Object.entries(make)) {
      const [one, two] = [fresh(), fresh()];
      c.ok(`${cls}: an instance of skiff.${cls}`, one instanceof skiff[cls]);
      use[cls](one); // usable before
      one.free();
      two[Symbol.dispose]();
      await c.throws(`${cls}: unusable after free()`, () => use[cls](one));
      await c.throws(`${cls}: unusable after [Symbol.dispose]()`, () => use[cls](two));
    }
    const gone = tensor([1, 2]);
    gone.free();
    await c.throws('a freed Tensor as an argument', () => tensor([1, 2]).add(gone), /^add:/, /must be a Tensor/);
    const relu = new nn.ReLU();
    relu[Symbol.dispose]();
    await c.throws('a freed Module in a container', () => new nn.Sequential([relu]), /^Sequential:/, /modules\[0\] must be a Module/);
    const sgd = new optim.SGD([tensor([1], { requiresGrad: true })]);
    sgd.free();
    await c.throws('a freed Optimizer under a scheduler', () => new optim.StepLR(sgd, { stepSize: 1 }), /^StepLR:/, /optimizer must be an Optimizer/);
    // Freeing a hook's handle keeps the hook (as dropping a RemovableHandle does in PyTorch); remove() removes it.
    const w = tensor([1, 2], { requiresGrad: true });
    let calls = 0;
    w.registerHook(() => {
      calls++;
    }).free();
    w.sum().backward();
    const lin = new nn.Linear(1, 1);
    let forwards = 0;
    const mh = lin.registerForwardHook(() => {
      forwards++;
    });
    lin.forward(tensor([[1]]));
    mh.remove();
    lin.forward(tensor([[1]]));
    c.equal('hooks: a freed handle keeps its hook, remove() drops it', [calls, forwards], [1, 1]);
    return c.report();
  },
};
