// skiff in a dedicated Web Worker: its own wasm instance and device, so a
// training loop never blocks the page. `skiff-ml/worker`.
//
// In the worker script:   serve(skiff, { train(arg, ctx) {...}, weights() {...} })
// On the page:            const w = await SkiffWorker.start(new URL('./worker.js', import.meta.url))
//                         w.on('metrics', show); await w.call('train', { steps: 500 })
//
// The protocol is a handful of tagged messages (below). It is written here
// rather than taken from a general RPC library (Comlink) because this module
// must load in a worker without a bundler, where a bare import cannot resolve
// (import maps do not reach workers), and what it adds is skiff's own: init()
// in the worker with the page's device choice, SkiffErrors that keep their
// `op` and `kind` across the boundary, cooperative cancellation through an
// AbortSignal (the handler checks it between steps), and events streamed
// while a call runs.
//
// Page -> worker: { skiff: 'init', options } | { skiff: 'call', id, method, arg, aborted } | { skiff: 'abort', id }
// Worker -> page: { skiff: 'ready', backend } | { skiff: 'init-failed', error }
//                 | { skiff: 'result', id, value } | { skiff: 'error', id, error }
//                 | { skiff: 'event', name, data }

import { SkiffError, describe, fail } from './checks.js';

const TAG = 'skiff';
const marked = new WeakMap(); // value -> the transferables to move with it

/**
 * Marks `value` (a result, an event's data, or a call's argument) to be sent
 * with `transferables` moved rather than copied: e.g. a state dict's bytes,
 * `transfer(bytes, [bytes.buffer])`. Returns `value`.
 */
export function transfer(value, transferables) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    throw fail('transfer', 'argument', `value must be an object or array to carry transferables, got ${describe(value)}`);
  }
  if (!Array.isArray(transferables)) {
    throw fail('transfer', 'argument', `transferables must be an array (e.g. [bytes.buffer]), got ${describe(transferables)}`);
  }
  marked.set(value, transferables);
  return value;
}

const transferablesOf = (value) => (value !== null && typeof value === 'object' ? marked.get(value) ?? [] : []);

/** An error as plain data that survives postMessage, with a SkiffError's op and kind. */
function errorData(e) {
  if (e instanceof Error) {
    return { name: e.name, message: e.message, stack: e.stack, op: e.op, kind: e.kind, skiff: e instanceof SkiffError };
  }
  return { name: 'Error', message: `a non-Error was thrown: ${describe(e)}`, skiff: false };
}

/** The error on this side: a SkiffError again when it was one (same op and kind), else an Error. */
function errorFrom(data) {
  const e = data.skiff ? new SkiffError(data.message, { op: data.op, kind: data.kind }) : new Error(data.message);
  if (!data.skiff && data.name) e.name = data.name;
  if (data.stack) e.stack = `${data.stack}\n    (in the worker)`;
  return e;
}

/** Resolves after the worker's queued messages (abort, other calls) had their turn. */
function macrotask() {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(0);
  });
}

// ---- the worker side ----------------------------------------------------

/**
 * Answers the page's SkiffWorker in this worker: init() with the page's
 * options, then calls to `handlers`. A handler gets the call's argument and
 * a context `{ signal, emit, yield }`, may be async, and its return value
 * (or thrown error) settles the page's call. Calls run concurrently: while
 * one awaits (e.g. `await ctx.yield()` between training steps), the worker
 * takes the next message, so a prediction can be answered mid-training and
 * an abort reaches `ctx.signal`. Returns `{ emit }`, for events sent from
 * work no call is waiting on (a loop started by one call, reporting after
 * that call returned).
 */
