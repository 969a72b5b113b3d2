// Tensor<D> carries its dtype: creation functions infer it, ops keep or
// change it as the runtime does (tests/browser/pages/surface-api.js checks the
// runtime side: the dtype each of these calls really returns), and data(),
// array() and item() are typed per dtype. Never run: checked by tsc with
// usage.ts. Each @ts-expect-error line must be an error (a loose type would
// make it an unused directive, which fails the check).
import * as skiff from 'skiff-ml';
import { SkiffError, tensor, zeros, full } from 'skiff-ml';
import type { DType, ErrorKind, Tensor } from 'skiff-ml';

export async function dtypes(): Promise<void> {
  // ---- creation infers D -----------------------------------------------------------
  const f32: Tensor<'float32'> = tensor([1, 2, 3]);
  const f64: Tensor<'float64'> = tensor(new Float64Array([1, 2]));
  const i32: Tensor<'int32'> = tensor(new Int32Array([0, 1]));
  const mask: Tensor<'bool'> = tensor([true, false]);
  const bytes: Tensor<'bool'> = tensor(new Uint8Array([1, 0]));
  const asked: Tensor<'int32'> = tensor([1, 2], { dtype: 'int32' });
  const cast: Tensor<'float32'> = tensor(new Int32Array([1]), { dtype: 'float32' });
  const empty: Tensor<'float32'> = tensor([]);
  const z: Tensor<'float32'> = zeros([2]);
  const zi: Tensor<'int32'> = zeros([2], { dtype: 'int32' });
  const zd: Tensor<'float32'> = zeros([2], { device: 'cpu' });
  const ft: Tensor<'bool'> = full([2], true);
  const fn: Tensor<'float32'> = full([2], 7);
  const fi: Tensor<'int32'> = full([2], 7, { dtype: 'int32' });
  const r: Tensor<'int32'> = skiff.randint(0, 3, [2]);
  const e: Tensor<'float64'> = skiff.eye(2, { dtype: 'float64' });
  const a: Tensor<'float32'> = skiff.arange(0, 4);
  const some: DType = 'int32';
  const unknown: Tensor = zeros([1], { dtype: some });
  // @ts-expect-error: a float32 tensor is no int32 tensor
  const wrong: Tensor<'int32'> = tensor([1, 2]);
  // @ts-expect-error: booleans make a bool tensor
  const notFloat: Tensor<'float32'> = full([2], false);
  // @ts-expect-error: randn samples are floating point
  skiff.randn([2], { dtype: 'int32' });
  // @ts-expect-error: arange has no bool dtype
  skiff.arange(0, 2, 1, { dtype: 'bool' });

  // sort and topk give [values, indices], as torch.sort and torch.topk.
  const [sorted, order]: [Tensor<'float64'>, Tensor<'int32'>] = f64.sort(0, true);
  const [top, where]: [Tensor<'float32'>, Tensor<'int32'>] = f32.topk(2);
  // @ts-expect-error: the indices are int32
  const [, floatOrder]: [Tensor<'float32'>, Tensor<'float32'>] = f32.sort();
  console.log(sorted, order, top, where, floatOrder);

  // ---- readback per dtype ----------------------------------------------------------
  const v: Float32Array = await f32.data();
  const d: Float64Array = await f64.data();
  const ix: Int32Array = await i32.data();
  const m: Uint8Array = await mask.data();
  const any: Float32Array | Float64Array | Int32Array | Uint8Array = await unknown.data();
  // @ts-expect-error: a float32 tensor's data is a Float32Array
  const bad: Int32Array = await f32.data();
  // @ts-expect-error: an unknown dtype's data may be any of the four
  const narrowed: Float32Array = await unknown.data();
  const nested = await f32.array();
  const nums: number | unknown[] = nested;
  // @ts-expect-error: a float32 tensor's elements are numbers, not booleans
  const flag: boolean = await f32.array();
  const bools = await mask.array();
  // @ts-expect-error: a bool tensor's elements are booleans
  const num: number = bools;
  const one: number = await f32.sum().item();
  const dt: 'float32' = f32.dtype;
  // @ts-expect-error: the dtype is known
  const dt2: 'int32' = f32.dtype;

  // ---- ops keep or change D as the runtime does -------------------------------------
  const kept: Tensor<'float32'> = f32.add(1).mul(f32).relu().sum().reshape([1]).t().softmax(-1);
  const views: Tensor<'int32'> = i32.reshape([2, 1]).permute([1, 0]).flatten().unsqueeze(0).squeeze().clone();
  const masks: Tensor<'bool'> = f32.gt(1);
  const eq: Tensor<'bool'> = i32.eq(0);
  const idx: Int32Array = await f32.reshape([1, 3]).argmax(1).data();
  const amin: Tensor<'int32'> = f64.argmin();
  const conv: Tensor<'float64'> = i32.toDtype('float64');
  const casts: [Tensor<'float32'>, Tensor<'float64'>, Tensor<'int32'>, Tensor<'bool'>] = [i32.float(), f32.double(), f32.int(), f32.bool()];
  const parts: Tensor<'float32'>[] = f32.split(1);
  const moved: Tensor<'float64'> = await f64.toAsync('cpu');
  const picked: Tensor<'float64'> = i32.embedding(zeros([4, 2], { dtype: 'float64' }));
  const g: Tensor<'float32'> | undefined = f32.grad;
  const filled: Tensor<'int32'> = i32.maskedFill(mask, 0);
  const pool: Tensor<'int32'> = zeros([1, 1, 2, 2]).maxPool2dIndices(2);
  f32.registerHook((grad) => {
    const same: Tensor<'float32'> = grad;
    return same.mul(2);
  });
  // @ts-expect-error: float32 + int32 is a dtype error (cast one with toDtype)
  f32.add(i32);
  // @ts-expect-error: a comparison gives a bool tensor
  const notMask: Tensor<'float32'> = f32.lt(0);
  // @ts-expect-error: argmax gives int32 indices
  const notIdx: Float32Array = await f32.argmax().data();
  console.log(f32, f64, i32, mask, bytes, asked, cast, empty, z, zi, zd, ft, fn, fi, r, e, a, wrong, notFloat);
  console.log(v, d, ix, m, any, bad, narrowed, nums, flag, num, one, dt, dt2, kept, views, masks, eq, idx, amin);
  console.log(conv, casts, parts, moved, picked, g, filled, pool, notMask, notIdx);
}

export function errors(err: unknown): string {
  // ---- SkiffError --------------------------------------------------------------------
  if (err instanceof SkiffError) {
    const kind: ErrorKind = err.kind;
    const op: string = err.op;
    const inner: string | undefined = err.innerOp;
    const name: 'SkiffError' = err.name;
    // @ts-expect-error: 'oom' is no ErrorKind (it is 'memory')
    const oom: boolean = err.kind === 'oom';
    switch (kind) {
      case 'device-lost':
        return `${op}: the GPU is gone ${inner ?? ''} ${name} ${oom}`;
      case 'memory':
        return 'smaller batch';
      default:
        return err.message;
    }
  }
  const made = new SkiffError('tensor: bad', { op: 'tensor', kind: 'argument' });
  // @ts-expect-error: kinds are checked
  new SkiffError('tensor: bad', { op: 'tensor', kind: 'oops' });
  return made.kind;
}
