// The skiff JS API over the wasm-bindgen module (pkg/skiff.js). The entry
// points differ only in how the .wasm is loaded: web/index.js (browsers and
// production bundles: fetched from next to the package's files), web/dev.js
// (bundlers' development servers: inlined) and web/node.js (read from disk;
// bundled to pkg/node.cjs for require()).
//
// Rust does the work and the argument checks; this file adds what is natural
// in JS: init() with the WebGPU/cpu choice, tensor() from nested arrays,
// tidy()/noGrad() scopes, custom Functions, and nn/optim constructors.

import * as raw from '../pkg/skiff.js';
import { SkiffError, checkOptions, checkReceiver, describe, fail, isHandle, liveId, nameFreedCalls } from './checks.js';
import { backend, ready, setBackend } from './state.js';

export const Tensor = raw.Tensor;
export const FunctionCtx = raw.FunctionCtx;
export const HookHandle = raw.HookHandle;
export const ModuleHookHandle = raw.ModuleHookHandle;
export const Module = raw.Module;
export const Loss = raw.Loss;
export const Optimizer = raw.Optimizer;
export const LrScheduler = raw.LrScheduler;
export const InferenceModel = raw.InferenceModel;
export const GradScaler = raw.GradScaler;
export { SkiffError };

let loadWasm = null;
let loaded = null;

/** Used by the entry points: how to instantiate the wasm module. */
export function _setLoader(fn) {
  // Once the wasm is instantiated, the errors Rust builds are SkiffErrors too.
  loadWasm = async (...args) => {
    const instance = await fn(...args);
    raw._setErrorClass(SkiffError);
    installOpMethods();
    return instance;
  };
}

// The Tensor methods the op registry generates (src/ops/surface.rs): one per
// entry of opMethods(), checking its receiver (as nameFreedCalls' guard does)
// and calling into wasm with exactly its arity: no rest arguments, no
// apply, no argument array per call (the per-op cost of small ops).
const T = raw.Tensor;
// One caller per arity, over the six wasm entry points `f` of one kind.
const receiverCallers = ([f0, f1, f2, f3, f4, f5]) => [
  (id, op) => function () { checkReceiver(T, op, this); return f0(id, this); },
  (id, op) => function (a) { checkReceiver(T, op, this); return f1(id, this, a); },
  (id, op) => function (a, b) { checkReceiver(T, op, this); return f2(id, this, a, b); },
  (id, op) => function (a, b, c) { checkReceiver(T, op, this); return f3(id, this, a, b, c); },
  (id, op) => function (a, b, c, d) { checkReceiver(T, op, this); return f4(id, this, a, b, c, d); },
  (id, op) => function (a, b, c, d, e) { checkReceiver(T, op, this); return f5(id, this, a, b, c, d, e); },
];
const CALLERS = receiverCallers([raw.callMethod0, raw.callMethod1, raw.callMethod2, raw.callMethod3, raw.callMethod4, raw.callMethod5]);
// The methods that return PyTorch's (values, indices) pair (`sort`, `topk`):
// `[values, indices]` from wasm as one array.
const PAIR_CALLERS = receiverCallers([
  raw.callPairMethod0,
  raw.callPairMethod1,
  raw.callPairMethod2,
  raw.callPairMethod3,
  raw.callPairMethod4,
  raw.callPairMethod5,
]);

// The module functions the registry generates, bound at init() by name.
const FUNCTION_CALLERS = [
  null, // every function takes at least one argument
  (id) => (a) => raw.callFunction1(id, a),
  (id) => (a, b) => raw.callFunction2(id, a, b),
  (id) => (a, b, c) => raw.callFunction3(id, a, b, c),
  (id) => (a, b, c, d) => raw.callFunction4(id, a, b, c, d),
  (id) => (a, b, c, d, e) => raw.callFunction5(id, a, b, c, d, e),
];
const opFunctions = new Map();

