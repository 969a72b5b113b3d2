// The bad-input corpus of the JS API: distinct bad calls (creation, every op
// family, autograd, nn, optim, io, testing), each of which must either throw
// a SkiffError whose message starts with the op the caller called ("broadcastTo:
// ...", "Linear.forward: ...") and names the bad value, with that op as
// `error.op` and a valid `error.kind` (a given one for representative
// entries), or give PyTorch's
// documented result where the call is legal. After every call the instance
// must still work: a small op gives the right value, no tidy scope is left
// open, grad mode is still on. Several entries were wasm traps
// (`unreachable`, `memory access out of bounds`) or silent coercions before
// (tests/browser/README.md). Run in Node and in both Chromium passes
// (bad-input.test.mjs); the entries themselves are in bad-input-*.js.
//
// No skiff import: the module under test is passed in (browser and Node).

import { ERROR_KINDS } from './bad-input-kit.js';
import { CREATION } from './bad-input-creation.js';
import { OPS } from './bad-input-ops.js';
import { MODULES } from './bad-input-modules.js';

/** Every entry (bad-input-kit.js): { kind: 'throws', label, call(skiff, fixtures), op, patterns } or { kind: 'gives', label, call, want }. */
export const BAD_INPUT = [...CREATION, ...OPS, ...MODULES];

/**
 * The tensors, modules and optimizers the entries use, made on first use
 * (inside the entry's tidy scope, so each entry gets fresh ones).
 */
function fixtures(s) {
  const make = {
    x: () => s.tensor([
      [1, 2],
      [3, 4],
    ]),
    v: () => s.tensor([1, 2, 3]),
    i: () => s.tensor([0, 1], { dtype: 'int32' }),
    b: () => s.tensor([true, false]),
    s: () => s.tensor(3),
    img: () => s.ones([1, 1, 4, 4]),
    w: () => s.ones([1, 1, 2, 2]),
    p: () => s.tensor([1, 2], { requiresGrad: true }),
    labels: () => s.tensor([0, 1], { dtype: 'int32' }),
    gone: () => {
      const t = s.tensor([1, 2]);
      t.dispose();
      return t;
    },
    freed: () => {
      const t = s.tensor([1, 2]);
      t.free();
      return t;
    },
    // An object that looks like a handle of a live tensor: must not be taken for it.
    forged: () => ({ _skiffId: lazy.x._skiffId }),
    fakeTensor: () => Object.create(s.Tensor.prototype),
    lin: () => new s.nn.Linear(2, 2),
    relu: () => new s.nn.ReLU(),
    seq: () => new s.nn.Sequential([new s.nn.Linear(2, 2)]),
    mha: () => new s.nn.MultiheadAttention(4, 2),
    sgd: () => new s.optim.SGD([lazy.p], { lr: 0.1 }),
    adam: () => new s.optim.Adam([lazy.p]),
    sched: () => new s.optim.StepLR(lazy.sgd, { stepSize: 1 }),
    ctx: () => new s.FunctionCtx(),
  };
  const made = {};
  const lazy = {};
  for (const [k, f] of Object.entries(make)) {
    Object.defineProperty(lazy, k, { get: () => (k in made ? made[k] : (made[k] = f())) });
  }
  return lazy;
}

const show = (v) =>
  JSON.stringify(v, (k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : typeof x === 'bigint' ? `${x}n` : x));

/** The plain value of a result: a tensor as { shape, dtype, values }, arrays element by element. */
async function plain(s, r) {
  if (r instanceof s.Tensor) {
    return { shape: Array.from(r.shape), dtype: r.dtype, values: await r.array() };
  }
  if (Array.isArray(r)) return Promise.all(r.map((x) => plain(s, x)));
  return r;
}

/** Whether `got` matches `want` (only the keys `want` lists; NaN equals NaN). */
function matches(got, want) {
  if (typeof want === 'number' && typeof got === 'number') return Number.isNaN(want) ? Number.isNaN(got) : Object.is(got, want) || got === want;
  if (Array.isArray(want)) return Array.isArray(got) && got.length === want.length && want.every((w, k) => matches(got[k], w));
  if (want !== null && typeof want === 'object') {
    return got !== null && typeof got === 'object' && Object.keys(want).every((k) => matches(got[k], want[k]));
  }
  return got === want;
}

/** Runs one entry in a tidy scope; resolves to { threw, error } or { value } (plain data). */
async function attempt(s, entry) {
  try {
    const value = await s.tidy(async () => plain(s, await entry.call(s, fixtures(s))));
    return { value };
  } catch (error) {
    return { threw: true, error };
  }
}

/** '' when the instance still computes, has no open scope and grad mode on; else what is wrong. */
export async function stillWorks(s) {
  try {
    const t = s.tensor([1, 2]);
    const r = s.tidy(() => t.add(1).mul(t));
    const got = Array.from(await r.data());
    s.dispose([t, r]);
    if (show(got) !== show([2, 6])) return `[1, 2].add(1).mul([1, 2]) gave ${show(got)}`;
    if (s.memory().scopes !== 0) return `${s.memory().scopes} tidy scope(s) left open`;
    if (!s.isGradEnabled()) return 'grad mode is off';
    return '';
  } catch (e) {
    return `a small op threw ${e && e.constructor ? e.constructor.name : typeof e}: ${e && e.message}`;
  }
}

