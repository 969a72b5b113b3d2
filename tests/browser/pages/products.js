// Matrix products on the cpu backend checked against an f64 triple loop, in
// whichever .wasm build init() loaded (tests/browser/wasm-simd.test.mjs runs
// this in Chromium and in Node). The shapes are big enough for skiff's own
// wasm GEMM (from 16 rows and 64 columns: src/backend/cpu/matmul.rs) and
// cross its tiles (3 x 12) and blocks (72 rows, 256 deep, 2040 columns), with
// operands stored transposed and batch dims broadcast.

/** An irregular value for element `i` of operand `seed`. */
const value = (i, seed) => (((i * 37 + seed * 11) % 29) - 14) / 9;

/** [batch, rows, cols] of a product operand's shape. */
const split = (shape) => [shape.slice(0, -2).reduce((x, y) => x * y, 1), shape.at(-2), shape.at(-1)];

/**
 * A float32 tensor of `shape` with the values `value(i, seed)` in row-major
 * order; `transposed`: stored with its last two axes swapped, then permuted
 * back (a strided view, as backward rules make).
 */
function operand(skiff, shape, seed, transposed) {
  const [, rows, cols] = split(shape);
  const values = Float32Array.from({ length: shape.reduce((x, y) => x * y, 1) }, (_, i) => value(i, seed));
  if (!transposed) return { values, tensor: skiff.tensor(values, { shape, device: 'cpu' }) };
  const stored = new Float32Array(values.length);
  for (let q = 0; q < values.length; q += rows * cols) {
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) stored[q + c * rows + r] = values[q + r * cols + c];
  }
  const swapped = [...shape.slice(0, -2), cols, rows];
  const axes = [...shape.slice(0, -2).keys(), shape.length - 1, shape.length - 2];
  return { values, tensor: skiff.tensor(stored, { shape: swapped, device: 'cpu' }).permute(axes) };
}

/** [a shape, b shape, a stored transposed, b stored transposed] */
const CASES = [
  [[64, 784], [784, 256], false, false], // the MNIST MLP's first layer
  [[17, 5], [5, 100], false, false], // edge tiles in both directions, k under a block
  [[130, 300], [300, 2050], false, false], // two row blocks, two depth blocks, two column blocks
  [[64, 300], [300, 100], true, false],
  [[64, 300], [300, 100], false, true],
  [[40, 33], [33, 70], true, true],
  [[2, 1, 20, 70], [1, 3, 70, 65], false, false], // broadcast batch dims
];

/**
 * Runs every case; returns one { a, b, ta, tb, worst } per case, where
 * `worst` is the largest error over its rounding bound (k u sum |a b|,
 * Higham's bound for any summation order, with or without fused
 * multiply-add): at most 1 when the product is right.
 */
export async function checkProducts(skiff) {
  const results = [];
  for (const [sa, sb, ta, tb] of CASES) {
    const a = operand(skiff, sa, 1, ta);
    const b = operand(skiff, sb, 2, tb);
    const product = a.tensor.matmul(b.tensor);
    const got = await product.data();
    for (const t of [a.tensor, b.tensor, product]) t.dispose();
    const [, m, k] = split(sa);
    const [, , n] = split(sb);
    // Batch index of the output -> batch index of each operand (broadcast dims repeat).
    const outBatch = sa.slice(0, -2).map((d, i) => Math.max(d, sb[i]));
    const batchOf = (shape, q) => {
      let index = 0;
      let rest = q;
      for (let d = outBatch.length - 1, stride = 1; d >= 0; d--) {
        const at = rest % outBatch[d];
        rest = Math.floor(rest / outBatch[d]);
        if (shape[d] !== 1) index += at * stride;
        stride *= shape[d];
      }
      return index;
    };
    let worst = 0;
    const batches = outBatch.reduce((x, y) => x * y, 1);
    for (let q = 0; q < batches; q++) {
      const oa = batchOf(sa, q) * m * k;
      const ob = batchOf(sb, q) * k * n;
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          let want = 0;
          let size = 0;
          for (let p = 0; p < k; p++) {
            const term = a.values[oa + i * k + p] * b.values[ob + p * n + j];
            want += term;
            size += Math.abs(term);
          }
          const bound = k * 2 ** -23 * size + 1e-30;
          worst = Math.max(worst, Math.abs(got[(q * m + i) * n + j] - want) / bound);
        }
      }
    }
    results.push({ a: sa, b: sb, ta, tb, worst });
  }
  return results;
}