function installOpMethods() {
  for (const { name, id, arity, method, pair } of raw.opMethods()) {
    if (!method) {
      opFunctions.set(name, FUNCTION_CALLERS[arity](id));
      continue;
    }
    const m = (pair ? PAIR_CALLERS : CALLERS)[arity](id, name);
    Object.defineProperty(m, 'name', { value: name });
    Object.defineProperty(T.prototype, name, { value: m, writable: true, configurable: true });
  }
}

/**
 * A module function the registry generates (its signature has no `self`),
 * exported under its name; it reaches its wasm caller once init() has run.
 * The Node suite checks that these exports are exactly the registry's.
 */
function opFunction(name) {
  const f = function (a, b, c, d, e) {
    const call = opFunctions.get(name);
    if (call === undefined) {
      ready(name);
      throw fail(name, 'value', `the op registry has no function ${name} (pkg/ is out of date: npm run build)`);
    }
    return call(a, b, c, d, e);
  };
  Object.defineProperty(f, 'name', { value: name });
  return f;
}

/** `condition ? input : other`, elementwise; numbers take the other operand's dtype. */
export const where = opFunction('where');
/** Joins tensors along an existing axis `dim` (default 0), as `torch.cat`. */
export const cat = opFunction('cat');
/** Einstein summation (`torch.einsum`): `einsum('bij,bjk->bik', [a, b])`. */
export const einsum = opFunction('einsum');
/** im2col (`F.unfold`): [N, C, H, W] -> [N, C*kh*kw, L]. */
export const unfold = opFunction('unfold');
/** col2im (`F.fold`, the adjoint of `unfold`): overlapping windows sum. */
export const fold = opFunction('fold');
/** softmax(q k^T * scale + mask) v, as `F.scaled_dot_product_attention`; options attnMask, dropoutP, isCausal, scale. */
export const scaledDotProductAttention = opFunction('scaledDotProductAttention');


const isPromise = (v) => v !== null && typeof v === 'object' && typeof v.then === 'function';

/**
 * Probes WebGPU: { reason } when it cannot be used here, else { info } with
 * the adapter's GPUAdapterInfo fields (wgpu does not report them all).
 */
async function probeWebgpu() {
  const gpu = typeof navigator === 'undefined' ? undefined : navigator.gpu;
  if (!gpu) return { reason: 'WebGPU is not available here (no navigator.gpu)' };
  try {
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return { reason: 'navigator.gpu.requestAdapter() found no adapter' };
    const i = adapter.info ?? {};
    return {
      info: { vendor: i.vendor ?? '', architecture: i.architecture ?? '', device: i.device ?? '', description: i.description ?? '' },
      subgroups: adapter.features.has('subgroups'),
    };
  } catch (e) {
    return { reason: `navigator.gpu.requestAdapter() failed: ${e && e.message ? e.message : e}` };
  }
}

/**
 * Runs `open` (which requests a WebGPU device) with `subgroups` added to the
 * features of every device requested meanwhile, where `on` and the adapter
 * has them; GPUAdapter.prototype is as it was afterwards.
 */
async function withSubgroups(on, open) {
  const proto = typeof GPUAdapter === 'undefined' ? undefined : GPUAdapter.prototype;
  if (!on || !proto) return open();
  const requestDevice = proto.requestDevice;
  proto.requestDevice = function (descriptor = {}) {
    const features = [...(descriptor.requiredFeatures ?? [])];
    if (this.features.has('subgroups') && !features.includes('subgroups')) features.push('subgroups');
    return requestDevice.call(this, { ...descriptor, requiredFeatures: features });
  };
  try {
    return await open();
  } finally {
    proto.requestDevice = requestDevice;
  }
}

