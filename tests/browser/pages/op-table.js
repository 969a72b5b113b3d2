// Every registry case, called the way a JS user calls the op: the camelCase
// method or function with its options (`x.conv2d(w, null, { stride: 2 })`,
// `x.sum([0, -1], { keepdim: true })`, `skiff.where(c, a, b)`). The runner
// (surface.js) feeds each entry the inputs of `testing.caseData(op, k)` and
// compares its result with the output of the case's Rust closure, so the
// bindings' own argument parsing is tested, not only the Rust ops.
//
// Keyed by registry op, then by case name (unique per op; see
// `registry_problems`). The runner fails on a registry case without an entry
// here and on an entry naming a case the registry no longer has.
//
// No imports: the same file runs in Chromium and in Node.

const BROADCAST = ['same shapes', '[2, 3, 4] with [4]', '[4] with [2, 3, 4]', '[3, 1] with [1, 4]', '0-d with [2, 3]'];

/** The broadcast cases of a binary op (and `extra` ones), all `a.method(b)`. */
const binary = (method, extra = []) =>
  Object.fromEntries([...BROADCAST, ...extra].map((name) => [name, (s, [a, b]) => a[method](b)]));

/** The comparison cases: floats, floats with ties, i32 and bool operands. */
const COMPARE = ['floats, [3, 4] with [4]', 'floats with ties', 'i32, [3, 1] with [4]', 'bool'];

/** A registry op with one case named after it, run as `x.method()`. */
const unary = (op, method = op) => ({ [op]: { [op]: (s, [x]) => x[method]() } });

