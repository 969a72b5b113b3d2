// Argument checks of the JS wrapper (api.js), worded as the Rust bindings
// word theirs (src/web/args.rs): descriptions of bad values, options bags,
// handles that were disposed or freed, and calls on freed handles; and the
// SkiffError class every error of the package is an instance of.

import * as raw from '../pkg/skiff.js';

/**
 * What every error skiff throws or rejects with is: an Error whose message
 * starts with the op the caller called ("broadcastTo: ..."), with that `op`,
 * a `kind` (web/index.d.ts: ErrorKind) and, when another op failed inside the
 * called one ("data: gather: ..."), that op's name as `innerOp`. The Rust
 * bindings build their errors with this class too (api.js hands it over).
 */
export class SkiffError extends Error {
  constructor(message, { op, kind, innerOp } = {}) {
    super(message);
    this.op = op;
    this.kind = kind;
    if (innerOp !== undefined) this.innerOp = innerOp;
  }
}
Object.defineProperty(SkiffError.prototype, 'name', { value: 'SkiffError', writable: true, configurable: true });

/** A SkiffError of `op`: "`op`: `detail`". */
export const fail = (op, kind, detail) => new SkiffError(`${op}: ${detail}`, { op, kind });

/**
 * A short description of a JS value for error messages, worded as the Rust
 * bindings word theirs (src/web/args.rs): `the string "abc"`, `the BigInt 5n`.
 * Never throws (JSON.stringify would on a BigInt, String() on a symbol).
 */
export function describe(v) {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'number':
      return `the number ${v}`;
    case 'string':
      return v.length > 40 ? `the string ${JSON.stringify(v.slice(0, 40))}... (${v.length} characters)` : `the string ${JSON.stringify(v)}`;
    case 'boolean':
      return `the boolean ${v}`;
    case 'bigint': {
      const digits = v.toString();
      return `the BigInt ${digits.length > 40 ? `${digits.slice(0, 40)}...` : digits}n (pass a Number)`;
    }
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      if (Array.isArray(v)) return `an array of length ${v.length}`;
      if (v instanceof raw.Tensor) return 'a Tensor';
      if (ArrayBuffer.isView(v) || isHandle(v)) {
        const name = v.constructor.name;
        return `${/^[AEIOU]/.test(name) ? 'an' : 'a'} ${name}`;
      }
      return 'an object';
  }
}

/** Whether `v` is an object of one of the wasm-bindgen classes (no options bag). */
export const isHandle = (v) =>
  [raw.Tensor, raw.Module, raw.Loss, raw.Optimizer, raw.LrScheduler, raw.FunctionCtx, raw.HookHandle, raw.ModuleHookHandle].some(
    (C) => v instanceof C,
  );

/**
 * Checks an options bag as the Rust bindings do: an object (or
 * undefined/null) whose keys are all in `allowed`, so a misspelt option
 * (`requires_grad`) is an error rather than a silently ignored default.
 */
export function checkOptions(op, options, allowed) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options) || ArrayBuffer.isView(options) || isHandle(options)) {
    throw fail(op, 'argument', `options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw fail(op, 'argument', `unknown option ${JSON.stringify(key)} (known: ${allowed.join(', ')})`);
  }
  return options;
}

/**
 * The registry id of a live tensor handle, or null when it was disposed or
 * freed (wasm-bindgen's free() leaves an object whose getters throw).
 */
export function liveId(t) {
  // isDisposed's guard (nameFreedCalls) refuses a freed object without entering wasm.
  try {
    return t.isDisposed ? null : t._skiffId;
  } catch {
    return null;
  }
}

// wasm-bindgen answers a call on an object whose free() (or [Symbol.dispose]())
// ran with a bare "null pointer passed to rust": name the member instead.
const FREED = 'null pointer passed to rust';
// Where wasm-bindgen's objects keep their Rust pointer (0 once freed); its
// version is pinned by scripts/build-wasm.sh.
const WBG_PTR = '__wbg_ptr';
export function nameFreedCalls(cls, prefix) {
  const proto = cls.prototype;
  for (const key of Object.getOwnPropertyNames(proto)) {
    // free itself, and the registry-id getters the bindings read (they handle a freed object).
    if (key === 'constructor' || key === 'free' || key.startsWith('_')) continue;
    const d = Object.getOwnPropertyDescriptor(proto, key);
    const guard = (f) => guardMember(cls, prefix ? `${prefix}.${key}` : key, f);
    if (typeof d.value === 'function') Object.defineProperty(proto, key, { ...d, value: guard(d.value) });
    else if (d.get || d.set) Object.defineProperty(proto, key, { ...d, get: guard(d.get), set: guard(d.set) });
  }
}

const freedError = (cls, op) =>
  fail(op, 'argument', `this ${cls.name} was freed (free() or [Symbol.dispose]() was called) and cannot be used`);

/**
 * Throws unless `obj` is a live object of `cls` that skiff made: checked
 * before entering wasm, because wasm-bindgen's own check throws from inside
 * wasm, and each such exception leaks wasm stack space (a few thousand calls
 * on a freed handle would corrupt the instance).
 */
export function checkReceiver(cls, op, obj) {
  const ptr = obj === null || obj === undefined ? undefined : obj[WBG_PTR];
  if (typeof ptr === 'number' && ptr !== 0) return;
  if (ptr === 0) throw freedError(cls, op);
  const what = obj instanceof cls ? `an object that poses as a ${cls.name}` : describe(obj);
  throw fail(op, 'argument', `called on ${what}, not on a ${cls.name} made by skiff`);
}

/**
 * `f` (a method or accessor of `cls` named `op`), checked to run on a live
 * object that skiff made; undefined stays undefined (an absent accessor).
 */
export function guardMember(cls, op, f) {
  if (!f) return f;
  const freed = () => freedError(cls, op);
  return function guarded(...args) {
    checkReceiver(cls, op, this);
    try {
      return f.apply(this, args);
    } catch (e) {
      if (e instanceof Error && e.message === FREED) throw freed();
      throw e;
    }
  };
}
