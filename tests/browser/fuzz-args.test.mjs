// Random argument values thrown at every function and method of the JS API
// in Node: undefined, null, NaN, infinities, -1, 2^32, fractions, BigInts,
// strings, symbols, objects, option bags, forged, disposed and freed
// handles, huge and nested arrays, typed arrays, callbacks, real tensors,
// modules and optimizers; half of the calls draw from plausible values only
// (small axes and sizes, the fixtures' tensors and views), so they reach the
// ops themselves. Each call must return or throw an Error whose
// message starts with the name of the function called (a SkiffError whose
// `op` is that function, with a valid `kind`), never trap (a
// WebAssembly.RuntimeError) or throw anything else, and the instance must
// still compute afterwards.
//
// Seeded: SKIFF_FUZZ_SEED=<n> replays a run (the seed is printed, and every
// failure names it and the call). SKIFF_FUZZ_CALLS (default 4000) and
// SKIFF_FUZZ_MS (default 5000) bound the run, whichever comes first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';
import { prng } from './pages/scenarios.js';

const SEED = process.env.SKIFF_FUZZ_SEED ? Number(process.env.SKIFF_FUZZ_SEED) : Date.now() % 2 ** 31;
const CALLS = Number(process.env.SKIFF_FUZZ_CALLS ?? 4000);
const BUDGET_MS = Number(process.env.SKIFF_FUZZ_MS ?? 5000);


/** What a callback given as an argument throws: it may surface as is. */
// What a SkiffError's kind may be (web/index.d.ts, ErrorKind).
const KINDS = new Set(['shape', 'axis', 'dtype', 'device', 'value', 'autograd', 'memory', 'device-lost', 'argument']);
const SENTINEL = 'fuzz: thrown by a callback argument';

/** Fresh handles for one call (made inside its tidy scope). */
function fixtures(s) {
  const x = s.tensor([
    [1, 2],
    [3, 4],
  ]);
  const p = s.tensor([1, 2], { requiresGrad: true });
  const gone = s.tensor([1]);
  gone.dispose();
  const freed = s.tensor([1]);
  freed.free();
  return {
    x,
    p,
    gone,
    freed,
    v: s.tensor([1, 2, 3]),
    i: s.tensor([0, 1], { dtype: 'int32' }),
    b: s.tensor([true, false]),
    s0: s.tensor(2),
    e: s.zeros([0]),
    d: s.tensor([1, 2], { dtype: 'float64' }),
    img: s.ones([1, 1, 4, 4]),
    w: s.ones([1, 1, 2, 2]),
    y: p.mul(2).sum(),
    forged: { _skiffId: x._skiffId },
    fake: Object.create(s.Tensor.prototype),
    lin: new s.nn.Linear(2, 2),
    relu: new s.nn.ReLU(),
    mse: new s.nn.MSELoss(),
    sgd: new s.optim.SGD([p], { lr: 0.1 }),
  };
}

/** Argument values that hold no handle (made once: some are large). */
const PLAIN = [
  undefined, null, NaN, Infinity, -Infinity, -2, -1, 0, -0, 1, 2, 3, 4, 7, 0.5, 1.5, 1e-300, 2 ** 16, 2 ** 31, 2 ** 32, 1e10, -1e10,
  Number.MAX_VALUE,
  1n, 2n ** 70n, '', 'abc', '3', 'float32', 'int32', 'bool', 'cpu', 'webgpu', 'mean', 'tanh', 'lr', 'relu', 'inf',
  'x'.repeat(1e5), true, false, Symbol('fuzz'),
  {}, [], [1], [2, 3], [-1], [0], [NaN], [2 ** 32], [1.5], ['2'], [1n], [[1, 2], [3, 4]], [[1], [2, 3]], [1, [2]],
  new Array(2 ** 32 - 1), new Array(1e5).fill(1),
  { keepdim: true }, { keepdim: 'y' }, { dtype: 'int32' }, { dtype: 'bool' }, { dtype: 'float64' }, { device: 'cpu' },
  { device: 'webgpu' }, { stride: 0 }, { stride: 2 }, { padding: -1 }, { lr: -1 }, { reduction: 'none' }, { bogus: 1 },
  { retainGraph: true }, { createGraph: true }, { allowUnused: true }, { approximate: 'tanh' }, { group: 5 },
  { stepSize: 1 }, { totalSteps: 2 }, { _skiffId: 1 }, { _skiffId: -1 }, { _skiffModuleId: 1 }, { _skiffOptimizerId: 1 },
  new Float32Array([1, 2]), new Int32Array([0, 1]), new Uint8Array([1, 2, 3]), new Float64Array(0), new BigInt64Array(1),
  new ArrayBuffer(8), new DataView(new ArrayBuffer(8)),
  () => undefined, () => 5, (...a) => a[a.length - 1], () => {
    throw new Error(SENTINEL);
  },
];