/**
 * Loads the wasm module and picks the backend. `device`: 'auto' (WebGPU when
 * an adapter works, else the cpu), 'webgpu' (an error when it cannot) or
 * 'cpu'. Resolves to { device, adapter, reason }: reason says why 'auto' fell
 * back to the cpu (null otherwise). `wasm` says where the .wasm is when the
 * entry point's default (next to the package's files) does not hold: a URL,
 * a Response, the bytes or a compiled WebAssembly.Module (see web/load.js).
 * Otherwise the entry point loads the relaxed-SIMD build where the engine
 * runs it (`relaxedSimd`: false insists on the SIMD128 baseline, true on the
 * relaxed build); `wasmSimd` in the result says which one runs.
 */
export async function init(options = {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options) || ArrayBuffer.isView(options) || isHandle(options)) {
    throw fail('init', 'argument', `options must be an object like { device: 'auto' }, got ${describe(options)}`);
  }
  checkOptions('init', options, ['device', 'wasm', 'relaxedSimd']);
  const device = options.device ?? 'auto';
  if (!['auto', 'webgpu', 'cpu'].includes(device)) {
    throw fail('init', 'argument', `device must be 'auto', 'webgpu' or 'cpu', got ${describe(device)}`);
  }
  const { relaxedSimd } = options;
  if (relaxedSimd !== undefined && typeof relaxedSimd !== 'boolean') {
    throw fail('init', 'argument', `relaxedSimd must be a boolean, got ${describe(relaxedSimd)}`);
  }
  if (relaxedSimd !== undefined && options.wasm !== undefined) {
    throw fail(
      'init',
      'argument',
      "relaxedSimd picks one of the package's two .wasm builds; a `wasm` given is loaded as it is (leave relaxedSimd out)",
    );
  }
  if (!loaded) {
    if (!loadWasm) throw fail('init', 'value', 'no wasm loader (import skiff from its package entry)');
    // A failed load (a wrong URL) may be retried with another `wasm`.
    loaded = loadWasm(options.wasm, relaxedSimd).catch((e) => {
      loaded = null;
      throw e;
    });
  }
  await loaded;
  // The module is loaded once: a later init cannot swap the build.
  if (relaxedSimd !== undefined && (raw.wasmSimd() === 'relaxed') !== relaxedSimd) {
    throw fail('init', 'value', `relaxedSimd: ${relaxedSimd}, but an earlier init() loaded the ${raw.wasmSimd()} build, which stays`);
  }
  const finish = (info, reason) => setBackend({ ...info, reason });
  if (device === 'cpu') return finish(await raw.initBackend('cpu'), null);
  const probe = await probeWebgpu();
  if (probe.reason) {
    if (device === 'webgpu') throw fail('init', 'device', `WebGPU was requested but ${probe.reason}`);
    return finish(await raw.initBackend('cpu'), probe.reason);
  }
  try {
    const software = /swiftshader|llvmpipe|lavapipe|software/i.test(
      `${probe.info.architecture} ${probe.info.description} ${probe.info.device}`,
    );
    // A software adapter's matmul shares loads across a subgroup where the
    // device has them, but wgpu cannot ask for that feature in a browser
    // (gfx-rs/wgpu#10146): the page adds it to wgpu's device request.
    const subgroups = software && probe.subgroups;
    const info = await withSubgroups(subgroups, () => raw.initBackend('webgpu', software, subgroups));
    // Prefer the browser's adapter description where wgpu's fields are empty.
    const adapter = { ...info.adapter, ...probe.info };
    if (!adapter.name) adapter.name = probe.info.description || [probe.info.vendor, probe.info.architecture].filter(Boolean).join(' ');
    return finish({ ...info, adapter }, null);
  } catch (e) {
    if (device === 'webgpu') throw e;
    return finish(await raw.initBackend('cpu'), `the WebGPU device request failed: ${e.message}`);
  }
}

/** What init() chose ({ device, adapter, reason }), or null before init. */
export function backendInfo() {
  return backend();
}

// ---- creation --------------------------------------------------------------

const DTYPES = ['float32', 'float64', 'float16', 'int32', 'bool'];

// As the Rust bindings (src/web/args.rs): at most 64 dims, and no more
// elements than one tensor may hold on wasm32 (2^28, 1 GiB of float32).
const MAX_DIMS = 64;
const MAX_ELEMENTS = 2 ** 28;

