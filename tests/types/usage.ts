// A typed tour of the skiff API, as a TypeScript user writes it. Never run:
// `npx tsc --noEmit -p tests/types/tsconfig.json` checks it against
// web/index.d.ts (through package.json "exports", the way users import it),
// and tests/browser/types.test.mjs runs that check under `npm test`.
// The @ts-expect-error lines check that the declarations are precise
// (a loose `any` would make them fail as unused directives).
import * as skiff from 'skiff-ml';
import { init, tensor, zeros, ones, randn, arange, tidy, noGrad, grad, dispose, keep, memory, nn, optim, manualSeed } from 'skiff-ml';
import type { Module, Tensor } from 'skiff-ml';

export async function tour(): Promise<number> {
  // ---- init ------------------------------------------------------------------
  const info = await init({ device: 'auto' });
  const where: 'webgpu' | 'cpu' = info.device;
  const why: string | null = info.reason;
  if (info.adapter !== null) {
    const name: string = info.adapter.name;
    console.log(name);
  }
  console.log(where, why);
  // @ts-expect-error: 'tpu' is no device
  await init({ device: 'tpu' });

  // ---- creation ----------------------------------------------------------------
  manualSeed(42);
  skiff.setDeterministic(true);
  const same: boolean = skiff.isDeterministic();
  // @ts-expect-error: the mode is a boolean
  skiff.setDeterministic('on');
  skiff.setDeterministic(!same);
  const a: Tensor = tensor([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  const b = tensor(new Float32Array([1, 2, 3, 4, 5, 6]), { shape: [3, 2], requiresGrad: true });
  const c = tensor(3, { dtype: 'float64', device: 'cpu' });
  const z = zeros([2, 2], { dtype: 'int32' });
  const o = ones([3]);
  const r = randn([4, 4]);
  const n = arange(0, 10);
  const s = skiff.full([2], 7);
  const e = skiff.eye(3);
  const l = skiff.linspace(0, 1, 5);
  const u = skiff.rand([2]);
  const k = skiff.randint(0, 10, [5]);
  // @ts-expect-error: 'float17' is no dtype
  tensor([1], { dtype: 'float17' });

  // ---- properties and readback ---------------------------------------------------
  const shape: readonly number[] | Uint32Array = a.shape;
  const dtype: 'float32' | 'float64' | 'float16' | 'int32' | 'bool' = a.dtype;
  const device: 'cpu' | 'webgpu' = a.device;
  const values: Float32Array | Float64Array | Int32Array | Uint8Array = await a.data();
  const nested: unknown = await a.array();
  const one: number = await c.item();
  const text: string = a.toString();
  const disposed: boolean = z.isDisposed;
  console.log(shape, dtype, device, values, nested, one, text, disposed);

  // ---- ops -----------------------------------------------------------------------------
  const y = a.matmul(b).add(1).sub(o.sum()).mul(2).div(c.to(a.device).reshape([1, 1]).add(1));
  const act = y.relu().softmax(-1);
  const red = act.sum([1], { keepdim: true }).mean();
  const p = r.permute([1, 0]).reshape([16]);
  const loss = y.crossEntropy(tensor(new Int32Array([0, 1])));
  dispose([n, s, e, l, u, k, p, red]);
  // @ts-expect-error: matmul takes a Tensor
  a.matmul('x');

  // ---- autodiff -------------------------------------------------------------------------
  loss.backward();
  const gb: Tensor | undefined = b.grad;
  const x = tensor([1, 2, 3], { requiresGrad: true });
  const cube = x.mul(x).mul(x).sum();
  const [g1] = grad([cube], [x], { createGraph: true });
  const [g2] = grad([g1!.sum()], [x], { retainGraph: false, allowUnused: false });
  const handle = x.registerHook((g: Tensor) => g.mul(2));
  handle.remove();
  x.registerHook(() => undefined);
  const w = tensor([1.0], { requiresGrad: true }).requiresGrad_(true);
  w.mul(3).backward(undefined, { retainGraph: true });
  const frozen: Tensor = noGrad(() => x.mul(2));
  // ---- mixed precision --------------------------------------------------------------
  const mixed: Tensor = skiff.autocast(() => x.matmul(x));
  const autocasting: boolean = skiff.isAutocastEnabled();
  const scaler = new skiff.GradScaler({ initScale: 1024, growthInterval: 100 });
  scaler.scale(mixed.sum()).backward();
  const stepped: boolean = await scaler.step(new optim.SGD([w], { lr: 0.1 }));
  scaler.update();
  const factor: number = scaler.getScale();
  const half: 'float16' | 'float32' = skiff.backendInfo()!.autocast.dtype;
  // @ts-expect-error: the options are numbers
  new skiff.GradScaler({ initScale: 'big' });
  const Scale = new skiff.Function({
    forward(ctx, input: Tensor) {
      ctx.saveForBackward(input);
      return input.mul(3);
    },
    backward(ctx, g: Tensor) {
      const [saved] = ctx.savedTensors;
      console.log(saved.shape);
      return [g.mul(3)];
    },
  });
  const scaled = Scale.apply(x) as Tensor; // apply returns Tensor | Tensor[] (one output or several)
  console.log(gb, g2, frozen, scaled);

  // ---- nn and optim -----------------------------------------------------------------------
  const model = new nn.Sequential([new nn.Linear(2, 16), new nn.ReLU(), new nn.Linear(16, 2)]);
  // The layer constructors (generated from the layer table) take what their factories take.
  const stack: Module = nn.Sequential(new nn.Conv2d(1, 4, [3, 3], { padding: 1 }), nn.GELU({ approximate: 'tanh' }));
  const holders: Module[] = [new nn.ModuleList(), new nn.ModuleDict({ head: new nn.Linear(4, 2, { bias: false }) })];
  // @ts-expect-error: sizes are numbers
  new nn.Linear('2', 16);
  // @ts-expect-error: 'erf' is no GELU approximation
  new nn.GELU({ approximate: 'erf' });
  // @ts-expect-error: Sequential takes Modules
  new nn.Sequential(new nn.ReLU(), 3);
  console.log(stack, holders);
  const params: Tensor[] = model.parameters();
  const opt = new optim.Adam(params, { lr: 1e-2 });
  const sgd = new optim.SGD(new nn.Linear(2, 2).parameters(), { lr: 0.1 });
  const sched = new optim.StepLR(opt, { stepSize: 10, gamma: 0.5 });
  const conv = new nn.Conv2d(1, 4, 3);
  const hook = model.registerForwardHook(() => undefined);
  hook.remove();
  const bytes: Uint8Array = await model.stateDict();
  model.loadStateDict(bytes);
  const inputs = randn([8, 2]);
  const labels = tensor(new Int32Array(8));
  let last = 0;
  for (let step = 0; step < 3; step++) {
    const stepLoss: Tensor = tidy(() => {
      opt.zeroGrad();
      const out: Tensor = model.forward(inputs);
      const lossT = out.crossEntropy(labels);
      lossT.backward();
      opt.step();
      return lossT;
    });
    sched.step();
    last = await stepLoss.item();
    stepLoss.dispose();
  }
  console.log(sgd, conv);

  // ---- custom ops --------------------------------------------------------------------------
  const silu = await skiff.customOp({
    name: 'silu',
    wgsl: 'fn compute(i: u32) -> f32 { let x = X0[i]; return x / (1.0 + exp(-x)); }',
    cpu: ({ inputs: [x] }) => x.data.map((v) => v / (1 + Math.exp(-v))),
    backward: ({ inputs: [x], grad }) => grad.mul(x.sigmoid()),
  });
  const mulAdd = await skiff.customOp({
    name: 'scaled',
    inputs: 2,
    scalars: 1,
    wgsl: 'fn compute(i: u32) -> f32 { return X0[bcast(0u, i)] * scalar(0u) + X1[bcast(1u, i)]; }',
    cpu: (c) => Array.from({ length: c.numel }, (_, i) => c.inputs[0].data[c.bcast(0, i)] * c.scalars[0] + c.inputs[1].data[c.bcast(1, i)]),
    shape: (shapes) => shapes[0],
  });
  const activated: Tensor = mulAdd(silu(tensor([1, 2])), tensor([3, 4]), [0.5]);
  // @ts-expect-error: wgsl is a string
  await skiff.customOp({ name: 'bad', wgsl: 3, cpu: () => [] });
  console.log(activated);

  // ---- profiling ---------------------------------------------------------------------------
  const prof = await skiff.profile(async () => activated.sum().item());
  const total: number = prof.result;
  const gpuMs: number | null = prof.ops[0].gpuMs;
  const trace: string = prof.chromeTrace;
  console.log(total, gpuMs, trace.length, prof.table, prof.dispatches, prof.timedDevices);

  // ---- memory -----------------------------------------------------------------------------
  const kept: Tensor = tidy(() => keep(tensor([1])).add(1));
  const fromAsync: { t: Tensor } = await tidy(async () => ({ t: tensor([2]) }));
  skiff.trackOrigins(true);
  const detailed = memory({ detailed: true });
  const madeAt: string = detailed.origins[0]?.stack.join(' <- ') ?? '';
  // @ts-expect-error: origins only with { detailed: true }
  memory().origins;
  skiff.trackOrigins(false);
  console.log(madeAt);
  const m = memory();
  const live: number = m.tensors;
  const bytesCpu: number = m.bytes.cpu + m.bytes.webgpu;
  const gpuLive: number | undefined = m.gpu?.liveBytes;
  console.log(live, bytesCpu, gpuLive, m.scopes);
  dispose([kept, fromAsync.t, a, b]);

  // ---- testing hooks (the test build only: undefined in the published package) ------------
  const testing = skiff.testing;
  // @ts-expect-error: testing is undefined in the published package
  testing.opNames();
  if (testing) {
    for (const cs of testing.registryCases()) {
      const name: string = cs.op;
      await testing.checkCase(name, cs.caseIndex, { gpu: false });
    }
    const coverage: Record<string, string> = testing.registryCoverage();
    console.log(coverage);
  }
  return last;
}