/** The values arguments are drawn from: PLAIN and this call's handles. */
function pool(f) {
  return [
    ...PLAIN,
    [f.x, f.v], [f.p], [f.gone], [f.forged], [{ params: [f.p], lr: 'x' }], { gradOutputs: [f.v] },
    f.x, f.v, f.i, f.b, f.s0, f.e, f.d, f.img, f.w, f.p, f.y, f.gone, f.freed, f.forged, f.fake, f.lin, f.relu, f.mse, f.sgd,
  ];
}

/**
 * Values that often make a valid call (small axes and sizes, the fixtures'
 * tensors): drawn from half of the time, so calls get past the argument
 * checks into the ops themselves with edge-case inputs (empty, 0-d, int32,
 * bool, views).
 */
function plausible(f) {
  return [
    -2, -1, 0, 1, 2, 3, 0.5, NaN, [], [0], [1], [-1], [0, 1], [1, 0], [2, 1], [1, 2], [2, 2], [1, 1, 1, 1],
    {}, { keepdim: true }, { stride: 1 }, { padding: 1 }, { reduction: 'sum' }, { dtype: 'int32' }, { approximate: 'tanh' },
    f.x, f.v, f.i, f.b, f.s0, f.e, f.img, f.w, f.p, f.y, f.x.t(), f.x.expand([3, 2, 2]), f.v.slice(0, 0, 3, 2),
  ];
}

/** A short text of a value, for failure messages. */
function show(v) {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'symbol') return 'Symbol()';
  if (typeof v === 'function') return v.toString().replace(/\s+/g, ' ').slice(0, 40);
  if (Array.isArray(v)) return v.length > 8 ? `Array(${v.length})` : `[${v.map(show).join(', ')}]`;
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return `${v.constructor.name}(${v.byteLength} bytes)`;
  if (v && typeof v === 'object') {
    const name = v.constructor && v.constructor !== Object ? v.constructor.name : '';
    if (name) return name;
    try {
      return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x)).slice(0, 60);
    } catch {
      return 'object';
    }
  }
  return String(v);
}

/**
 * Every function and method to call: { name, call(s, f, args), ops }, where
 * `ops` lists the names an Error may start with. Found by walking the
 * module, so a new export is fuzzed without being listed here.
 */