/** Shape and flat values of nested arrays (checked to be rectangular). */
function flatten(data) {
  const shape = [];
  // Bounded: an array that contains itself would otherwise nest forever.
  for (let v = data; Array.isArray(v); v = v[0]) {
    if (shape.length === MAX_DIMS) throw fail('tensor', 'shape', `nested arrays deeper than ${MAX_DIMS} dims`);
    shape.push(v.length);
  }
  const count = shape.reduce((a, b) => a * b, 1);
  if (count > MAX_ELEMENTS) {
    throw fail(
      'tensor',
      'memory',
      `nested arrays of shape ${JSON.stringify(shape)} have ${count} elements, more than one tensor may hold here (${MAX_ELEMENTS})`,
    );
  }
  const flat = [];
  const walk = (v, depth, path) => {
    if (depth === shape.length) {
      if (typeof v !== 'number' && typeof v !== 'boolean') {
        throw fail('tensor', 'argument', `element ${path} must be a number or boolean, got ${describe(v)}`);
      }
      flat.push(v);
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth]) {
      throw fail(
        'tensor',
        'shape',
        `nested arrays must be rectangular: ${path} should have ${shape[depth]} elements (shape ${JSON.stringify(shape)})`,
      );
    }
    // An index loop, not forEach: a hole in a sparse array is an undefined element.
    for (let i = 0; i < v.length; i++) walk(v[i], depth + 1, `${path}[${i}]`);
  };
  walk(data, 0, 'data');
  return { shape, flat };
}

function typed(flat, dtype) {
  switch (dtype) {
    case 'float32':
    case 'float16': // converted by fromData's dtype option
      return Float32Array.from(flat, Number);
    case 'float64':
      return Float64Array.from(flat, Number);
    case 'int32':
      // PyTorch: "value cannot be converted to type int32 without overflow";
      // Int32Array.from would wrap 2 ** 31 to -2 ** 31 and truncate 2.5.
      flat.forEach((v, i) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < -(2 ** 31) || n > 2 ** 31 - 1) {
          throw fail('tensor', 'value', `int32 data must be integers in [-2147483648, 2147483647], got ${v} at [${i}]`);
        }
      });
      return Int32Array.from(flat, Number);
    case 'bool':
      // Nonzero is true, NaN included (Python's bool(nan)).
      return Uint8Array.from(flat, (v) => (v === false || v === 0 ? 0 : 1));
    default:
      throw fail('tensor', 'argument', `dtype must be one of ${DTYPES.join(', ')}, got ${describe(dtype)}`);
  }
}

/**
 * A tensor from a number, (nested) arrays of numbers or booleans, or a typed
 * array. options: { dtype, device, requiresGrad, shape } (shape is needed
 * only to view a flat typed array as more than 1-D).
 */
export function tensor(data, options = {}) {
  ready('tensor');
  const { dtype, device, requiresGrad = false, shape } = checkOptions('tensor', options, ['dtype', 'device', 'requiresGrad', 'shape']);
  let t;
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    t = raw.Tensor.fromData(data, shape ?? [data.length], { dtype, device });
  } else if (typeof data === 'number' || typeof data === 'boolean' || Array.isArray(data)) {
    const { shape: inferred, flat } = flatten(data);
    const kind = dtype ?? (flat.length > 0 && flat.every((v) => typeof v === 'boolean') ? 'bool' : 'float32');
    t = raw.Tensor.fromData(typed(flat, kind), shape ?? inferred, { device, dtype: kind === 'float16' ? kind : undefined });
  } else {
    const what = data instanceof raw.Tensor ? 'a Tensor (use t.handle() or t.clone())' : describe(data);
    throw fail('tensor', 'argument', `data must be a number, a (nested) array or a typed array, got ${what}`);
  }
  if (typeof requiresGrad !== 'boolean') {
    t.dispose();
    throw fail('tensor', 'argument', `option requiresGrad must be a boolean, got ${describe(requiresGrad)}`);
  }
  if (requiresGrad) t.requiresGrad_(true);
  return t;
}