export const OP_TABLE = {
  // ---- unary.rs
  ...Object.assign(
    {},
    ...['neg', 'exp', 'log', 'sqrt', 'rsqrt', 'abs', 'sign', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'erf', 'silu', 'softplus'].map(
      (op) => unary(op),
    ),
  ),
  leaky_relu: { leaky_relu: (s, [x]) => x.leakyRelu(0.1) },
  gelu: { gelu: (s, [x]) => x.gelu({ approximate: 'tanh' }) },
  gelu_erf: { gelu_erf: (s, [x]) => x.gelu() },
  pow_scalar: {
    'pow_scalar 2.5': (s, [x]) => x.pow(2.5),
    'pow_scalar 3 (negative base)': (s, [x]) => x.pow(3),
    'pow_scalar -1.5': (s, [x]) => x.pow(-1.5),
  },
  add_scalar: { add_scalar: (s, [x]) => x.add(1.5) },
  mul_scalar: { mul_scalar: (s, [x]) => x.mul(-2.5) },
  clamp: {
    'clamp [-1, 1]': (s, [x]) => x.clamp(-1, 1),
    'clamp min only': (s, [x]) => x.clamp(0.3),
    'clamp max only': (s, [x]) => x.clamp(null, -0.3),
    'clamp min > max': (s, [x]) => x.clamp(1, -1),
    'clamp at the bounds': (s, [x]) => x.clamp(-1, 1),
    'clamp min NaN': (s, [x]) => x.clamp(NaN, 1),
    'clamp min only NaN': (s, [x]) => x.clamp(NaN),
    'clamp max only NaN': (s, [x]) => x.clamp(undefined, NaN),
  },
  to_dtype: {
    // The Rust case goes through float64; on WebGPU that is a dtype error (caseData says so).
    'f32 round trip through f64': (s, [x]) => x.toDtype('float64').mul(2).toDtype('float32'),
    'float to i32 truncates toward zero': (s, [x]) => x.toDtype('int32'),
    'float to bool is != 0': (s, [x]) => x.toDtype('bool'),
    'i32 to f32': (s, [x]) => x.toDtype('float32'),
    'i32 to bool': (s, [x]) => x.toDtype('bool'),
    'bool to f32 times x': (s, [m, x]) => m.toDtype(x.dtype).mul(x),
  },

  // ---- binary.rs
  add: binary('add'),
  sub: binary('sub'),
  mul: binary('mul'),
  div: binary('div'),
  pow: binary('pow'),
  maximum: binary('maximum', ['ties', 'ties broadcast']),
  minimum: binary('minimum', ['ties', 'ties broadcast']),
  relu_backward: {
    'same shapes': (s, [g, y]) => g.reluBackward(y),
    '[2, 3, 4] with [4]': (s, [g, y]) => g.reluBackward(y),
    '[3, 1] with [1, 4]': (s, [g, y]) => g.reluBackward(y),
    'outputs of a relu, zeros included': (s, [g, x]) => g.reluBackward(x.relu()),
  },

  // ---- compare.rs
  ...Object.assign(
    {},
    ...['eq', 'ne', 'lt', 'le', 'gt', 'ge'].map((op) => ({
      [op]: Object.fromEntries(COMPARE.map((name) => [name, (s, [a, b]) => a[op](b)])),
    })),
  ),
  where: {
    where: (s, [c, a, b]) => s.where(c, a, b),
    // the method form: input.where(condition, other)
    'where broadcast': (s, [c, a, b]) => a.where(c, b),
    'where with i32 branches': (s, [c, a, b]) => s.where(c, a, b),
  },

  // ---- reduce.rs
  sum: {
    'sum all': (s, [x]) => x.sum(),
    'sum axis 1': (s, [x]) => x.sum(1),
    'sum axes 0,2 keepdim': (s, [x]) => x.sum([0, -1], { keepdim: true }),
    'sum leading axis': (s, [x]) => x.sum([0]),
  },
  max: {
    'max axis 1': (s, [x]) => x.max(1),
    'max all keepdim': (s, [x]) => x.max(null, { keepdim: true }),
    'max axis 2 with ties': (s, [x]) => x.max(2),
  },
  min: {
    'min axes 0,2': (s, [x]) => x.min([0, 2]),
    'min all with ties': (s, [x]) => x.min(),
  },
  argmax: {
    'argmax axis 1': (s, [x]) => x.argmax(1),
    'argmax axis 0 keepdim, first of ties': (s, [x]) => x.argmax(0, { keepdim: true }),
    'argmax all, first of ties': (s, [x]) => x.argmax(),
  },
  argmin: {
    'argmin all': (s, [x]) => x.argmin(),
    'argmin last axis, first of ties': (s, [x]) => x.argmin(-1),
  },
  mean: {
    'mean axis -1': (s, [x]) => x.mean(-1),
    'mean all': (s, [x]) => x.mean(),
  },
  var: {
    'var axis 1 unbiased': (s, [x]) => x.var([1], { unbiased: true }),
    'var axes 0,2 biased keepdim': (s, [x]) => x.var([0, 2], { correction: 0, keepdim: true }),
  },
  std: { 'std axis 2': (s, [x]) => x.std(2) },
  logsumexp: {
    'logsumexp axis 1': (s, [x]) => x.logsumexp(1),
    'logsumexp all keepdim': (s, [x]) => x.logsumexp(undefined, { keepdim: true }),
  },
  sum_to: { 'sum_to [3,1]': (s, [x]) => x.sumTo([3, 1]) },

  // ---- matmul.rs
  matmul: {
    '2-D': (s, [a, b]) => a.matmul(b),
    'batched with broadcast': (s, [a, b]) => a.matmul(b),
    'broadcast batch dims': (s, [a, b]) => a.matmul(b),
    'vector @ matrix': (s, [a, b]) => a.matmul(b),
    'matrix @ vector': (s, [a, b]) => a.matmul(b),
    'vector @ vector': (s, [a, b]) => a.matmul(b),
    'transposed operands': (s, [a, b]) => a.t().matmul(b.transpose(0, 1)),
    chain: (s, [a, b, c]) => a.matmul(b).tanh().matmul(c),
  },

  // ---- einsum.rs
  einsum: {
    'einsum matrix product': (s, xs) => s.einsum('ij,jk->ik', xs),
    'einsum batched product': (s, xs) => s.einsum('bij,bjk->bik', xs),
    'einsum attention scores': (s, xs) => s.einsum('bhqd,bhkd->bhqk', xs),
    'einsum dot product': (s, xs) => s.einsum('i,i->', xs),
    'einsum transpose': (s, xs) => s.einsum('ij->ji', xs),
    'einsum diagonal and trace': (s, [a, b]) => s.einsum('ii->i', [a]).sum().add(s.einsum('jj', [b])),
    'einsum implicit output': (s, xs) => s.einsum('ij,jk', xs),
    'einsum sums a letter of one operand': (s, xs) => s.einsum('ijk,kl->il', xs),
    'einsum outer product': (s, xs) => s.einsum('i,j->ij', xs),
    'einsum broadcast ellipsis': (s, xs) => s.einsum('...ij,...jk->...ik', xs),
    'einsum sums broadcast axes': (s, xs) => s.einsum('...i,...i->', xs),
    'einsum three operands': (s, xs) => s.einsum(' ab, bc ,cd -> ad', xs),
  },

  // ---- movement.rs
  reshape: {
    reshape: (s, [x]) => x.reshape([4, -1]),
    'reshape of a transposed view': (s, [x]) => x.t().reshape([2, 6]),
    'reshape i32': (s, [x]) => x.reshape([-1, 6]),
    'reshape an empty tensor': (s, [x]) => x.reshape([0, 6]),
    'reshape a 0-d tensor': (s, [x]) => x.reshape([1, -1, 1]),
  },
  permute: {
    permute: (s, [x]) => x.permute([2, 0, 1]).mul(1),
    transpose: (s, [x]) => x.transpose(0, 1),
    'permute a mask': (s, [x]) => x.permute([1, 2, 0]).contiguous(),
  },
  expand: {
    expand: (s, [x]) => x.expand([2, 3, 4]),
    broadcast_to: (s, [x]) => x.broadcastTo([3, 4]),
    'expand i32': (s, [x]) => x.expand([3, -1]).contiguous(),
    'expand to an empty axis': (s, [x]) => x.expand([0, 4]),
  },
  slice: {
    'slice step 2': (s, [x]) => x.slice(0, 1, 5, 2),
    narrow: (s, [x]) => x.narrow(1, 2, 3),
    'slice negative bounds': (s, [x]) => x.slice(-1, -4, -1),
    'slice i32 to nothing': (s, [x]) => x.slice(1, 4, 4).contiguous(),
  },
  // slice's gradient: the [2, n] gradient of rows 1 and 3 of a [5, n] tensor.
  slice_backward: {
    slice_backward: (s, [g]) => {
      const z = s.zeros([5, g.shape[1]], { device: g.device }).requiresGrad_();
      return s.grad(z.slice(0, 1, 5, 2), z, { gradOutputs: g })[0];
    },
  },
  contiguous: { 'contiguous of a permuted view': (s, [x]) => x.permute([1, 2, 0]).contiguous() },
  squeeze_unsqueeze_flatten: {
    squeeze: (s, [x]) => x.squeeze(1),
    'squeeze all': (s, [x]) => x.squeeze(),
    unsqueeze: (s, [x]) => x.unsqueeze(-1),
    flatten: (s, [x]) => x.flatten(1),
  },
  to_device: { 'to the same device': (s, [x]) => x.to(x.device).mul(2) },

  // ---- join.rs
  concat: {
    'concat axis 1': (s, [a, b]) => s.cat([a, b], 1),
    'concat i32 with an empty piece': (s, [a, b]) => s.cat([a, b], 0),
    stack: (s, [a, b]) => s.stack([a, b]),
    'split then concat': (s, [x]) => {
      const parts = x.split(2);
      return s.cat([parts[2], parts[0].mul(2)]);
    },
    chunk: (s, [x]) => {
      const parts = x.chunk(3, 1);
      return parts[1].mul(parts[2]);
    },
  },
  // F.pad order: the last axis first ([0, 1] on axis 2, then [1, 2] on axis 1).
  pad: { 'pad last two axes': (s, [x]) => x.pad([0, 1, 1, 2], 0.5) },

  // ---- index.rs
  index_select: {
    'index_select axis 0 with repeats': (s, [x, i]) => x.indexSelect(0, i),
    'index_select last axis': (s, [x, i]) => x.indexSelect(-1, i),
    'index_select of a transposed view': (s, [x, i]) => x.t().indexSelect(1, i),
  },
  index_add: {
    'index_add axis 0 with repeats': (s, [x, i, src]) => x.indexAdd(0, i, src),
    'index_add middle axis': (s, [x, i, src]) => x.indexAdd(1, i, src, { alpha: 1 }),
  },
  gather: {
    'gather axis 1': (s, [x, i]) => x.gather(1, i),
    'gather axis 0 with repeats': (s, [x, i]) => x.gather(0, i),
    'gather of a permuted view': (s, [x, i]) => x.permute([2, 0, 1]).gather(-1, i),
  },
  scatter_add: {
    'scatter_add axis 0 with repeats': (s, [x, i, src]) => x.scatterAdd(0, i, src),
    'scatter_add src larger than index': (s, [x, i, src]) => x.scatterAdd(1, i, src),
  },

  // ---- scatter.rs
  scatter: {
    'scatter axis 0 with duplicates': (s, [x, i, src]) => x.scatter(0, i, src),
    'scatter middle axis, src larger': (s, [x, i, src]) => x.scatter(1, i, src),
    'scatter int32': (s, [x, i, src]) => x.scatter(-1, i, src),
    'scatter bool': (s, [x, i, src]) => x.scatter(0, i, src),
  },
  scatter_reduce: {
    'scatter_reduce sum with self': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'sum'),
    'scatter_reduce sum': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'sum', { includeSelf: false }),
    'scatter_reduce prod with self': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'prod', { includeSelf: true }),
    'scatter_reduce prod': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'prod', { includeSelf: false }),
    'scatter_reduce mean with self': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'mean'),
    'scatter_reduce mean': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'mean', { includeSelf: false }),
    'scatter_reduce amax with self': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'amax'),
    'scatter_reduce amax': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'amax', { includeSelf: false }),
    'scatter_reduce amin with self': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'amin'),
    'scatter_reduce amin': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'amin', { includeSelf: false }),
    'scatter_reduce amax tie': (s, [x, i, src]) => x.scatterReduce(0, i, src, 'amax', { includeSelf: false }),
    'scatter_reduce prod along the last axis': (s, [x, i, src]) =>
      x.scatterReduce(-1, i, src, 'prod', { includeSelf: false }),
  },
  index_put: {
    'index_put accumulate, two indices with duplicates': (s, [x, i, j, v]) => x.indexPut([i, j], v, true),
    'index_put overwrite, broadcast indices and values': (s, [x, i, j, v]) => x.indexPut([i, j], v, false),
    'index_put overwrite rows with duplicates': (s, [x, i, v]) => x.indexPut([i], v),
    'index_put int32 accumulate': (s, [x, i, v]) => x.indexPut([i], v, true),
    'index_put accumulate, negative indices': (s, [x, i, v]) => x.indexPut([i], v, true),
    'index_put overwrite, negative indices': (s, [x, i, j, v]) => x.indexPut([i, j], v, false),
  },

  // ---- conv.rs
  unfold2d: {
    'unfold 3x3': (s, [x]) => s.unfold(x, 3),
    'unfold 2x3 stride 2 padding 1': (s, [x]) => s.unfold(x, [2, 3], { stride: 2, padding: 1 }),
    'unfold dilation 2 padding [2, 1]': (s, [x]) => s.unfold(x, 2, { stride: [1, 2], padding: [2, 1], dilation: 2 }),
    'unfold of a permuted view': (s, [x]) => s.unfold(x.permute([0, 3, 1, 2]), [2, 2], { padding: [0, 1] }),
  },
  fold2d: {
    'fold 2x2 overlapping': (s, [x]) => s.fold(x, 5, 2),
    'fold 3x3 stride 2 padding 1': (s, [x]) => s.fold(x, [5, 5], 3, { stride: 2, padding: 1 }),
    'fold dilation 2': (s, [x]) => s.fold(x, [5, 4], [2, 2], { dilation: 2 }),
  },
  conv2d: {
    '3x3 with bias': (s, [x, w, b]) => x.conv2d(w, b),
    'stride 2 padding 1 no bias': (s, [x, w]) => x.conv2d(w, null, { stride: 2, padding: 1 }),
    'dilation 2 padding 2': (s, [x, w, b]) => x.conv2d(w, b, { padding: [2, 2], dilation: 2 }),
    'groups 2 with bias': (s, [x, w, b]) => x.conv2d(w, b, { padding: 1, groups: 2 }),
    'rectangular kernel, mixed stride and padding': (s, [x, w]) => x.conv2d(w, undefined, { stride: [2, 1], padding: [1, 0] }),
  },
  max_pool2d: {
    '2x2 stride 2': (s, [x]) => x.maxPool2d(2),
    '3x3 stride 1 overlapping': (s, [x]) => x.maxPool2d(3, { stride: 1 }),
    '3x3 stride 2 padding 1': (s, [x]) => x.maxPool2d([3, 3], { stride: 2, padding: 1 }),
    '2x3 stride [1, 2] padding [1, 0]': (s, [x]) => x.maxPool2d([2, 3], { stride: [1, 2], padding: [1, 0] }),
    '3x3 stride 1 with ties': (s, [x]) => x.maxPool2d(3, { stride: 1 }),
  },
  max_pool2d_indices: {
    '3x3 stride 2 padding 1': (s, [x]) => x.maxPool2dIndices(3, { stride: 2, padding: 1 }),
    '2x2 stride 1, the first of ties': (s, [x]) => x.maxPool2dIndices(2, { stride: 1 }),
  },
  avg_pool2d: {
    '2x2 stride 2': (s, [x]) => x.avgPool2d(2),
    '3x3 stride 2 padding 1': (s, [x]) => x.avgPool2d(3, { stride: [2, 2], padding: 1 }),
    '3x2 stride 1 padding [1, 1]': (s, [x]) => x.avgPool2d([3, 2], { stride: 1, padding: [1, 1] }),
  },

  // ---- composite.rs
  softmax: {
    'softmax last axis': (s, [x]) => x.softmax(-1),
    'softmax axis 0': (s, [x]) => x.softmax(0),
  },
  log_softmax: {
    'log_softmax last axis': (s, [x]) => x.logSoftmax(-1),
    'log_softmax axis 1 of 3-D': (s, [x]) => x.logSoftmax(1),
  },
  cross_entropy: {
    'cross_entropy mean': (s, [x, t]) => x.crossEntropy(t),
    'cross_entropy sum smoothed': (s, [x, t]) => x.crossEntropy(t, { reduction: 'sum', labelSmoothing: 0.1 }),
    'cross_entropy none': (s, [x, t]) => x.crossEntropy(t, { reduction: 'none' }),
  },
  nll_loss: {
    'nll_loss of log_softmax mean': (s, [x, t]) => x.logSoftmax(1).nllLoss(t),
    'nll_loss none': (s, [x, t]) => x.nllLoss(t, { reduction: 'none' }),
  },
  mse_loss: {
    'mse_loss mean': (s, [x, t]) => x.mseLoss(t, { reduction: 'mean' }),
    'mse_loss sum': (s, [x, t]) => x.mseLoss(t, { reduction: 'sum' }),
    'mse_loss none': (s, [x, t]) => x.mseLoss(t, { reduction: 'none' }),
  },
  l1_loss: {
    'l1_loss mean': (s, [x, t]) => x.l1Loss(t),
    'l1_loss none': (s, [x, t]) => x.l1Loss(t, { reduction: 'none' }),
  },
  binary_cross_entropy_with_logits: {
    'bce_with_logits mean': (s, [x, t]) => x.binaryCrossEntropyWithLogits(t),
    'bce_with_logits none': (s, [x, t]) => x.binaryCrossEntropyWithLogits(t, { reduction: 'none' }),
  },
  layer_norm: {
    'layer_norm affine': (s, [x, w, b]) => x.layerNorm(4, w, b, { eps: 1e-5 }),
    'layer_norm over two dims, no affine': (s, [x]) => x.layerNorm([3, 4]),
  },
  dropout: {
    // The Rust case seeds with 3 before drawing its mask; so does the JS call.
    'dropout train p=0.3': (s, [x]) => {
      s.manualSeed(3);
      return x.dropout(0.3, { training: true });
    },
    'dropout eval': (s, [x]) => x.dropout(0.5, { training: false }),
  },
  // F.embedding(input, weight): the indices' method, with the table as argument.
  embedding: { 'embedding 2-D indices with repeats': (s, [w, i]) => i.embedding(w) },
  prelu: {
    'prelu per channel': (s, [x, w]) => x.prelu(w),
    'prelu one slope': (s, [x, w]) => x.prelu(w),
  },

  // ---- the activations, rearrangements, tests of values and norms of issue 48
  ...Object.assign({}, ...['selu', 'mish', 'hardswish', 'hardsigmoid'].map((op) => unary(op))),
  elu: { elu: (s, [x]) => x.elu(0.7) },
  isnan: {
    'isnan of quotients': (s, [a, b]) => a.div(b).isnan(),
    'isnan of int32': (s, [x]) => x.isnan(),
  },
  isinf: { 'isinf of quotients': (s, [a, b]) => a.div(b).isinf() },
  isfinite: {
    'isfinite of quotients': (s, [a, b]) => a.div(b).isfinite(),
    'isfinite of bool': (s, [x]) => x.isfinite(),
  },
  any: {
    'any axis 1 of floats with zeros': (s, [x]) => x.any(1),
    'any of a mask, all axes keepdim': (s, [x]) => x.any(null, { keepdim: true }),
  },
  all: {
    'all axis 0 of int32': (s, [x]) => x.all(0),
    'all axes 0, 2 of a mask': (s, [x]) => x.all([0, 2], { keepdim: true }),
  },
  masked_fill: { 'masked_fill with a broadcast mask': (s, [x, m]) => x.maskedFill(m, -1.5) },
  one_hot: { 'one_hot of a [3, 2] index': (s, [i]) => i.oneHot(4) },
  clamp_tensor: {
    'clamp by tensors': (s, [x, lo, hi]) => x.clamp(lo, hi),
    'clamp by a min tensor only': (s, [x, lo]) => x.clamp(lo),
  },
  amax: {
    'amax axis 1': (s, [x]) => x.amax(1),
    'amax axis 2 with ties': (s, [x]) => x.amax(2, { keepdim: true }),
  },
  amin: {
    'amin axes 0, 2': (s, [x]) => x.amin([0, 2]),
    'amin all with ties': (s, [x]) => x.amin(),
  },
  norm: {
    'norm 2 of all': (s, [x]) => x.norm(),
    'norm 1 axis 1': (s, [x]) => x.norm(1, 1),
    'norm inf axis 0': (s, [x]) => x.add(1.5).norm(Infinity, 0),
    'norm -inf axis 1': (s, [x]) => x.add(-1.5).norm(-Infinity, 1, { keepdim: true }),
    'norm 3 axes 0, 1 keepdim': (s, [x]) => x.norm(3, [0, 1], { keepdim: true }),
    'norm 0 counts nonzeros': (s, [x]) => x.norm(0, 1),
  },
  flip: {
    'flip axes 0 and 2': (s, [x]) => x.flip([0, -1]),
    'flip a 1-D tensor': (s, [x]) => x.flip(0),
    'flip no axes': (s, [x]) => x.flip([]),
  },
  roll: {
    'roll two axes': (s, [x]) => x.roll([1, -2], [0, 2]),
    'roll flattened': (s, [x]) => x.roll(3),
    'roll by more than the size': (s, [x]) => x.roll(-9, 0),
  },
  repeat: {
    'repeat with a new leading axis': (s, [x]) => x.repeat([2, 1, 3]),
    'repeat a scalar': (s, [x]) => x.repeat([2, 3]),
    'repeat zero times': (s, [x]) => x.repeat([0, 2]),
  },
  tile: { 'tile the last axis': (s, [x]) => x.tile([2]) },
  tril: {
    'tril below the diagonal': (s, [x]) => x.tril(-1),
    'tril batched, main diagonal': (s, [x]) => x.tril(),
  },
  triu: {
    'triu above the diagonal, batched': (s, [x]) => x.triu(1),
    'triu tall': (s, [x]) => x.triu(-2),
  },
  pixel_shuffle: { 'pixel_shuffle by 2': (s, [x]) => x.pixelShuffle(2) },
  pixel_unshuffle: { 'pixel_unshuffle by 2': (s, [x]) => x.pixelUnshuffle(2) },
  group_norm: {
    'group_norm 2 groups, affine': (s, [x, w, b]) => x.groupNorm(2, w, b),
    'group_norm of images, no affine': (s, [x]) => x.groupNorm(3, null, null, { eps: 1e-3 }),
  },
  instance_norm: {
    'instance_norm of images, affine': (s, [x, w, b]) => x.instanceNorm(w, b),
    'instance_norm of sequences': (s, [x]) => x.instanceNorm(),
  },
  rms_norm: {
    'rms_norm with weight': (s, [x, w]) => x.rmsNorm(4, w, { eps: 1e-6 }),
    'rms_norm over two dims, default eps': (s, [x]) => x.rmsNorm([3, 4]),
  },
  conv1d: {
    'conv1d with bias, padded': (s, [x, w, b]) => x.conv1d(w, b, { padding: 1 }),
    'conv1d strided, dilated, grouped': (s, [x, w]) => x.conv1d(w, null, { stride: 2, dilation: 2, groups: 2 }),
  },
  conv_transpose2d: {
    'conv_transpose2d stride 2 with bias': (s, [x, w, b]) => x.convTranspose2d(w, b, { stride: 2, padding: 1, outputPadding: [1, 0] }),
    'conv_transpose2d grouped, dilated': (s, [x, w]) =>
      x.convTranspose2d(w, null, { stride: [1, 2], outputPadding: [0, 1], groups: 2, dilation: [2, 1] }),
  },
  interpolate: {
    'nearest to a size': (s, [x]) => x.interpolate([5, 6]),
    'nearest by a scale factor': (s, [x]) => x.interpolate(null, 1.5),
    bilinear: (s, [x]) => x.interpolate([5, 7], null, { mode: 'bilinear' }),
    'bilinear, align_corners': (s, [x]) => x.interpolate(null, 2, { mode: 'bilinear', alignCorners: true }),
    'linear downsampling': (s, [x]) => x.interpolate(3, null, { mode: 'linear' }),
  },
  scaled_dot_product_attention: {
    attention: (s, [q, k, v]) => s.scaledDotProductAttention(q, k, v),
    'attention, causal': (s, [q, k, v]) => s.scaledDotProductAttention(q, k, v, { isCausal: true }),
    'attention, bool mask': (s, [q, k, v, mask]) => s.scaledDotProductAttention(q, k, v, { attnMask: mask }),
    'attention, float mask': (s, [q, k, v, bias]) => s.scaledDotProductAttention(q, k, v, { attnMask: bias, dropoutP: 0 }),
  },

  // ---- scans and sorting of issue 48
  cumsum: {
    'cumsum axis 1': (s, [x]) => x.cumsum(1),
    'cumsum first axis by a negative dim': (s, [x]) => x.cumsum(-3),
    'cumsum last axis': (s, [x]) => x.cumsum(-1),
    'cumsum a row of 300': (s, [x]) => x.cumsum(1),
  },
  cumprod: {
    'cumprod axis 1': (s, [x]) => x.cumprod(1),
    'cumprod last axis with zeros': (s, [x]) => x.cumprod(-1),
    'cumprod first axis with zeros': (s, [x]) => x.cumprod(0),
    'cumprod a row of 300': (s, [x]) => x.cumprod(1),
  },
  prod: {
    'prod axis 1': (s, [x]) => x.prod(1),
    'prod all': (s, [x]) => x.prod(),
    'prod axes 0,2 keepdim with zeros': (s, [x]) => x.prod([0, -1], { keepdim: true }),
    'prod last axis with zeros': (s, [x]) => x.prod(-1),
  },
  argsort: {
    'argsort last axis, ties stable': (s, [x]) => x.argsort(),
    'argsort axis 0 descending, ties stable': (s, [x]) => x.argsort(0, true),
    'argsort with NaN and -inf': (s, [x, y]) => x.div(y).argsort(1),
    'argsort descending with NaN': (s, [x, y]) => x.div(y).argsort(-1, true, { stable: true }),
    'argsort rows of 1': (s, [x]) => x.argsort(1),
    'argsort rows of 1500': (s, [x]) => x.argsort(1, true),
    'argsort int32, ties stable': (s, [x]) => x.argsort(),
    'argsort int32 descending, rows of 700': (s, [x]) => x.argsort(1, true),
    'argsort bool': (s, [x]) => x.toDtype('bool').argsort(1),
  },
  // sort and topk give [values, indices]; the registry's cases check the
  // values, and the indices where a case says so.
  sort: {
    'sort last axis': (s, [x]) => x.sort(-1, false, { stable: true })[0],
    'sort axis 1 descending': (s, [x]) => x.sort(1, true)[0],
    'sort with ties': (s, [x]) => x.sort(1)[0],
    'sort with NaN': (s, [x, y]) => x.div(y).sort(-1, true, { stable: true })[0],
    'sort int32 descending': (s, [x]) => x.sort(1, true)[0],
  },
  topk: {
    'topk 2 largest of the last axis': (s, [x]) => x.topk(2)[0],
    'topk 3 smallest along axis 0': (s, [x]) => x.topk(3, 0, false)[0],
    'topk indices with ties': (s, [x]) => x.topk(4, 1)[1],
    'topk int32 indices with ties': (s, [x]) => x.topk(3, -1)[1],
    'topk of a scalar': (s, [x]) => x.topk(1, 0, true, true)[0],
  },
};
