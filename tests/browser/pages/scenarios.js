// Scenarios shared by the browser passes (through pages/suite.js) and the
// Node test (tests/browser/node.test.mjs). Each takes the skiff module and
// returns plain data (numbers, arrays, strings, booleans); the assertions,
// with their analytic truths, live in tests/browser/lib/expect.mjs.
//
// No imports here: the same file runs in Chromium and in Node.

const arr = async (t) => Array.from(await t.data());

/** A small deterministic PRNG (mulberry32), so data never depends on skiff's own. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The XOR task: four gaussian blobs (std 0.35) at (+-1, +-1); the class is 1
 * where the signs of the centre agree. Not linearly separable: a hidden
 * layer is needed. Returns { xs: Float32Array(n*2), ys: Int32Array(n) }.
 */
export function xorBlobs(n, seed = 1) {
  const rnd = prng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const xs = new Float32Array(n * 2);
  const ys = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const cx = i % 2 === 0 ? 1 : -1;
    const cy = i % 4 < 2 ? 1 : -1;
    xs[2 * i] = cx + 0.35 * gauss();
    xs[2 * i + 1] = cy + 0.35 * gauss();
    ys[i] = cx * cy > 0 ? 1 : 0;
  }
  return { xs, ys };
}

/** `record(label, f)` runs f and keeps in `errors[label]` what it threw (null when nothing). */
function recorder(errors) {
  return (label, f) => {
    try {
      f();
      errors[label] = null;
    } catch (e) {
      errors[label] = { name: e.name, op: e.op, message: e.message };
    }
  };
}

function mlp(skiff, hidden = 16) {
  const { nn } = skiff;
  return new nn.Sequential([new nn.Linear(2, hidden), new nn.ReLU(), new nn.Linear(hidden, 2)]);
}

/** Reads the safetensors header: { name: shape } of every tensor in `bytes`. */
export function safetensorsShapes(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  const out = {};
  for (const [k, v] of Object.entries(header)) if (k !== '__metadata__') out[k] = v.shape;
  return out;
}

async function captureError(fn) {
  try {
    const r = fn();
    if (r && typeof r.then === 'function') await r;
  } catch (e) {
    return {
      threw: true,
      isError: e instanceof Error,
      message: e instanceof Error ? e.message : `non-Error thrown: ${String(e)}`,
    };
  }
  return { threw: false, isError: false, message: null };
}