const creators = ['zeros', 'ones', 'full', 'randn', 'rand', 'randint', 'arange', 'linspace', 'eye'];
const made = {};
for (const name of creators) {
  made[name] = (...args) => {
    ready(name);
    return raw.Tensor[name](...args);
  };
}
/** zeros(shape, { dtype, device }) */
export const zeros = made.zeros;
/** ones(shape, { dtype, device }) */
export const ones = made.ones;
/** full(shape, value, { dtype, device }) */
export const full = made.full;
/** randn(shape, { dtype, device }): standard normal samples (seed with manualSeed). */
export const randn = made.randn;
/** rand(shape, { dtype, device }): uniform in [0, 1). */
export const rand = made.rand;
/** randint(low, high, shape, { device }): int32 uniform in [low, high). */
export const randint = made.randint;
/** arange(start, end, step = 1, { dtype, device }). */
export const arange = (start, end, step = 1, options) => made.arange(start, end, step, options);
/** linspace(start, end, steps, { dtype, device }). */
export const linspace = made.linspace;
/** eye(n, { dtype, device }). */
export const eye = made.eye;

// ---- Tensor conveniences -----------------------------------------------------

function nest(flat, shape) {
  if (shape.length === 0) return flat[0];
  const build = (offset, depth) => {
    const n = shape[depth];
    if (depth === shape.length - 1) return flat.slice(offset, offset + n);
    const stride = shape.slice(depth + 1).reduce((a, b) => a * b, 1);
    return Array.from({ length: n }, (_, i) => build(offset + i * stride, depth + 1));
  };
  return build(0, 0);
}

const proto = raw.Tensor.prototype;

/** The values as nested arrays (numbers; booleans for bool tensors). */
proto.array = async function array() {
  if (liveId(this) === null) {
    throw fail('array', 'argument', 'the tensor was disposed (dispose(), the end of a tidy scope) or freed (free()) and cannot be used');
  }
  const shape = Array.from(this.shape);
  const dtype = this.dtype;
  const data = await this.data();
  const flat = dtype === 'bool' ? Array.from(data, (v) => v !== 0) : Array.from(data);
  return nest(flat, shape);
};

const setRequiresGrad = proto.requiresGrad_;
/** Marks this leaf as requiring grad; returns this tensor. */
proto.requiresGrad_ = function requiresGrad_(on = true) {
  setRequiresGrad.call(this, on);
  return this;
};

const saveForBackward = raw.FunctionCtx.prototype.saveForBackward;
/** ctx.saveForBackward(...tensors) (an array works too). */
raw.FunctionCtx.prototype.saveForBackward = function save(...ts) {
  return saveForBackward.call(this, ts.length === 1 && Array.isArray(ts[0]) ? ts[0] : ts);
};

// Calls on a freed handle name the member called (checks.js).
nameFreedCalls(raw.Tensor, '');
for (const cls of [raw.Module, raw.Loss, raw.Optimizer, raw.LrScheduler, raw.FunctionCtx, raw.HookHandle, raw.ModuleHookHandle, raw.InferenceModel, raw.GradScaler]) {
  nameFreedCalls(cls, cls.name);
}

// ---- scopes ------------------------------------------------------------------

/** Ids of every tensor handle reachable in `value` (arrays, plain objects, Maps). */
function handleIds(value, out = [], seen = new Set()) {
  if (value === null || typeof value !== 'object' || seen.has(value)) return out;
  seen.add(value);
  if (value instanceof raw.Tensor) {
    const id = liveId(value);
    if (id !== null) out.push(id);
  } else if (Array.isArray(value)) {
    // Object.values visits the entries that exist: a sparse new Array(2 ** 32 - 1) has none.
    for (const v of Object.values(value)) handleIds(v, out, seen);
  } else if (value instanceof Map) {
    for (const v of value.values()) handleIds(v, out, seen);
  } else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) handleIds(v, out, seen);
  }
  return out;
}

