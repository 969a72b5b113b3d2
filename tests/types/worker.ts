// `skiff-ml/worker` as a TypeScript user writes it: the handlers' types
// flow to the page's SkiffWorker (names, arguments, results, events).
// Checked with usage.ts (tsconfig.json); never run.
import * as skiff from 'skiff-ml';
import { SkiffWorker, serve, transfer } from 'skiff-ml/worker';
import type { WorkerContext } from 'skiff-ml/worker';

// ---- the worker's side --------------------------------------------------------
const handlers = {
  async train(arg: { steps: number }, ctx: WorkerContext): Promise<{ steps: number }> {
    let step = 0;
    for (; step < arg.steps && !ctx.signal.aborted; step++) {
      ctx.emit('loss', { step, loss: 0.5 });
      await ctx.yield();
    }
    return { steps: step };
  },
  async weights(): Promise<Uint8Array> {
    const bytes = new Uint8Array(8);
    return transfer(bytes, [bytes.buffer]);
  },
};
export function worker(): void {
  const { emit } = serve(skiff, handlers);
  setTimeout(() => emit('loss', { step: 0, loss: 1 }), 0);
  // @ts-expect-error a handler must be a function
  serve(skiff, { train: 42 });
}

// ---- the page's side ----------------------------------------------------------
type Events = { loss: { step: number; loss: number } };
export async function page(): Promise<number> {
  const w = await SkiffWorker.start<typeof handlers, Events>(new Worker(new URL('./w.js', import.meta.url), { type: 'module' }), {
    device: 'auto',
  });
  const device: 'webgpu' | 'cpu' = w.backend.device;
  const stop = w.on('loss', ({ step, loss }) => console.log(device, step, loss.toFixed(3)));
  const pause = new AbortController();
  const { steps } = await w.call('train', { steps: 10 }, { signal: pause.signal });
  const bytes: Uint8Array = await w.call('weights');
  // @ts-expect-error no such handler
  await w.call('nope');
  // @ts-expect-error the argument's type comes from the handler
  await w.call('train', { steps: 'ten' });
  // @ts-expect-error no such event
  w.on('accuracy', () => {});
  // @ts-expect-error devices are 'auto' | 'webgpu' | 'cpu'
  await SkiffWorker.start('/w.js', { device: 'gpu' });
  stop();
  w.terminate();
  return steps + bytes.length;
}