export const scenarios = {
  /** Creation functions, readback helpers and a handful of ops with known values. */
  async basics(skiff) {
    const { tensor } = skiff;
    const r = {};
    const s = tensor(3);
    r.scalar = { shape: Array.from(s.shape), item: await s.item(), array: await s.array() };
    const m = tensor([
      [1, 2],
      [3, 4],
    ]);
    r.nested = { shape: Array.from(m.shape), dtype: m.dtype, device: m.device, array: await m.array() };
    const i = tensor(new Int32Array([1, 2, 3, 4, 5, 6]), { shape: [2, 3] });
    r.typed = { shape: Array.from(i.shape), dtype: i.dtype, array: await i.array() };
    const f64 = tensor(new Float64Array([0.1, 0.2]), { device: 'cpu' });
    r.float64 = { dtype: f64.dtype, device: f64.device, values: await arr(f64) };
    const b = tensor([true, false, true]);
    r.bool = { dtype: b.dtype, array: await b.array() };
    r.zeros = await arr(skiff.zeros([2, 3]));
    r.ones3 = await arr(skiff.ones([2]).mul(3));
    r.full = await arr(skiff.full([2], 7));
    r.arange = await arr(skiff.arange(0, 5));
    r.linspace = await arr(skiff.linspace(0, 1, 5));
    r.eye = await skiff.eye(3).array();
    skiff.manualSeed(7);
    const a1 = await arr(skiff.randn([6]));
    skiff.manualSeed(7);
    const a2 = await arr(skiff.randn([6]));
    r.seeded = { a1, a2 };
    r.rand = await arr(skiff.rand([64]));
    const ri = skiff.randint(0, 3, [64]);
    r.randint = { dtype: ri.dtype, values: await arr(ri) };
    // ops with known values
    r.matmul = await m.matmul(tensor([[5], [6]])).array();
    r.addScalar = await arr(tensor([1, 2, 3]).add(1));
    r.subTensor = await arr(tensor([5, 7]).sub(tensor([1, 2])));
    r.mulBroadcast = await m.mul(tensor([10, 100])).array();
    r.divScalar = await arr(tensor([1, 3]).div(2));
    r.relu = await arr(tensor([-1, 0, 2]).relu());
    r.sumAll = await m.sum().item();
    const sk = m.sum([1], { keepdim: true });
    r.sumKeep = { shape: Array.from(sk.shape), array: await sk.array() };
    r.mean = await m.mean().item();
    r.softmax = await tensor([[1, 2, 3]]).softmax(-1).array();
    r.crossEntropy = await tensor([[2, 1, 0]]).crossEntropy(tensor(new Int32Array([0]))).item();
    const p = tensor(new Float32Array(24).map((_, k) => k), { shape: [2, 3, 4] }).permute([2, 0, 1]);
    r.permute = { shape: Array.from(p.shape), second: (await p.array())[1] };
    r.reshape = Array.from(m.reshape([4]).shape);
    r.string = m.toString();
    const d = tensor([1]);
    d.dispose();
    r.disposed = d.isDisposed;
    return r;
  },

  /** Moving between devices (webgpu pass only). */
  async devices(skiff) {
    const g = skiff.tensor([1, 2, 3]);
    // Moving off the GPU needs a readback, which cannot block in a browser:
    // to() says so, toAsync() awaits it.
    const blocked = await captureError(() => g.to('cpu'));
    const c = await g.toAsync('cpu');
    const back = c.to('webgpu');
    const mixed = await captureError(() => g.add(skiff.tensor([1, 1, 1], { device: 'cpu' })));
    return {
      gpuDevice: g.device,
      cpuDevice: c.device,
      cpuValues: await arr(c),
      backDevice: back.device,
      backValues: await arr(back.mul(2)),
      blocked,
      mixed,
    };
  },

  /** d/dx, d2/dx2 and d3/dx3 of sum(x^3) through grad(..., { createGraph }). */
  async doubleGrad(skiff) {
    const xs = [-1.5, 0.5, 2];
    const x = skiff.tensor(xs, { requiresGrad: true });
    const y = x.mul(x).mul(x).sum();
    const [g1] = skiff.grad([y], [x], { createGraph: true });
    const [g2] = skiff.grad([g1.sum()], [x], { createGraph: true });
    const [g3] = skiff.grad([g2.sum()], [x]);
    // the same second derivative through backward({ createGraph }) then grad
    const x2 = skiff.tensor(xs, { requiresGrad: true });
    x2.mul(x2).mul(x2).sum().backward(undefined, { createGraph: true });
    const [h] = skiff.grad([x2.grad.sum()], [x2]);
    return { xs, g1: await arr(g1), g2: await arr(g2), g3: await arr(g3), viaBackward: await arr(h) };
  },

  /** grad() options: gradOutputs, allowUnused (and its error without it). */
  async gradOptions(skiff) {
    const x = skiff.tensor([1, 2, 3], { requiresGrad: true });
    const unused = skiff.tensor([5], { requiresGrad: true });
    const y = x.mul(2);
    const [g] = skiff.grad([y], [x], { gradOutputs: [skiff.tensor([1, 10, 100])], retainGraph: true });
    const both = skiff.grad([y.sum()], [x, unused], { allowUnused: true, retainGraph: true });
    const notAllowed = await captureError(() => skiff.grad([y.sum()], [x, unused]));
    return {
      weighted: await arr(g),
      allowUnused: { first: await arr(both[0]), second: both[1] === undefined ? 'undefined' : String(both[1]) },
      notAllowed,
    };
  },

  /** Tensor hooks: on a leaf (doubling), removal, an intermediate (scaling), an observer. */
  async hooks(skiff) {
    const x = skiff.tensor([1, 2, 3], { requiresGrad: true });
    let calls = 0;
    const h = x.registerHook((g) => {
      calls++;
      return g.mul(2);
    });
    x.mul(x).sum().backward();
    const doubled = await arr(x.grad);
    h.remove();
    x.mul(x).sum().backward();
    const accumulated = await arr(x.grad);

    const w = skiff.tensor([1, 2], { requiresGrad: true });
    const u = w.mul(w);
    u.registerHook((g) => g.mul(10));
    u.sum().backward();
    const intermediate = await arr(w.grad);

    const z = skiff.tensor([1, 2, 3], { requiresGrad: true });
    const m = z.mul(3);
    let seen = null;
    m.registerHook((g) => {
      seen = Array.from(g.shape);
      return undefined;
    });
    m.mul(m).sum().backward();
    return { calls, doubled, accumulated, intermediate, observed: { seen, grad: await arr(z.grad) } };
  },

  /** Custom Functions with hand-written backwards, checked against analytic values and finite differences. */
  async customFunction(skiff) {
    const { tensor, noGrad } = skiff;
    const Cube = new skiff.Function({
      forward(ctx, x) {
        ctx.saveForBackward(x);
        return x.mul(x).mul(x);
      },
      backward(ctx, g) {
        const [x] = ctx.savedTensors;
        return [g.mul(x.mul(x).mul(3))];
      },
    });
    const MulAdd = new skiff.Function({
      forward(ctx, a, b) {
        ctx.saveForBackward(a, b);
        return a.mul(b).add(a);
      },
      backward(ctx, g) {
        const [a, b] = ctx.savedTensors;
        return [g.mul(b.add(1)), g.mul(a)];
      },
    });
    // Gradient reversal: identity forward, -0.5 * g backward (deliberately not the
    // true derivative, so the result proves the hand-written backward ran).
    const Reverse = new skiff.Function({
      forward(ctx, x) {
        return x.mul(1);
      },
      backward(ctx, g) {
        return [g.mul(-0.5)];
      },
    });

    const xs = [0.5, -0.8, 1.1];
    const x = tensor(xs, { requiresGrad: true });
    const y = Cube.apply(x);
    const forward = await arr(y);
    y.sum().backward();
    const cubeGrad = await arr(x.grad);

    // central finite differences of sum(Cube(x)), forward only
    const h = 1e-2;
    const fdAt = async (fn, base, k) => {
      const plus = base.slice();
      const minus = base.slice();
      plus[k] += h;
      minus[k] -= h;
      const fp = await noGrad(() => fn(plus)).item();
      const fm = await noGrad(() => fn(minus)).item();
      return (fp - fm) / (2 * h);
    };
    const cubeFd = [];
    for (let k = 0; k < xs.length; k++) cubeFd.push(await fdAt((v) => Cube.apply(tensor(v)).sum(), xs, k));

    const x2 = tensor(xs, { requiresGrad: true });
    Cube.apply(Cube.apply(x2)).sum().backward();
    const chained = await arr(x2.grad);

    const as = [0.3, -1.2];
    const bs = [2.0, 0.7];
    const a = tensor(as, { requiresGrad: true });
    const b = tensor(bs, { requiresGrad: true });
    MulAdd.apply(a, b).sum().backward();
    const mulAdd = { ga: await arr(a.grad), gb: await arr(b.grad), fdA: [], fdB: [] };
    for (let k = 0; k < 2; k++) {
      mulAdd.fdA.push(await fdAt((v) => MulAdd.apply(tensor(v), tensor(bs)).sum(), as, k));
      mulAdd.fdB.push(await fdAt((v) => MulAdd.apply(tensor(as), tensor(v)).sum(), bs, k));
    }

    const r = tensor([1, 2], { requiresGrad: true });
    const rev = Reverse.apply(r);
    const reverseForward = await arr(rev);
    rev.mul(rev).sum().backward(); // d/dr of r^2 = 2r, reversed and halved: -r
    return {
      xs,
      forward,
      cubeGrad,
      cubeFd,
      chained,
      as,
      bs,
      mulAdd,
      reverse: { forward: reverseForward, grad: await arr(r.grad) },
    };
  },

  /** A second backward through a freed graph is an Error; retainGraph keeps it. */
  async retainGraph(skiff) {
    const x = skiff.tensor([1, 2, 3], { requiresGrad: true });
    const y = x.mul(x).sum();
    y.backward();
    const first = await arr(x.grad);
    const second = await captureError(() => y.backward());
    const x2 = skiff.tensor([1, 2, 3], { requiresGrad: true });
    const y2 = x2.mul(x2).sum();
    y2.backward(undefined, { retainGraph: true });
    y2.backward();
    return { first, second, retained: await arr(x2.grad) };
  },

  /** noGrad switches recording off inside and back on after. */
  async noGrad(skiff) {
    const x = skiff.tensor([1, 2], { requiresGrad: true });
    const inside = skiff.noGrad(() => x.mul(2));
    const after = x.mul(2);
    const asyncInside = await skiff.noGrad(async () => x.mul(3));
    return {
      leaf: x.requiresGrad,
      inside: inside.requiresGrad,
      after: after.requiresGrad,
      asyncInside: asyncInside.requiresGrad,
    };
  },

  /** Layers against their definitions: Linear, Conv2d, a forward hook. */
  async modules(skiff) {
    const { tensor, nn, noGrad } = skiff;
    const byShape = async (module) => {
      const out = {};
      for (const p of module.parameters()) out[JSON.stringify(Array.from(p.shape))] = await arr(p);
      return out;
    };
    const lin = new nn.Linear(2, 3);
    const x = tensor([
      [1, 2],
      [-1, 0.5],
    ]);
    const y = noGrad(() => lin.forward(x));
    const linear = { params: await byShape(lin), shape: Array.from(y.shape), y: await arr(y), x: await arr(x) };

    let seen = null;
    const handle = lin.registerForwardHook((module, input, output) => {
      seen = { input: Array.from(input.shape), output: Array.from(output.shape) };
      return output.mul(2);
    });
    const hooked = await arr(noGrad(() => lin.forward(x)));
    handle.remove();
    const unhooked = await arr(noGrad(() => lin.forward(x)));

    const conv = new nn.Conv2d(1, 1, 2);
    const img = tensor(new Float32Array(9).map((_, k) => k), { shape: [1, 1, 3, 3] });
    const out = noGrad(() => conv.forward(img));
    return {
      linear,
      hook: { seen, hooked, unhooked },
      conv: { params: await byShape(conv), shape: Array.from(out.shape), y: await arr(out) },
    };
  },

  /** One SGD step, two Adam steps and a StepLR schedule against their update rules. */
  async optimizers(skiff) {
    const { tensor, optim } = skiff;
    const c = tensor([1, 2, 3]);
    // loss = sum(c p^2): gradient 2 c p
    const p = tensor([1, -2, 3], { requiresGrad: true });
    const sgd = new optim.SGD([p], { lr: 0.1 });
    p.mul(p).mul(c).sum().backward();
    sgd.step();
    const sgdStep = await arr(p);
    sgd.zeroGrad();
    const gradAfterZeroGrad = p.grad === undefined ? null : await arr(p.grad);

    const q = tensor([1, -2, 3], { requiresGrad: true });
    const adam = new optim.Adam([q], { lr: 0.01 });
    const adamSteps = [];
    for (let i = 0; i < 2; i++) {
      adam.zeroGrad();
      q.mul(q).mul(c).sum().backward();
      adam.step();
      adamSteps.push(await arr(q));
    }

    // d/dw sum(w) = 1 each step; lr 0.1 for steps 0 and 1, 0.05 for steps 2 and 3
    const w = tensor([1], { requiresGrad: true });
    const opt = new optim.SGD([w], { lr: 0.1 });
    const sched = new optim.StepLR(opt, { stepSize: 2, gamma: 0.5 });
    for (let i = 0; i < 4; i++) {
      opt.zeroGrad();
      w.sum().backward();
      opt.step();
      sched.step();
    }
    return { sgdStep, gradAfterZeroGrad, adamSteps, stepLR: await arr(w) };
  },

  /**
   * Trains a 2-16-2 MLP with Adam on the XOR blobs (full batch of 64):
   * returns the loss every 10 steps, the final loss, training accuracy,
   * and a stateDict round trip.
   */
  async training(skiff, { steps = 100, lr = 0.05, seed = 1234 } = {}) {
    const { tensor, tidy, optim, noGrad } = skiff;
    const n = 64;
    skiff.manualSeed(seed);
    const { xs, ys } = xorBlobs(n, 1);
    const X = tensor(xs, { shape: [n, 2] });
    const Y = tensor(ys);
    const model = mlp(skiff);
    const opt = new optim.Adam(model.parameters(), { lr });
    const losses = [];
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      const loss = tidy(() => {
        opt.zeroGrad();
        const l = model.forward(X).crossEntropy(Y);
        l.backward();
        opt.step();
        return l;
      });
      if (i % 10 === 0 || i === steps - 1) losses.push([i, await loss.item()]);
      loss.dispose();
    }
    const msPerStep = (performance.now() - t0) / steps;
    const logits = noGrad(() => model.forward(X));
    const out = Array.from(await logits.data());
    let correct = 0;
    for (let i = 0; i < n; i++) correct += (out[2 * i + 1] > out[2 * i] ? 1 : 0) === ys[i] ? 1 : 0;

    const bytes = await model.stateDict(); // async: GPU parameters are read back
    const restored = mlp(skiff);
    restored.loadStateDict(bytes);
    const again = Array.from(await noGrad(() => restored.forward(X)).data());
    return {
      losses,
      finalLoss: losses[losses.length - 1][1],
      accuracy: correct / n,
      msPerStep,
      parameters: model.parameters().length,
      stateDict: { isUint8Array: bytes instanceof Uint8Array, shapes: safetensorsShapes(bytes) },
      restoredMatches: again.length === out.length && again.every((v, k) => v === out[k]),
    };
  },

  /**
   * `steps` training steps each inside tidy(); memory() after every step.
   * Returns the first record, every step whose record differs from it, and
   * the loss after training (read once at the end).
   */
  async memoryTidy(skiff, { steps = 200 } = {}) {
    const { tensor, tidy, optim, memory } = skiff;
    const n = 32;
    skiff.manualSeed(99);
    const { xs, ys } = xorBlobs(n, 2);
    const X = tensor(xs, { shape: [n, 2] });
    const Y = tensor(ys);
    const model = mlp(skiff, 8);
    const opt = new optim.Adam(model.parameters(), { lr: 0.02 });
    const snap = () => {
      const m = memory();
      return {
        tensors: m.tensors,
        scopes: m.scopes,
        cpuBytes: m.bytes.cpu,
        webgpuBytes: m.bytes.webgpu,
        gpuLiveBytes: m.gpu ? m.gpu.liveBytes : null,
      };
    };
    const before = snap();
    const records = [];
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      tidy(() => {
        opt.zeroGrad();
        const l = model.forward(X).crossEntropy(Y);
        l.backward();
        opt.step();
      });
      records.push(snap());
    }
    const msPerStep = (performance.now() - t0) / steps;
    const first = records[0];
    const same = (a, b) => Object.keys(a).every((k) => a[k] === b[k]);
    const differing = [];
    records.forEach((r, i) => {
      if (!same(r, first) && differing.length < 5) differing.push({ step: i + 1, ...r });
    });
    const loss = await tidy(() => model.forward(X).crossEntropy(Y)).item();
    return { before, first, last: records[records.length - 1], differing, steps, loss, msPerStep };
  },

  /** tidy(): intermediates freed, results kept, keep(), async fns, nesting, throwing fns. */
  async tidySemantics(skiff) {
    const { tensor, tidy, keep, memory, dispose, trackOrigins } = skiff;
    // Live tensors made here, counted by their recorded origins rather than
    // as a change of memory().tensors: at each await below, the
    // FinalizationRegistry may free tensors an earlier test forgot, and that
    // moved the global count once in CI (-4 live where 4 were).
    const madeHere = () => memory({ detailed: true }).origins.reduce((n, o) => n + o.tensors, 0);
    trackOrigins(true);
    try {
      let inter;
      let kept;
      const out = tidy(() => {
        inter = tensor([1, 2, 3]);
        kept = keep(tensor([4]));
        return inter.mul(2);
      });
      let interAsync;
      const outAsync = await tidy(async () => {
        interAsync = tensor([1]);
        await interAsync.data();
        return { r: interAsync.add(1) };
      });
      let innerResult;
      const nested = tidy(() => {
        const x = tensor([1]);
        innerResult = tidy(() => x.add(1));
        return innerResult.add(1);
      });
      let thrownInside;
      const thrown = await captureError(() =>
        tidy(() => {
          thrownInside = tensor([1]);
          throw new Error('boom');
        }),
      );
      const scopesAfterThrow = memory().scopes;
      const r = {
        interDisposed: inter.isDisposed,
        outValues: Array.from(await out.data()),
        keptAlive: !kept.isDisposed,
        keptValues: Array.from(await kept.data()),
        interAsyncDisposed: interAsync.isDisposed,
        outAsyncValues: Array.from(await outAsync.r.data()),
        nestedValues: Array.from(await nested.data()),
        innerResultDisposed: innerResult.isDisposed,
        thrown,
        thrownInsideDisposed: thrownInside.isDisposed,
        scopesAfterThrow,
        liveBeforeDispose: madeHere(),
      };
      dispose([out, kept, outAsync, nested]);
      r.liveAfterDispose = madeHere();
      return r;
    } finally {
      trackOrigins(false);
    }
  },

  /**
   * Misuse that must throw an Error naming the op. Returns, per case, its
   * label, the acceptable op names, and what was thrown.
   */
  async errors(skiff, { gpu = false } = {}) {
    const { tensor, nn, optim } = skiff;
    const a = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const b = tensor([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const gone = tensor([1, 2]);
    gone.dispose();
    const cases = [
      ['matmul [2,3] x [2,3]', ['matmul'], () => a.matmul(b)],
      ["add('x')", ['add'], () => a.add('x')],
      ['add() without an argument', ['add'], () => a.add()],
      ['matmul(undefined)', ['matmul'], () => a.matmul(undefined)],
      ['reshape(undefined)', ['reshape'], () => a.reshape(undefined)],
      ['reshape([4]) of 6 elements', ['reshape'], () => a.reshape([4])],
      ['reshape([NaN])', ['reshape'], () => a.reshape([NaN])],
      ['zeros([NaN, 2])', ['zeros'], () => skiff.zeros([NaN, 2])],
      ['zeros(undefined)', ['zeros'], () => skiff.zeros(undefined)],
      ['zeros([-1])', ['zeros'], () => skiff.zeros([-1])],
      ['zeros([2.5])', ['zeros'], () => skiff.zeros([2.5])],
      ['tensor(undefined)', ['tensor'], () => tensor(undefined)],
      ["tensor('abc')", ['tensor'], () => tensor('abc')],
      ['tensor of ragged arrays', ['tensor'], () => tensor([[1, 2], [3]])],
      ["zeros dtype 'float17'", ['zeros'], () => skiff.zeros([2], { dtype: 'float17' })],
      ["tensor dtype 'complex64'", ['tensor'], () => tensor([1], { dtype: 'complex64' })],
      ["tensor device 'tpu'", ['tensor', 'fromData'], () => tensor([1], { device: 'tpu' })],
      ["to('tpu')", ['to'], () => a.to('tpu')],
      ['sum over axis 5 of a 2-D tensor', ['sum'], () => a.sum([5])],
      ["softmax('a')", ['softmax'], () => a.softmax('a')],
      ['add on a disposed tensor', ['add'], () => gone.add(1)],
      ['data() of a disposed tensor', ['data'], () => gone.data()],
      ['backward of a non-scalar without a gradient', ['backward'], () =>
        tensor([1, 2], { requiresGrad: true }).mul(2).backward()],
      ['crossEntropy with labels out of range', ['crossEntropy'], () =>
        tensor([[1, 2]]).crossEntropy(tensor(new Int32Array([5])))],
      ['nn.Linear(2, -1)', ['Linear', 'nn.Linear', 'linear'], () => new nn.Linear(2, -1)],
      ['Linear(3, 2) on a [1, 2] input', ['Linear.forward'], () =>
        new nn.Linear(3, 2).forward(tensor([[1, 2]]))],
      ['optim.Adam with lr -1', ['Adam', 'optim.Adam', 'adam'], () =>
        new optim.Adam(new nn.Linear(2, 2).parameters(), { lr: -1 })],
      ['optim.SGD without parameters', ['SGD', 'optim.SGD', 'sgd'], () => new optim.SGD(undefined, { lr: 0.1 })],
      // Results too large for wasm32's memory: errors, not an aborted module.
      ['zeros([40000, 40000]) (6.4 GB)', ['zeros'], () => skiff.zeros([40000, 40000])],
      ['expand to [30000, 30000]', ['expand'], () => skiff.ones([1, 30000]).expand([30000, 30000])],
      ['outer product of 10^5-vectors', ['matmul'], () => skiff.ones([100000, 1]).matmul(skiff.ones([1, 100000]))],
      ['broadcast add to [10^5, 10^5]', ['add'], () => skiff.ones([100000, 1]).add(skiff.ones([1, 100000]))],
    ];
    if (!gpu) {
      cases.push(["tensor on 'webgpu' without a GPU", ['tensor', 'fromData'], () => tensor([1], { device: 'webgpu' })]);
    }
    const results = [];
    for (const [label, names, fn] of cases) results.push({ label, names, ...(await captureError(fn)) });
    return results;
  },

  /**
   * skiff.jit: a compiled Adam step against eager steps on an identical
   * model, the learning rate changed between calls; a batch-size change
   * recaptures; what cannot be captured is an error.
   */
  async jit(skiff, { steps = 12 } = {}) {
    const { tensor, tidy, optim, jit } = skiff;
    const n = 32;
    const { xs, ys } = xorBlobs(n, 3);
    const X = tensor(xs, { shape: [n, 2] });
    const Y = tensor(ys);
    const models = [0, 1].map(() => {
      skiff.manualSeed(77);
      const model = mlp(skiff, 8);
      return { model, opt: new optim.Adam(model.parameters(), { lr: 0.05 }) };
    });
    const stepOf = ({ model, opt }) => (x, y) => {
      opt.zeroGrad();
      const loss = model.forward(x).crossEntropy(y);
      loss.backward();
      opt.step();
      return loss;
    };
    const compiled = jit(stepOf(models[0]));
    const eager = stepOf(models[1]);
    const losses = { compiled: [], eager: [] };
    for (let i = 0; i < steps; i++) {
      if (i === 6) for (const m of models) m.opt.lr = 0.01; // a schedule between calls
      const a = tidy(() => compiled(X, Y));
      const b = tidy(() => eager(X, Y));
      losses.compiled.push(await a.item());
      losses.eager.push(await b.item());
      a.dispose();
      b.dispose();
    }
    const params = await Promise.all(models.map(({ model }) => Promise.all(model.parameters().map(async (p) => Array.from(await p.data())))));
    const counts = { captures: compiled.captures, replays: compiled.replays, kernels: compiled.kernels };
    const program = compiled.program;
    // Half the batch: another shape, another capture.
    const half = tidy(() => compiled(X.slice(0, 0, n / 2), Y.slice(0, 0, n / 2)));
    half.dispose();
    const errors = {};
    const record = recorder(errors);
    record('async', () => jit(async (x) => x.mul(2))(X));
    record('hook', () =>
      jit((x) => {
        const w = x.mul(1).requiresGrad_(true);
        w.registerHook((g) => g.mul(2));
        w.sum().backward();
        return w;
      })(X),
    );
    record('notFunction', () => jit(3));
    record('badOption', () => jit((x) => x, { cache: 2 }));
    const single = jit((x) => x.mul(2));
    single(X);
    const twice = single(X);
    const pair = jit((x) => [x.add(1), x.sub(1)])(X);
    return {
      losses,
      params,
      counts,
      program,
      log: compiled.log,
      afterHalf: { captures: compiled.captures, log: compiled.log },
      errors,
      singleIsTensor: twice instanceof skiff.Tensor,
      pairLength: Array.isArray(pair) ? pair.length : -1,
      text: String(single),
    };
  },

  /**
   * A model trained and exported natively (save_inference_model), loaded
   * with loadInferenceModel on `device` and run on the native input.
   */
  async inferenceModel(skiff, { bytes, expected, device }) {
    const model = skiff.loadInferenceModel(new Uint8Array(bytes), { device });
    const x = skiff.tensor(new Float32Array(expected.input), { shape: expected.shape, device });
    const y = model.run(x);
    const got = Array.from(await y.data());
    const errors = {};
    const record = recorder(errors);
    record('wrongShape', () => model.run(skiff.zeros([2, 1, 8, 8], { device })));
    record('notAModel', () => skiff.loadInferenceModel(new Uint8Array(bytes.slice(0, 100))));
    const plain = await skiff.saveSafetensors({ w: skiff.ones([2]) });
    record('plainWeights', () => skiff.loadInferenceModel(plain));
    const result = {
      got,
      shape: y.shape,
      inputs: model.inputs,
      programStart: model.program.split('\n')[0],
      isModel: model instanceof skiff.InferenceModel,
      errors,
    };
    // Freed either way, a model is an error to use, not a trap.
    model.free();
    const other = skiff.loadInferenceModel(new Uint8Array(bytes), { device });
    other[Symbol.dispose]();
    record('freed', () => other.run(x));
    return { ...result, freed: errors.freed };
  },

  /** After errors: the module still computes, with no open scope left behind. */
  async stillWorks(skiff) {
    const t = skiff.tensor([1, 2]);
    const values = Array.from(await t.add(1).mul(t).data());
    return { values, scopes: skiff.memory().scopes, gradEnabled: skiff.isGradEnabled() };
  },
};