/**
 * Runs fn and disposes every tensor it created, except those in its result
 * (arrays and plain objects are searched). fn may be async: the scope then
 * closes when its promise settles (tensors created meanwhile by other code
 * also belong to it, so do not interleave unrelated async work).
 */
export function tidy(nameOrFn, maybeFn) {
  const fn = typeof nameOrFn === 'function' ? nameOrFn : maybeFn;
  if (typeof fn !== 'function') throw fail('tidy', 'argument', `expects a function, got ${describe(fn)}`);
  if (fn === maybeFn && typeof nameOrFn !== 'string') {
    throw fail('tidy', 'argument', `the name before the function must be a string, got ${describe(nameOrFn)}`);
  }
  ready('tidy');
  raw.beginScope();
  let result;
  try {
    result = fn();
  } catch (e) {
    raw.endScope([]);
    throw e;
  }
  if (isPromise(result)) {
    return result.then(
      (v) => {
        raw.endScope(handleIds(v));
        return v;
      },
      (e) => {
        raw.endScope([]);
        throw e;
      },
    );
  }
  raw.endScope(handleIds(result));
  return result;
}

/** Disposes every tensor in `value` (a tensor, or arrays/objects of them). */
export function dispose(value) {
  const seen = new Set();
  const walk = (v) => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (v instanceof raw.Tensor) {
      if (liveId(v) !== null) v.dispose();
    } else if (Array.isArray(v)) Object.values(v).forEach(walk);
    else if (v instanceof Map) [...v.values()].forEach(walk);
    else if (Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach(walk);
  };
  walk(value);
}

/** Keeps a tensor out of every open tidy scope; returns it. */
export function keep(t) {
  return raw.keep(t);
}

/**
 * Live tensor handles, bytes per device, open scopes, and the GPU runtime's
 * figures. memory({ detailed: true }) adds `origins`: the live tensors made
 * while trackOrigins(true) was on, grouped by where they were made (op,
 * caller line and the callers above it, device), the most bytes first.
 */
export function memory(options) {
  ready('memory');
  const { detailed = false } = checkOptions('memory', options, ['detailed']);
  if (typeof detailed !== 'boolean') throw fail('memory', 'argument', `detailed must be a boolean, got ${describe(detailed)}`);
  const info = raw.memoryInfo();
  return detailed ? { ...info, origins: raw.memoryOrigins() } : info;
}

/**
 * Starts (or stops) recording where each new tensor is made, for
 * memory({ detailed: true }): a stack trace per tensor, so leave it off
 * unless looking for a leak.
 */
export function trackOrigins(on = true) {
  ready('trackOrigins');
  // skiff's own frames come first in a stack: keep room for the caller's.
  if (on === true && Error.stackTraceLimit < 64) Error.stackTraceLimit = 64;
  raw.trackOrigins(on);
}

/**
 * Runs fn (sync or async) for `op` with a thread switch set to `on` by
 * `set` (which returns the previous setting), restoring it when fn returns,
 * throws or, for a promise, settles.
 */
function withSwitch(op, set, on, fn) {
  if (typeof fn !== 'function') throw fail(op, 'argument', `expects a function, got ${describe(fn)}`);
  ready(op);
  const was = set(on);
  let result;
  try {
    result = fn();
  } catch (e) {
    set(was);
    throw e;
  }
  if (isPromise(result)) return result.finally(() => set(was));
  set(was);
  return result;
}

const withGrad = (on, fn) => withSwitch(on ? 'enableGrad' : 'noGrad', raw.setGradEnabled, on, fn);

/** Runs fn without recording autograd history (PyTorch's torch.no_grad()). */
export const noGrad = (fn) => withGrad(false, fn);
/** Runs fn with recording on, even inside noGrad. */
export const enableGrad = (fn) => withGrad(true, fn);
export const isGradEnabled = (...a) => raw.isGradEnabled(...a);