export function serve(skiff, handlers, scope = globalThis) {
  if (!skiff || typeof skiff.init !== 'function') {
    throw fail('serve', 'argument', "skiff must be the skiff-ml module (import * as skiff from 'skiff-ml'), got " + describe(skiff));
  }
  if (!handlers || typeof handlers !== 'object') {
    throw fail('serve', 'argument', `handlers must be an object of functions, got ${describe(handlers)}`);
  }
  for (const [name, fn] of Object.entries(handlers)) {
    if (typeof fn !== 'function') throw fail('serve', 'argument', `handler "${name}" must be a function, got ${describe(fn)}`);
  }
  const running = new Map(); // call id -> AbortController
  const post = (msg, transferables = []) => scope.postMessage({ [TAG]: msg.kind, ...msg }, transferables);
  const emit = (name, data, transferables = transferablesOf(data)) => post({ kind: 'event', name, data }, transferables);

  async function onCall({ id, method, arg, aborted }) {
    const controller = new AbortController();
    if (aborted) controller.abort(); // the page's signal had aborted before the call
    running.set(id, controller);
    try {
      if (!Object.hasOwn(handlers, method)) {
        const known = Object.keys(handlers).map((n) => `"${n}"`).join(', ') || 'none';
        throw fail('SkiffWorker.call', 'argument', `the worker has no handler "${method}" (it serves ${known})`);
      }
      const ctx = {
        signal: controller.signal,
        emit,
        yield: macrotask,
      };
      const value = await handlers[method](arg, ctx);
      post({ kind: 'result', id, value }, transferablesOf(value));
    } catch (e) {
      post({ kind: 'error', id, error: errorData(e) });
    } finally {
      running.delete(id);
    }
  }

  scope.addEventListener('message', (event) => {
    const msg = event.data;
    if (msg === null || typeof msg !== 'object' || typeof msg[TAG] !== 'string') return;
    if (msg[TAG] === 'init') {
      skiff.init(msg.options).then(
        (backend) => post({ kind: 'ready', backend }),
        (e) => post({ kind: 'init-failed', error: errorData(e) }),
      );
    } else if (msg[TAG] === 'call') {
      onCall(msg);
    } else if (msg[TAG] === 'abort') {
      running.get(msg.id)?.abort();
    }
  });
  return { emit };
}

// ---- the page side ------------------------------------------------------

const START_OPTIONS = ['device', 'wasm', 'relaxedSimd', 'name'];

/**
 * A worker that serves skiff (see serve()), seen from the page: call its
 * handlers, listen to its events, terminate it.
 */
export class SkiffWorker {
  /**
   * Starts `worker` (a Worker, or the URL of a module worker script that
   * calls serve()) and runs init() in it with `options` ({ device, wasm, relaxedSimd };
   * `name` names a worker made from a URL). Resolves once skiff is ready
   * there; `backend` is what init() chose in the worker.
   */
  static async start(worker, options = {}) {
    if (options === null || typeof options !== 'object') {
      throw fail('SkiffWorker.start', 'argument', `options must be an object, got ${describe(options)}`);
    }
    for (const key of Object.keys(options)) {
      if (!START_OPTIONS.includes(key)) {
        throw fail('SkiffWorker.start', 'argument', `unknown option "${key}" (expected one of ${START_OPTIONS.join(', ')})`);
      }
    }
    const { name, ...initOptions } = options;
    let from = 'the worker';
    if (typeof worker === 'string' || worker instanceof URL) {
      from = `the worker ${worker}`;
      worker = new Worker(worker, { type: 'module', name });
    } else if (typeof Worker === 'undefined' || !(worker instanceof Worker)) {
      throw fail('SkiffWorker.start', 'argument', `worker must be a Worker or a script URL, got ${describe(worker)}`);
    }
    if (initOptions.wasm instanceof URL) initOptions.wasm = initOptions.wasm.href;
    const w = new SkiffWorker(worker, from);
    try {
      w.backend = await w.ready(initOptions);
    } catch (e) {
      w.terminate();
      throw e;
    }
    return w;
  }