function targets(s) {
  const out = [];
  // SkiffError is the class of the errors, not an op: like any Error class it needs `new`.
  const skip = new Set(['_setLoader', '_raw', 'init', 'Tensor', 'FunctionCtx', 'HookHandle', 'ModuleHookHandle', 'Module', 'Loss', 'Optimizer', 'LrScheduler', 'nn', 'optim', 'testing', 'Function', 'SkiffError', 'InferenceModel', 'GradScaler']);
  for (const [name, fn] of Object.entries(s)) {
    if (typeof fn === 'function' && !skip.has(name)) out.push({ name, call: (s_, f, a) => s_[name](...a), ops: [name] });
  }
  // init changes the backend: called only with arguments that are all wrong or 'cpu'.
  out.push({ name: 'init', call: (s_, f, a) => s_.init(a[0] === undefined ? { device: 'cpu' } : a[0]), ops: ['init'], cpuOnly: true });
  const ctorName = (key) => key.replace(/_$/, '');
  for (const [name, fn] of Object.entries(s.nn)) {
    if (typeof fn === 'function') out.push({ name: `nn.${name}`, call: (s_, f, a) => new s_.nn[name](...a), ops: [name] });
  }
  for (const [name] of Object.entries(s.nn.init)) out.push({ name: `nn.init.${name}`, call: (s_, f, a) => s_.nn.init[name](...a), ops: [name] });
  for (const [name] of Object.entries(s.nn.utils)) out.push({ name: `nn.utils.${name}`, call: (s_, f, a) => s_.nn.utils[name](...a), ops: [ctorName(name)] });
  for (const [name, fn] of Object.entries(s.optim)) {
    if (typeof fn === 'function') out.push({ name: `optim.${name}`, call: (s_, f, a) => new s_.optim[name](...a), ops: [name] });
  }
  for (const [name] of Object.entries(s.testing)) out.push({ name: `testing.${name}`, call: (s_, f, a) => s_.testing[name](...a), ops: [name] });
  out.push({ name: 'new Function', call: (s_, f, a) => new s_.Function(...a), ops: ['Function'] });
  out.push({ name: 'new GradScaler', call: (s_, f, a) => new s_.GradScaler(...a), ops: ['GradScaler'] });
  out.push({
    name: 'Function.apply',
    call: (s_, f, a) => new s_.Function({ forward: a[0], backward: a[1] }).apply(...a.slice(2)),
    ops: ['Function', 'Function.apply'],
  });
  out.push({ name: 'Tensor.fromData', call: (s_, f, a) => s_.Tensor.fromData(...a), ops: ['tensor'] });

  // Methods, on a fixture of each class.
  const methods = (proto) =>
    Object.getOwnPropertyNames(proto).filter((k) => {
      const d = Object.getOwnPropertyDescriptor(proto, k);
      return k !== 'constructor' && k !== 'free' && k !== '__destroy_into_raw' && typeof d.value === 'function';
    });
  const on = (cls, pick, opsOf) => {
    for (const m of methods(s[cls].prototype)) {
      out.push({ name: `${cls}.${m}`, call: (s_, f, a) => pick(f)[m](...a), ops: opsOf(m) });
    }
  };
  // Disposed and freed receivers too: their errors must name the method as well.
  const tensors = ['x', 'v', 'i', 'b', 's0', 'e', 'p', 'y', 'img', 'gone', 'freed'];
  for (const m of methods(s.Tensor.prototype)) {
    for (const t of tensors) {
      out.push({ name: `${t}.${m}`, call: (s_, f, a) => f[t][m](...a), ops: [m] });
    }
  }
  on('Module', (f) => f.lin, (m) => ({ forward: ['Linear.forward'], get: ['Module.get'], to: ['Module.to'], toDtype: ['Module.toDtype'] })[m] ?? [m]);
  on('Module', (f) => f.relu, (m) => ({ forward: ['ReLU.forward'], get: ['Module.get'], to: ['Module.to'], toDtype: ['Module.toDtype'] })[m] ?? [m]);
  on('Loss', (f) => f.mse, (m) => (m === 'forward' ? ['MSELoss.forward'] : [m]));
  const optOps = { step: ['SGD.step'], stateDict: ['Optimizer.stateDict'], loadStateDict: ['Optimizer.loadStateDict'] };
  on('Optimizer', (f) => f.sgd, (m) => optOps[m] ?? [m]);
  on('FunctionCtx', () => new s.FunctionCtx(), (m) => [m]);
  on('GradScaler', () => new s.GradScaler(), (m) => [`GradScaler.${m}`]);
  // Setters.
  out.push({ name: 'Tensor.grad =', call: (s_, f, a) => (f.p.grad = a[0]), ops: ['grad'] });
  out.push({ name: 'Optimizer.lr =', call: (s_, f, a) => (f.sgd.lr = a[0]), ops: ['lr'] });
  return out;
}

/** '' when the instance still computes (synchronously: cpu tensors), else what is wrong. */
function stillWorks(s) {
  try {
    const text = s.tidy(() => {
      const t = s.tensor([1, 2]);
      return t.add(1).mul(t).toString();
    });
    return text.includes('data=[2.0, 6.0]') ? '' : `[1, 2].add(1).mul([1, 2]) is ${text}`;
  } catch (e) {
    return `a small op threw ${e && e.constructor && e.constructor.name}: ${e && e.message}`;
  }
}