let autocastFallbackSaid = false;

/**
 * Runs fn (sync or async) with autocast on: products and convolutions in
 * float16, reductions, softmax, losses and normalisation in float32 (PyTorch's
 * torch.autocast). On a WebGPU adapter without shader-f16 it computes in
 * float32 and says so once on the console (backendInfo().autocast says why).
 */
export function autocast(fn) {
  const info = typeof fn === 'function' ? backend()?.autocast : null;
  if (info?.dtype === 'float32' && !autocastFallbackSaid) {
    autocastFallbackSaid = true;
    console.warn(`skiff: ${info.reason}`);
  }
  return withSwitch('autocast', raw.setAutocastEnabled, true, fn);
}
export const isAutocastEnabled = (...a) => raw.isAutocastEnabled(...a);
export const setGradEnabled = (...a) => raw.setGradEnabled(...a);

// ---- autodiff ------------------------------------------------------------------

/** grad(outputs, inputs, { gradOutputs, createGraph, retainGraph, allowUnused }). */
export const grad = (...a) => raw.grad(...a);

/**
 * A differentiable function with a hand-written backward (PyTorch's
 * autograd.Function, Paddle's PyLayer):
 *   const Cube = new Function({
 *     forward(ctx, x) { ctx.saveForBackward(x); return x.mul(x).mul(x); },
 *     backward(ctx, g) { const [x] = ctx.savedTensors; return g.mul(x.mul(x).mul(3)); },
 *   });
 *   const y = Cube.apply(x);
 * Subclasses may define forward/backward as methods instead.
 */
class SkiffFunction {
  constructor(definition = {}) {
    if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) {
      throw fail('Function', 'argument', `the definition must be an object { forward, backward, name? }, got ${describe(definition)}`);
    }
    const { forward, backward, name } = definition;
    if (forward !== undefined) this.forward = forward;
    if (backward !== undefined) this.backward = backward;
    if (name !== undefined && typeof name !== 'string') {
      throw fail('Function', 'argument', `name must be a string, got ${describe(name)}`);
    }
    this.name = name ?? (this.constructor !== SkiffFunction ? this.constructor.name : 'CustomFunction');
    if (typeof this.forward !== 'function' || typeof this.backward !== 'function') {
      throw fail(
        'Function',
        'argument',
        `needs forward(ctx, ...inputs) and backward(ctx, ...grads) functions, got forward: ${describe(this.forward)}, backward: ${describe(this.backward)}`,
      );
    }
  }

  /** Runs forward on the inputs and records backward; one output or an array. */
  apply(...inputs) {
    ready('Function.apply');
    const ctx = new raw.FunctionCtx();
    const outs = raw.applyFunction(
      this.name,
      ctx,
      (...xs) => this.forward(ctx, ...xs),
      (...gs) => this.backward(ctx, ...gs),
      inputs,
    );
    return outs.length === 1 ? outs[0] : outs;
  }
}
export { SkiffFunction as Function };

// ---- capture -------------------------------------------------------------------

/**
 * Compiles fn, a synchronous function of tensors returning a Tensor or an
 * array of Tensors (a whole training step: forward, backward(), clipping,
 * optimizer.step()). The first call runs fn and records every kernel it
 * runs; later calls replay that program without entering fn, as long as
 * what it assumed holds (input shapes, dtypes, devices and requiresGrad,
 * grad mode, the default device, the modules' parameters and training
 * flags, the optimizer's state); otherwise fn runs and is captured again.
 *   const step = skiff.jit((x, y) => { opt.zeroGrad(); const loss = ...; loss.backward(); opt.step(); return loss; });
 *   for (...) step(x, y);
 * Options: { cacheSize } (programs kept, default 8).
 */
