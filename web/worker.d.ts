// Types of `skiff-ml/worker`: skiff in a dedicated Web Worker (web/worker.js).
import type { BackendInfo, InitOptions } from './index.js';
import type * as Skiff from './index.js';

/** What a handler gets besides its argument. */
export interface WorkerContext {
  /** Aborted when the page's call passes a signal that aborts: check it between steps. */
  readonly signal: AbortSignal;
  /** Sends `data` to the page's `on(event, ...)` listeners now, while the call runs. */
  emit(event: string, data?: unknown, transferables?: Transferable[]): void;
  /** Resolves after the worker's queued messages had their turn (aborts, other calls): await it between steps. */
  yield(): Promise<void>;
}

/** The functions a worker serves: each takes one argument and the context, and may be async. */
export type Handlers = Record<string, (arg: any, ctx: WorkerContext) => unknown>;

/**
 * In the worker: init() skiff when the page asks, then answer the page's calls with `handlers`.
 * Returns `emit`, for events from work that outlives the call that started it.
 */
export function serve<H extends Handlers>(skiff: typeof Skiff, handlers: H, scope?: WorkerScope): { emit: WorkerContext['emit'] };

/** Where serve() listens and answers: the worker's global scope (the default). */
export interface WorkerScope {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
}

/** Marks `value` to be sent with `transferables` moved, not copied (a result, an event's data or a call's argument). */
export function transfer<T extends object>(value: T, transferables: Transferable[]): T;

export interface WorkerStartOptions {
  /** init()'s device choice in the worker: 'auto' (default), 'webgpu' or 'cpu'. */
  device?: InitOptions['device'];
  /** Where the worker finds the .wasm, as a URL (a string or URL: it is sent to the worker). */
  wasm?: string | URL;
  /** init()'s choice of the package's .wasm build in the worker (see InitOptions). */
  relaxedSimd?: boolean;
  /** The worker's name (devtools), when `worker` is a URL. */
  name?: string;
}

export interface CallOptions {
  /** Aborts the call cooperatively: the handler sees ctx.signal aborted and decides what to return. */
  signal?: AbortSignal;
}

type Arg<F> = F extends (arg: infer A, ctx: WorkerContext) => unknown ? A : never;
type Result<F> = F extends (...args: any[]) => infer R ? Awaited<R> : never;

/** A worker that serves skiff, seen from the page. H: the handlers' types (`typeof handlers` in the worker); E: the events' data. */
export class SkiffWorker<H extends Handlers = Handlers, E extends Record<string, unknown> = Record<string, any>> {
  /** Starts `worker` (a Worker, or a module worker script's URL) and runs init() in it; resolves once skiff is ready there. */
  static start<H extends Handlers = Handlers, E extends Record<string, unknown> = Record<string, any>>(
    worker: Worker | string | URL,
    options?: WorkerStartOptions,
  ): Promise<SkiffWorker<H, E>>;
  private constructor();
  /** What init() chose in the worker. */
  readonly backend: BackendInfo;
  /** Calls the worker's handler `method`; settles with what it returns or throws (a SkiffError keeps its op and kind). */
  call<K extends keyof H & string>(method: K, arg?: Arg<H[K]>, options?: CallOptions): Promise<Result<H[K]>>;
  /** Listens to `ctx.emit(event, data)`; returns a function that stops listening. */
  on<K extends keyof E & string>(event: K, listener: (data: E[K]) => void): () => void;
  /** Stops the worker at once; calls still running reject. */
  terminate(): void;
}