let skiff;
let cleanup = () => {};
before(async () => {
  assertBuilt({ wrapper: true });
  ({ skiff, cleanup } = await importForNode('skiff-fuzz-'));
  await skiff.init({ device: 'cpu' });
});
after(() => cleanup());

test('random arguments to every function: a result or an Error naming the function, never a trap', { timeout: 120_000 }, async (t) => {
  const rand = prng(SEED);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const all = targets(skiff);
  t.diagnostic(`seed ${SEED} (SKIFF_FUZZ_SEED=${SEED} replays it); ${all.length} functions and methods`);
  const start = Date.now();
  const failures = [];
  let calls = 0;
  let results = 0;
  const names = new Set();
  // The slowest calls, reported (not asserted: timing is no test here) to find runaway work.
  const slowest = [];
  for (; calls < CALLS && Date.now() - start < BUDGET_MS; calls++) {
    const began = Date.now();
    const target = pick(all);
    names.add(target.name);
    const nargs = Math.floor(rand() * 5);
    const narrow = rand() < 0.5;
    // The indices into the pool, so the failure text can name the values.
    const draw = Array.from({ length: nargs }, () => rand());
    let described = '';
    let outcome;
    try {
      const r = skiff.tidy(() => {
        const f = fixtures(skiff);
        const values = narrow ? plausible(f) : pool(f);
        const args = draw.map((u) => values[Math.floor(u * values.length)]);
        described = `${target.name}(${args.map(show).join(', ')})`;
        return target.call(skiff, f, args);
      });
      outcome = r && typeof r.then === 'function' ? await r.then(() => ({}), (error) => ({ error })) : {};
    } catch (error) {
      outcome = { error };
    }
    let broken = '';
    try {
      // A call may leave grad mode off or another default device, legally.
      skiff.setGradEnabled(true);
      skiff.setDefaultDevice('cpu');
    } catch (error) {
      broken = `resetting grad mode threw ${error && error.constructor && error.constructor.name}: ${error && error.message}`;
    }
    slowest.push([Date.now() - began, described]);
    slowest.sort((p, q) => q[0] - p[0]).splice(3);
    const e = outcome.error;
    if (e === undefined) results++;
    let bad = '';
    if (e !== undefined) {
      if (e instanceof WebAssembly.RuntimeError) bad = `trapped: ${e.message}`;
      else if (!(e instanceof Error)) bad = `threw a non-Error: ${show(e)}`;
      else if (e.message !== SENTINEL && !target.ops.some((op) => e.message.startsWith(`${op}: `))) {
        bad = `the Error does not name ${target.ops.join(' or ')}: ${e.constructor.name}: ${e.message.slice(0, 300)}`;
      } else if (e.message !== SENTINEL && !(e instanceof skiff.SkiffError && target.ops.includes(e.op) && KINDS.has(e.kind))) {
        bad = `not a SkiffError of ${target.ops.join(' or ')} with a kind: ${e.constructor.name} op=${e.op} kind=${e.kind}: ${e.message.slice(0, 200)}`;
      }
    }
    broken ||= stillWorks(skiff);
    if (broken) bad += `${bad ? '; ' : ''}the instance no longer works after it: ${broken}`;
    if (bad) {
      failures.push(`call ${calls + 1}: ${described}: ${bad}`);
      if (broken || failures.length >= 20) break;
    }
  }
  t.diagnostic(`${calls} calls of ${names.size} functions in ${Date.now() - start} ms; ${results} gave a result, the others an Error`);
  t.diagnostic(`slowest: ${slowest.map(([ms, d]) => `${ms} ms ${d.slice(0, 120)}`).join('; ')}`);
  assert.deepEqual(failures, [], `SKIFF_FUZZ_SEED=${SEED}: ${failures.length} bad outcome(s):\n  ${failures.join('\n  ')}`);
  assert.ok(calls >= 200, `only ${calls} calls ran within ${BUDGET_MS} ms`);
  assert.equal(skiff.memory().scopes, 0, 'no tidy scope left open');
});