export function jit(fn, options = {}) {
  if (typeof fn !== 'function') throw fail('jit', 'argument', `fn must be a function, got ${describe(fn)}`);
  options = checkOptions('jit', options, ['cacheSize']);
  ready('jit');
  const compiled = new raw.Jit(fn, options.cacheSize);
  const call = (...inputs) => compiled.call(inputs);
  Object.defineProperties(call, {
    name: { value: fn.name ? `jit(${fn.name})` : 'jit' },
    /** Why each capture happened, latest last. */
    log: { get: () => compiled.log },
    captures: { get: () => compiled.captures },
    replays: { get: () => compiled.replays },
    /** Kernels per call of the most recently used program. */
    kernels: { get: () => compiled.kernels },
    /** The most recently used program's text (Paddle's Program, a jaxpr). */
    program: { get: () => compiled.programText() },
    clear: { value: () => compiled.clear() },
    toString: { value: () => compiled.programText() || `jit(${fn.name || 'anonymous'}): not captured yet` },
  });
  return call;
}

/**
 * Loads a model saved by Rust's `skiff::jit::save_inference_model` (one
 * safetensors file: the forward program and the weights) onto the default
 * device, or `{ device }`; `model.run(x)` runs it.
 */
export const loadInferenceModel = (bytes, options) => {
  ready('loadInferenceModel');
  return raw.loadInferenceModel(bytes, options);
};

// ---- profiling -----------------------------------------------------------------

/**
 * Runs fn (sync or async) while recording every kernel the page runs, and
 * resolves to the profile with fn's result:
 *   const p = await skiff.profile(async () => { step(); await loss.item(); });
 *   console.log(p.table);            // per op: calls, host ms, GPU ms (timestamp queries)
 *   p.ops, p.dispatches, p.readbacks, p.chromeTrace (chrome://tracing, Perfetto)
 * If fn throws, the session ends and the promise rejects with fn's error.
 */
export async function profile(fn) {
  if (typeof fn !== 'function') throw fail('profile', 'argument', `fn must be a function, got ${describe(fn)}`);
  ready('profile');
  raw.profileStart();
  let result;
  let thrown = null;
  try {
    result = await fn();
  } catch (e) {
    thrown = { e };
  }
  const recorded = await raw.profileFinish();
  if (thrown) throw thrown.e;
  return { ...recorded, result };
}

// nn, optim and the free functions over modules live in modules.js.
export * from './modules.js';
export { customOp } from './custom.js';

// ---- misc ------------------------------------------------------------------------

/** Seeds the random generator (randn, rand, dropout, weight init). */
export const manualSeed = (seed) => {
  ready('manualSeed');
  raw.manualSeed(seed);
};
/**
 * Deterministic mode: the cpu kernels compute the same bits on every target
 * (native and wasm, either wasm build), at some cost in speed. WebGPU is not
 * covered. In Node, SKIFF_DETERMINISTIC=1 turns it on at init().
 */
export const setDeterministic = (on) => {
  ready('setDeterministic');
  raw.setDeterministic(on);
};
/** Whether deterministic mode is on. */
export const isDeterministic = () => {
  ready('isDeterministic');
  return raw.isDeterministic();
};
export const setDefaultDevice = (d) => raw.setDefaultDevice(d);
export const getDefaultDevice = () => raw.getDefaultDevice();
/** Frees the pools of unused buffers (the cpu pool and the GPU's). */
export const emptyCache = () => raw.emptyCache();

// The wasm exports behind the cargo feature `web-testing`: in the test build
// (npm run build:test) only. Looked up by a computed name, so bundlers do not
// report them missing from the published glue.
const TESTING = ['registryCases', 'checkCase', 'caseData', 'registryCoverage', 'opNames', 'kernelSources', 'compiledKernels', 'loseDevice', 'forwardDigests'];

/**
 * Registry checks for the test suites (not part of the stable API): only in
 * the test build (npm run build:test); undefined in the published package.
 */
export const testing = TESTING.every((name) => typeof raw[name] === 'function')
  ? Object.fromEntries(TESTING.map((name) => [name, (...a) => raw[name](...a)]))
  : undefined;

export { raw as _raw };