/** The failure of one entry's outcome, or ''. */
function judge(s, entry, outcome) {
  if (entry.kind === 'gives') {
    if (outcome.threw) return `expected a result, got ${outcome.error && outcome.error.constructor.name}: ${outcome.error && outcome.error.message}`;
    return matches(outcome.value, entry.want) ? '' : `got ${show(outcome.value)}, expected ${show(entry.want)}`;
  }
  if (!outcome.threw) return `expected an Error naming ${entry.op}, got a result: ${String(show(outcome.value)).slice(0, 200)}`;
  const e = outcome.error;
  if (!(e instanceof Error)) return `threw a non-Error: ${show(String(e))}`;
  if (e instanceof WebAssembly.RuntimeError) return `trapped (WebAssembly.RuntimeError: ${e.message})`;
  if (!e.message.startsWith(`${entry.op}: `)) return `the message does not start with "${entry.op}: ": ${show(e.message)}`;
  const missed = (entry.patterns ?? []).filter((p) => !p.test(e.message));
  if (missed.length) return `the message ${show(e.message)} does not match ${missed.join(', ')}`;
  return skiffErrorFault(s, entry, e);
}

/** What is wrong with `e` as the SkiffError of `entry` (its class, name, op and kind), or ''. */
function skiffErrorFault(s, entry, e) {
  if (!(e instanceof s.SkiffError)) return `${show(e.message)} is a ${e.constructor.name}, not a SkiffError`;
  if (e.name !== 'SkiffError') return `its name is ${show(e.name)}, not "SkiffError"`;
  if (e.op !== entry.op) return `its op is ${show(e.op)}, not ${show(entry.op)} (${show(e.message)})`;
  if (!ERROR_KINDS.includes(e.kind)) return `its kind ${show(e.kind)} is none of ${ERROR_KINDS.join(', ')} (${show(e.message)})`;
  if (entry.errorKind && e.kind !== entry.errorKind) return `its kind is ${show(e.kind)}, not ${show(entry.errorKind)} (${show(e.message)})`;
  return '';
}

/**
 * Runs the corpus (or the entries whose label `filter` accepts) on the
 * module `s`; resolves to { count, failures, ops, messages } (ops: the
 * distinct op names the errors named; messages: [label, message] of every
 * Error thrown).
 */
export async function runBadInput(s, { filter = () => true } = {}) {
  const failures = [];
  const messages = [];
  const ops = new Set();
  const labels = new Set();
  let count = 0;
  for (const entry of BAD_INPUT.filter((e) => filter(e.label))) {
    if (labels.has(entry.label)) failures.push(`${entry.label}: the label appears twice in the corpus`);
    labels.add(entry.label);
    count++;
    const outcome = await attempt(s, entry);
    if (outcome.threw) messages.push([entry.label, String(outcome.error && outcome.error.message)]);
    const bad = judge(s, entry, outcome);
    if (bad) failures.push(`${entry.label}: ${bad}`);
    if (entry.op) ops.add(entry.op);
    // A disabled grad mode or open scope is the entry's fault: report it, then repair.
    const broken = await stillWorks(s);
    if (broken) {
      failures.push(`${entry.label}: the instance no longer works after it: ${broken}`);
      if (/trapped|RuntimeError/.test(broken)) break;
      s.setGradEnabled(true);
    }
  }
  return { count, failures, ops: [...ops].sort(), messages };
}

/**
 * Runs each entry whose label `pick` accepts `reps` times (the former traps:
 * each must throw its Error every time), checking that the instance still
 * works every `every` repetitions and at the end. Resolves to { calls,
 * failures, tensorsBefore, tensorsAfter }.
 */
export async function repeatEntries(s, pick, { reps = 10_000, every = 1000 } = {}) {
  const entries = BAD_INPUT.filter((e) => e.kind === 'throws' && pick(e.label));
  const failures = [];
  const tensorsBefore = s.memory().tensors;
  let calls = 0;
  for (const entry of entries) {
    for (let k = 0; k < reps; k++) {
      calls++;
      let outcome;
      try {
        // Synchronous where the entry is (all the former traps are): no await per repetition.
        const r = s.tidy(() => entry.call(s, fixtures(s)));
        outcome = r && typeof r.then === 'function' ? await r.then((value) => ({ value }), (error) => ({ threw: true, error })) : { value: r };
      } catch (error) {
        outcome = { threw: true, error };
      }
      const bad = judge(s, entry, outcome);
      if (bad) {
        failures.push(`${entry.label} (repetition ${k + 1}): ${bad}`);
        break;
      }
      if ((k + 1) % every === 0) {
        const broken = await stillWorks(s);
        if (broken) {
          failures.push(`${entry.label}: after ${k + 1} repetitions the instance no longer works: ${broken}`);
          return { calls, failures, tensorsBefore, tensorsAfter: NaN };
        }
      }
    }
  }
  const broken = await stillWorks(s);
  if (broken) failures.push(`after all repetitions the instance no longer works: ${broken}`);
  return { calls, entries: entries.length, failures, tensorsBefore, tensorsAfter: s.memory().tensors };
}

/**
 * Four float32 tensors of 2^28 elements (1 GiB each) kept alive on the cpu:
 * more than wasm32's 4 GiB can hold, so an allocation must fail with an
 * Error naming zeros (never a trap), and the instance must work once they
 * are disposed. Resolves to { made, error, works }.
 */
export async function hugeAllocations(s) {
  const kept = [];
  let error = null;
  try {
    for (let k = 0; k < 4; k++) kept.push(s.zeros([2 ** 28], { device: 'cpu' }));
  } catch (e) {
    error = {
      isError: e instanceof Error,
      isSkiffError: e instanceof s.SkiffError,
      op: e && e.op,
      kind: e && e.kind,
      trap: e instanceof WebAssembly.RuntimeError,
      message: String(e && e.message),
    };
  }
  for (const t of kept) t.dispose();
  return { made: kept.length, error, works: await stillWorks(s) };
}
