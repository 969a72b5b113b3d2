// Records which names of the public API the tests touch, so that
// lib/dts-coverage.mjs can check every name web/index.d.ts declares against
// what the suites really called.
//
// - Module-level names (`tensor`, `nn.Linear`, `nn.init.zeros_`, `testing.caseData`)
//   go through a Proxy over the module: calling, constructing or `instanceof`
//   records the dotted path.
// - Class members (`Tensor.add`, `Module.forward`, getters such as
//   `Tensor.shape`, statics) are recorded by wrappers installed on the classes'
//   prototypes and constructors.
//
// Only calls made by test code count: while a traced function runs, nested
// calls (the wrapper's `tensor()` calling `Tensor.fromData`, `array()`
// reading `shape`) are not recorded, except inside JS callbacks handed to it
// (`tidy(fn)`, hooks), which run as test code again.
//
// No imports: the same file runs in Chromium and in Node.

const WRAPPED = Symbol('skiff-trace-wrapped');

/** The exported classes whose members are recorded (their names in the module). */
export const TRACED_CLASSES = ['Tensor', 'Module', 'Loss', 'Optimizer', 'LrScheduler', 'FunctionCtx', 'HookHandle', 'ModuleHookHandle', 'Function', 'InferenceModel', 'GradScaler'];

/** Classes written in JS whose methods run test code (a custom Function's apply runs its forward). */
const RUNS_TEST_CODE = ['Function'];

const isClass = (f) => typeof f === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(f));
const isPlainObject = (v) => v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;

let depth = 0;
const touched = new Set();

/** Runs `fn` as test code: what it calls is recorded. */
function asTestCode(fn) {
  if (typeof fn !== 'function' || isClass(fn)) return fn;
  return function testCode(...args) {
    const saved = depth;
    depth = 0;
    try {
      return fn.apply(this, args);
    } finally {
      depth = saved;
    }
  };
}

/**
 * Calls `fn`, recording `name` when test code called it, and (with `hide`)
 * hiding the calls it makes itself. `construct`: the new.target of a `new`.
 */
function call(name, fn, thisArg, args, construct = null, hide = true) {
  if (depth === 0) touched.add(name);
  if (!hide) return construct ? Reflect.construct(fn, args, construct) : fn.apply(thisArg, args);
  depth++;
  try {
    const a = args.map(asTestCode);
    return construct ? Reflect.construct(fn, a, construct) : fn.apply(thisArg, a);
  } finally {
    depth--;
  }
}

function wrapFunction(name, fn, hide) {
  if (fn[WRAPPED]) return fn;
  const w = function (...args) {
    return call(name, fn, this, args, null, hide);
  };
  Object.defineProperty(w, WRAPPED, { value: fn });
  Object.defineProperty(w, 'name', { value: fn.name });
  return w;
}

/**
 * Wraps the methods, getters and setters of `obj` (a prototype or a class)
 * as `prefix.member`. `hide`: false for JS classes whose methods run test
 * code themselves (a custom Function's apply runs its forward).
 */
function wrapMembers(prefix, obj, skip, hide) {
  for (const key of Reflect.ownKeys(obj)) {
    // wasm-bindgen's own plumbing (__wrap, __destroy_into_raw) is no API.
    if (skip.includes(key) || (typeof key === 'string' && key.startsWith('__'))) continue;
    const d = Object.getOwnPropertyDescriptor(obj, key);
    if (!d.configurable) continue;
    const name = `${prefix}.${typeof key === 'symbol' ? `[${String(key).slice(7, -1)}]` : key}`;
    if (typeof d.value === 'function') {
      Object.defineProperty(obj, key, { ...d, value: wrapFunction(name, d.value, hide) });
    } else if (d.get || d.set) {
      Object.defineProperty(obj, key, {
        ...d,
        get: d.get && wrapFunction(name, d.get, hide),
        set: d.set && wrapFunction(name, d.set, hide),
      });
    }
  }
}

const proxies = new Map();

/** A Proxy over a module-level function, class or namespace object, recording `path`. */
function traceValue(path, value) {
  if (!isPlainObject(value) && typeof value !== 'function') return value;
  // One proxy per path and value, so that `api.nn === api.nn` holds.
  const cached = proxies.get(path);
  if (cached && cached.value === value) return cached.proxy;
  const proxy = isPlainObject(value)
    ? new Proxy(value, { get: (t, k) => (typeof k === 'string' ? traceValue(`${path}.${k}`, t[k]) : t[k]) })
    : new Proxy(value, {
        apply: (t, thisArg, args) => call(path, t, thisArg, args),
        construct: (t, args, newTarget) => call(path, t, undefined, args, newTarget, !RUNS_TEST_CODE.includes(path)),
        get: (t, k) => {
          if (k === Symbol.hasInstance && depth === 0) touched.add(path);
          return t[k];
        },
      });
  proxies.set(path, { value, proxy });
  return proxy;
}

/**
 * Installs the member wrappers on `skiff`'s classes (once per module
 * instance) and returns { api, touched, untraced, traced }: `api` is the module to
 * hand the tests, `touched()` the sorted names recorded so far, and
 * `untraced(fn)` runs harness code (which may be async) without recording.
 */
export function makeTracer(skiff) {
  const wrapClasses = () => {
    for (const cls of TRACED_CLASSES) {
      const C = skiff[cls];
      // A class the module lacks: the declared-names test reports it.
      if (typeof C !== 'function') continue;
      const hide = !RUNS_TEST_CODE.includes(cls);
      wrapMembers(cls, C.prototype, ['constructor'], hide);
      wrapMembers(cls, C, ['length', 'name', 'prototype'], hide);
    }
  };
  wrapClasses();
  const api = new Proxy(skiff, {
    get: (t, k) => (typeof k === 'string' ? traceValue(k, t[k]) : t[k]),
  });
  return {
    api,
    touched: () => [...touched].sort(),
    async untraced(fn) {
      depth++;
      try {
        return await fn();
      } finally {
        depth--;
      }
    },
    /**
     * Wraps members added since (the Tensor methods the op registry
     * generates are installed by init(), once the wasm is loaded).
     */
    refresh: wrapClasses,
    /** Runs `fn` as test code from inside `untraced` harness code. */
    traced: (fn) => asTestCode(fn)(),
  };
}