  /** Use SkiffWorker.start(). */
  constructor(worker, from) {
    this.worker = worker;
    this.from = from;
    this.backend = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject }
    this.listeners = new Map(); // event name -> Set of listeners
    this.closed = null; // why calls now fail, once terminated or crashed
    this.onReady = null;
    worker.addEventListener('message', (event) => this.receive(event.data));
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      const where = event.filename ? ` (${event.filename}:${event.lineno})` : '';
      this.close(`${this.from} failed: ${event.message || 'its script did not load or threw at start'}${where}`, 'device-lost');
    });
    worker.addEventListener('messageerror', () => this.close(`${this.from} sent a message that could not be read`, 'device-lost'));
  }

  ready(options) {
    return new Promise((resolve, reject) => {
      this.onReady = { resolve, reject };
      try {
        this.worker.postMessage({ [TAG]: 'init', options });
      } catch (e) {
        this.onReady = null;
        reject(fail('SkiffWorker.start', 'argument', `the options cannot be sent to a worker (${e.message}); pass wasm as a URL string`));
      }
    });
  }

  receive(msg) {
    if (msg === null || typeof msg !== 'object' || typeof msg[TAG] !== 'string') return;
    const kind = msg[TAG];
    if (kind === 'ready' || kind === 'init-failed') {
      const waiting = this.onReady;
      this.onReady = null;
      if (kind === 'ready') waiting?.resolve(msg.backend);
      else waiting?.reject(errorFrom(msg.error));
    } else if (kind === 'result' || kind === 'error') {
      const call = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (kind === 'result') call?.resolve(msg.value);
      else call?.reject(errorFrom(msg.error));
    } else if (kind === 'event') {
      for (const listener of this.listeners.get(msg.name) ?? []) listener(msg.data);
    }
  }

  /**
   * Calls the worker's handler `method` with `arg` (structured-cloned, or
   * moved where marked with transfer()). `options.signal` aborts it
   * cooperatively: the handler sees `ctx.signal` aborted, and the call
   * settles with whatever the handler then returns or throws.
   */
  call(method, arg, options = {}) {
    if (typeof method !== 'string') {
      return Promise.reject(fail('SkiffWorker.call', 'argument', `method must be a string, got ${describe(method)}`));
    }
    if (options === null || typeof options !== 'object') {
      return Promise.reject(fail('SkiffWorker.call', 'argument', `options must be an object, got ${describe(options)}`));
    }
    const { signal } = options;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      return Promise.reject(fail('SkiffWorker.call', 'argument', `signal must be an AbortSignal, got ${describe(signal)}`));
    }
    if (this.closed) return Promise.reject(fail('SkiffWorker.call', this.closed.kind, `${method}: ${this.closed.why}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      try {
        const aborted = signal?.aborted ?? false;
        this.worker.postMessage({ [TAG]: 'call', id, method, arg, aborted }, transferablesOf(arg));
      } catch (e) {
        this.pending.delete(id);
        reject(fail('SkiffWorker.call', 'argument', `${method}: the argument cannot be sent to a worker (${e.message})`));
        return;
      }
      if (signal && !signal.aborted) {
        signal.addEventListener('abort', () => this.worker.postMessage({ [TAG]: 'abort', id }), { once: true });
      }
    });
  }

  /** Calls `listener(data)` for each `ctx.emit(event, data)` in the worker; returns a function that stops it. */
  on(event, listener) {
    if (typeof event !== 'string') throw fail('SkiffWorker.on', 'argument', `event must be a string, got ${describe(event)}`);
    if (typeof listener !== 'function') {
      throw fail('SkiffWorker.on', 'argument', `listener must be a function, got ${describe(listener)}`);
    }
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(listener);
    return () => this.listeners.get(event)?.delete(listener);
  }

  /** Stops the worker at once (its device and memory go with it); calls still running reject. */
  terminate() {
    this.worker.terminate();
    this.close(`${this.from} was terminated`, 'value');
  }

  /** From now on calls fail with `why`: kind 'device-lost' when the worker died, 'value' when terminated. */
  close(why, kind) {
    if (this.closed) return;
    this.closed = { why, kind };
    const waiting = this.onReady;
    this.onReady = null;
    waiting?.reject(fail('SkiffWorker.start', kind, why));
    for (const [, call] of this.pending) call.reject(fail('SkiffWorker.call', kind, `${call.method}: ${why}`));
    this.pending.clear();
  }
}
