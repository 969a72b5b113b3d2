// The PyTorch fixture tests/fixtures/torch/layers48.safetensors through the
// JS surface: every entry's output and gradients against PyTorch's, as
// tests/nn/torch_fixtures.rs checks them natively (that file is the spec: the
// call per entry, the tolerances, the hardsigmoid exception). Float64 to
// 1e-12 on the cpu (Node, Chromium's cpu pass), float32 to 1e-5 on WebGPU,
// both as |got - want| <= tol (1 + |want|). Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

const FIXTURE = new URL('../../fixtures/torch/layers48.safetensors', import.meta.url);

// JS modules have no toDtype: their parameters are always float32, so a layer
// with parameters runs in float32 at this tolerance even on the cpu (its f64
// values are checked through the op, PARAM_OPS).
const F32_TOL = 1e-5;

async function fixtureBytes() {
  // Node's fetch takes no file: URLs; the browser passes serve the repo root.
  if (FIXTURE.protocol === 'file:') return (await import('node:fs/promises')).readFile(FIXTURE);
  const res = await fetch(FIXTURE);
  if (!res.ok) throw new Error(`fetching ${FIXTURE}: ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// [entry, layer]: the layers, parameters loaded from `<entry>.p_<name>`.
const LAYERS = [
  ['elu', (nn) => new nn.ELU({ alpha: 0.7 })],
  ['selu', (nn) => new nn.SELU()],
  ['mish', (nn) => new nn.Mish()],
  ['hardswish', (nn) => new nn.Hardswish()],
  ['hardsigmoid', (nn) => new nn.Hardsigmoid()],
  ['prelu', (nn) => new nn.PReLU({ numParameters: 3 })],
  ['prelu1', (nn) => new nn.PReLU()],
  ['pixel_shuffle', (nn) => new nn.PixelShuffle(2)],
  ['pixel_unshuffle', (nn) => new nn.PixelUnshuffle(2)],
  ['zeropad2d', (nn) => new nn.ZeroPad2d([1, 2, 0, 3])],
  ['unflatten', (nn) => new nn.Unflatten(1, [2, 3])],
  ['group_norm', (nn) => new nn.GroupNorm(2, 4)],
  ['instance_norm2d', (nn) => new nn.InstanceNorm2d(3, { affine: true })],
  ['instance_norm1d', (nn) => new nn.InstanceNorm1d(3)],
  ['rms_norm', (nn) => new nn.RMSNorm(4)],
  ['conv1d', (nn) => new nn.Conv1d(4, 2, 3, { stride: 2, padding: 1, groups: 2 })],
  ['conv_transpose2d', (nn) => new nn.ConvTranspose2d(3, 2, 3, { stride: 2, padding: 1, outputPadding: 1 })],
  [
    'conv_transpose2d_groups',
    (nn) => new nn.ConvTranspose2d(4, 2, [2, 3], { stride: [1, 2], outputPadding: [0, 1], groups: 2, dilation: [2, 1], bias: false }),
  ],
  ['upsample_nearest', (nn) => new nn.Upsample({ size: [5, 6] })],
  ['upsample_nearest_scale', (nn) => new nn.Upsample({ scaleFactor: 1.5 })],
  ['upsample_bilinear', (nn) => new nn.Upsample({ size: [5, 7], mode: 'bilinear' })],
  ['upsample_bilinear_corners', (nn) => new nn.Upsample({ scaleFactor: 2, mode: 'bilinear', alignCorners: true })],
  ['upsample_bilinear_scale', (nn) => new nn.Upsample({ scaleFactor: 1.7, mode: 'bilinear' })],
  ['upsample_linear', (nn) => new nn.Upsample({ size: 3, mode: 'linear' })],
];

// [entry, differentiable inputs (x first), call]: the ops, `fx` for constants.
const OPS = [
  ['tril', ['x'], ([x]) => x.tril(-1)],
  ['triu', ['x'], ([x]) => x.triu(1)],
  ['flip', ['x'], ([x]) => x.flip([0, 2])],
  ['roll', ['x'], ([x]) => x.roll([1, -2], [0, 2])],
  ['roll_flat', ['x'], ([x]) => x.roll(3)],
  ['repeat', ['x'], ([x]) => x.repeat([2, 1, 3])],
  ['tile', ['x'], ([x]) => x.tile([2])],
  ['norm2', ['x'], ([x]) => x.norm(2)],
  ['norm1_dim1', ['x'], ([x]) => x.norm(1, 1)],
  ['norminf_dim0', ['x'], ([x]) => x.norm(Infinity, 0)],
  ['norm3_keepdim', ['x'], ([x]) => x.norm(3, [0, 1], { keepdim: true })],
  ['amax_ties', ['x'], ([x]) => x.amax(1)],
  ['amin_ties', ['x'], ([x]) => x.amin(1, { keepdim: true })],
  ['clamp_tensor', ['x', 'lo', 'hi'], ([x, lo, hi]) => x.clamp(lo, hi)],
  ['masked_fill', ['x'], ([x], fx) => x.maskedFill(fx.get('masked_fill.mask'), -1.5)],
  ['cumsum', ['x'], ([x]) => x.cumsum(1)],
  ['cumsum_neg_dim', ['x'], ([x]) => x.cumsum(-3)],
  ['cumprod_zeros', ['x'], ([x]) => x.cumprod(1)],
  ['cumprod_dim0', ['x'], ([x]) => x.cumprod(0)],
  ['prod_zeros', ['x'], ([x]) => x.prod(1)],
  ['prod_zeros_keepdim', ['x'], ([x]) => x.prod(0, { keepdim: true })],
  ['prod_all', ['x'], ([x]) => x.prod()],
  ['sort_descending', ['x'], ([x]) => x.sort(0, true)[0]],
  ['topk', ['x'], ([x]) => x.topk(3, 1)[0]],
  ['topk_smallest', ['x'], ([x]) => x.topk(2, 0, false)[0]],
  ['scatter', ['x', 'src'], ([x, src], fx) => x.scatter(0, fx.get('scatter.idx'), src)],
  ...['sum', 'prod', 'mean', 'amax', 'amin'].flatMap((reduce) =>
    [true, false].map((includeSelf) => {
      const e = `scatter_reduce_${reduce}_${includeSelf ? 'self' : 'noself'}`;
      return [e, ['x', 'src'], ([x, src], fx) => x.scatterReduce(0, fx.get(`${e}.idx`), src, reduce, { includeSelf })];
    }),
  ),
  ...[['index_put_acc', true], ['index_put_set', false], ['index_put_neg', true]].map(([e, accumulate]) => [
    e,
    ['x', 'v'],
    ([x, v], fx) => x.indexPut([fx.get(`${e}.i0`), fx.get(`${e}.i1`)], v, accumulate),
  ]),
];

// The PReLU entries again through Tensor.prelu, in the fixture's dtype: the
// slope is a leaf here, so its gradient is the fixture's g_weight.
const PARAM_OPS = [
  ['prelu', ['x', 'p_weight'], ([x, w]) => x.prelu(w)],
  ['prelu1', ['x', 'p_weight'], ([x, w]) => x.prelu(w)],
  ['group_norm', ['x', 'p_weight', 'p_bias'], ([x, w, b]) => x.groupNorm(2, w, b)],
  ['instance_norm2d', ['x', 'p_weight', 'p_bias'], ([x, w, b]) => x.instanceNorm(w, b)],
  ['rms_norm', ['x', 'p_weight'], ([x, w]) => x.rmsNorm(4, w)],
  ['conv1d', ['x', 'p_weight', 'p_bias'], ([x, w, b]) => x.conv1d(w, b, { stride: 2, padding: 1, groups: 2 })],
  ['conv_transpose2d', ['x', 'p_weight', 'p_bias'], ([x, w, b]) => x.convTranspose2d(w, b, { stride: 2, padding: 1, outputPadding: 1 })],
  [
    'conv_transpose2d_groups',
    ['x', 'p_weight'],
    ([x, w]) => x.convTranspose2d(w, null, { stride: [1, 2], outputPadding: [0, 1], groups: 2, dilation: [2, 1] }),
  ],
];

// [entry, inputs, call]: bool and int32 outputs, compared exactly.
const EXACT = [
  ['one_hot', ['idx'], ([i]) => i.oneHot(4)],
  ['isnan', ['x'], ([x]) => x.isnan()],
  ['isinf', ['x'], ([x]) => x.isinf()],
  ['isfinite', ['x'], ([x]) => x.isfinite()],
  ['any_dim1', ['x'], ([x]) => x.any(1)],
  ['all_dim0', ['x'], ([x]) => x.all(0)],
  ['argsort_ties', ['x'], ([x]) => x.argsort(0, true, { stable: true })],
];

/**
 * The fixture's tensors on `device` with floats as `dtype`; `read` collects
 * every name asked for, so a fixture tensor no check reads is reported.
 */
function view(all, device, dtype, read) {
  const get = (name) => {
    const t = all[name];
    if (!t) throw new Error(`the fixture lacks ${name}`);
    read.add(name);
    // Convert on the cpu: WebGPU holds no float64.
    return (t.dtype.startsWith('float') ? t.toDtype(dtype) : t).to(device);
  };
  return { dtype, get, leaf: (name) => get(name).detach().requiresGrad_() };
}

/**
 * Entry `e`: y = f(leaves of `inputs`) against `<e>.y` (shape, values); then
 * backward of sum(y * gy), and each leaf's gradient against `<e>.gx` (x) or
 * `<e>.g_<name>`, and each of `params()` ([name, tensor], read after backward) against `<e>.g_<name>`.
 */
async function check(c, fx, tol, e, inputs, f, params = () => []) {
  const tag = `${e} (${fx.dtype})`;
  const leaves = inputs.map((p) => fx.leaf(`${e}.${p}`));
  let y;
  try {
    y = f(leaves, fx);
  } catch (err) {
    return c.ok(`${tag}: forward`, false, err.message);
  }
  const want = fx.get(`${e}.y`);
  const within = { atol: tol, rtol: tol }; // atol + rtol |want| = tol (1 + |want|)
  c.equal(`${tag}: y shape`, Array.from(y.shape), Array.from(want.shape));
  c.close(`${tag}: y`, await arr(y), await arr(want), within);
  y.mul(fx.get(`${e}.gy`)).sum().backward();
  // [tensor, fixture key]: an input `p_<name>` (a parameter as a leaf) has `g_<name>` too.
  const grads = [
    ...inputs.map((p, i) => [leaves[i], p === 'x' ? 'gx' : `g_${p.replace(/^p_/, '')}`]),
    ...params().map(([n, t]) => [t, `g_${n}`]),
  ];
  for (const [t, key] of grads) {
    const g = t.grad;
    c.ok(`${tag}: ${key} exists`, g !== undefined);
    if (g) c.close(`${tag}: ${key}`, await arr(g), await arr(fx.get(`${e}.${key}`)), within);
  }
}

/** Entry `e` through `layer`, its parameters loaded strictly by PyTorch's names. */
async function checkLayer(c, fx, tol, e, layer, inputs = ['x'], f = ([x]) => layer.forward(x)) {
  const names = layer.namedParameters().map(([n]) => n);
  layer.loadStateDict(Object.fromEntries(names.map((n) => [n, fx.get(`${e}.p_${n}`)])));
  await check(c, fx, tol, e, inputs, f, () => layer.namedParameters());
}

/**
 * [entry, inputs, layer, call]: the recurrent and transformer layers, called
 * with their states, masks and memory. A layer with several outputs is
 * compared as the fixture stores it: out, h_n (and c_n) flattened and joined.
 */
function sequenceLayers(skiff, fx) {
  const flat = (...ts) => skiff.cat(ts.flat(2).map((t) => t.reshape([-1])), 0);
  const withState = (m, [x, h, c]) => m.forwardWithState(x, c ? [h, c] : h);
  const nn = skiff.nn;
  return [
    ['rnn_tanh', ['x', 'h0'], new nn.RNN(3, 4, { numLayers: 2, bidirectional: true, batchFirst: true }), (m, xs) => flat(withState(m, xs))],
    ['rnn_relu', ['x'], new nn.RNN(3, 4, { nonlinearity: 'relu' }), (m, xs) => flat(withState(m, xs))],
    ['lstm', ['x', 'h0', 'c0'], new nn.LSTM(3, 4, { numLayers: 2, bidirectional: true }), (m, xs) => flat(withState(m, xs))],
    ['lstm_unbatched', ['x'], new nn.LSTM(3, 4), (m, xs) => flat(withState(m, xs))],
    ['gru', ['x', 'h0'], new nn.GRU(3, 4, { numLayers: 2, batchFirst: true }), (m, xs) => flat(withState(m, xs))],
    ['gru_bidirectional_nobias', ['x'], new nn.GRU(3, 4, { bidirectional: true, bias: false }), (m, xs) => flat(withState(m, xs))],
    ['rnn_cell', ['x', 'h0'], new nn.RNNCell(3, 4), (m, xs) => withState(m, xs)],
    ['lstm_cell', ['x', 'h0', 'c0'], new nn.LSTMCell(3, 4), (m, xs) => flat(withState(m, xs))],
    ['gru_cell', ['x', 'h0'], new nn.GRUCell(3, 4), (m, xs) => withState(m, xs)],
    ['encoder_post_relu', ['x'], new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 }), (m, [x]) => m.forward(x)],
    [
      'encoder_pre_gelu_masked',
      ['x'],
      new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, activation: 'gelu', batchFirst: true, normFirst: true }),
      (m, [x]) => m.encode(x, { srcKeyPaddingMask: fx.get('encoder_pre_gelu_masked.padding'), isCausal: true }),
    ],
    [
      'decoder_causal',
      ['x', 'memory'],
      new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 }),
      (m, [x, memory]) => m.decode(x, memory, { tgtIsCausal: true }),
    ],
  ];
}

/** The entries of module functions (attention, einsum), as OPS. */
function functionOps(skiff, fx) {
  const sdpa = skiff.scaledDotProductAttention;
  const qkv = ['q', 'k', 'v'];
  const einsum = (e, equation, inputs = ['x', 'b']) => [e, inputs, (xs) => skiff.einsum(equation, xs)];
  return [
    einsum('einsum_mm', 'ij,jk->ik'),
    einsum('einsum_bmm', 'bij,bjk->bik'),
    einsum('einsum_attention', 'bhqd,bhkd->bhqk'),
    einsum('einsum_dot', 'i,i->'),
    einsum('einsum_implicit', 'ij,jk'),
    einsum('einsum_ellipsis', '...ij,...jk->...ik'),
    einsum('einsum_sum_one', 'ijk,kl->li'),
    einsum('einsum_diagonal', 'ii->i', ['x']),
    einsum('einsum_trace', 'ii', ['x']),
    einsum('einsum_three', 'ab,bc,cd->ad', ['x', 'b', 'c']),
    ['sdpa', qkv, ([q, k, v]) => sdpa(q, k, v)],
    ['sdpa_causal', qkv, ([q, k, v]) => sdpa(q, k, v, { isCausal: true })],
    ['sdpa_scale', qkv, ([q, k, v]) => sdpa(q, k, v, { scale: 0.3 })],
    ['sdpa_bool_mask', qkv, ([q, k, v]) => sdpa(q, k, v, { attnMask: fx.get('sdpa_bool_mask.mask') })],
    ['sdpa_float_mask', [...qkv, 'bias'], ([q, k, v, bias]) => sdpa(q, k, v, { attnMask: bias })],
  ];
}

export const torchScenarios = {
  async torchFixture(skiff) {
    const c = checker();
    const device = skiff.getDefaultDevice();
    const gpu = device === 'webgpu';
    const tol = gpu ? 1e-5 : 1e-12;
    const all = skiff.loadSafetensors(await fixtureBytes(), { device: 'cpu' });
    const read = new Set();
    const fx = view(all, device, gpu ? 'float32' : 'float64', read);
    const fx32 = view(all, device, 'float32', read);

    for (const [e, make] of LAYERS) {
      const layer = make(skiff.nn);
      const hasParams = layer.namedParameters().length > 0;
      // PyTorch's hardsigmoid backward multiplies by 1.0f / 6.0f, an f32
      // constant, in every dtype: its f64 gradient is 3e-8 (relative) off 1/6.
      // Checked against PyTorch to that, and against gy / 6 below to `tol`.
      const entryTol = e === 'hardsigmoid' ? Math.max(tol, 1e-7) : tol;
      await checkLayer(c, hasParams ? fx32 : fx, hasParams ? Math.max(entryTol, F32_TOL) : entryTol, e, layer);
    }
    {
      const x = fx.leaf('hardsigmoid.x');
      const gy = fx.get('hardsigmoid.gy');
      x.hardsigmoid().mul(gy).sum().backward();
      const [xv, gv] = [await arr(x), await arr(gy)];
      const want = xv.map((v, i) => (v > -3 && v < 3 ? gv[i] / 6 : 0));
      c.close(`hardsigmoid (${fx.dtype}): gx is exactly gy / 6 inside (-3, 3)`, await arr(x.grad), want, { atol: tol, rtol: tol });
    }
    for (const [e, inputs, layer, f] of sequenceLayers(skiff, fx32)) {
      layer.eval();
      await checkLayer(c, fx32, Math.max(tol, F32_TOL), e, layer, inputs, (xs) => f(layer, xs));
    }
    for (const [e, inputs, f] of [...OPS, ...PARAM_OPS, ...functionOps(skiff, fx)]) await check(c, fx, tol, e, inputs, f);
    for (const [e, inputs, f] of EXACT) {
      const y = f(inputs.map((p) => fx.get(`${e}.${p}`)));
      const want = fx.get(`${e}.y`);
      c.equal(`${e}: shape and dtype`, [Array.from(y.shape), y.dtype], [Array.from(want.shape), want.dtype]);
      c.equal(`${e}: values`, await y.array(), await want.array());
    }
    // Sorts with ties and NaN: PyTorch's stable order, values and positions
    // exactly (`sort` gives [values, indices], as torch.sort; `argsort` the positions).
    for (const [e, descending] of [['sort_ties_stable', false], ['sort_ties_descending', true]]) {
      const x = fx.get(`${e}.x`);
      const [values, indices] = x.sort(1, descending, { stable: true });
      c.equal(`${e}: values`, await arr(values), await arr(fx.get(`${e}.y`)));
      c.equal(`${e}: indices`, await arr(indices), await arr(fx.get(`${e}.indices`)));
      c.equal(`${e}: argsort`, await arr(x.argsort(1, descending, { stable: true })), await arr(fx.get(`${e}.indices`)));
    }
    {
      // Among ties torch.topk picks its own positions: the values agree, and
      // both sets of positions hold them.
      const x = fx.get('topk_ties.x');
      const want = await arr(fx.get('topk_ties.y'));
      const [values, indices] = x.topk(4, 1);
      c.equal('topk_ties: values', await arr(values), want);
      c.equal('topk_ties: indices are int32', indices.dtype, 'int32');
      c.equal('topk_ties: skiff positions', await arr(x.gather(1, indices)), want);
      c.equal('topk_ties: torch positions', await arr(x.gather(1, fx.get('topk_ties.indices'))), want);
    }
    // A tensor of the fixture no check read is an entry (or part) left unchecked.
    c.equal('every fixture tensor was read by a check', Object.keys(all).filter((k) => !read.has(k)), []);
    for (const t of Object.values(all)) t.dispose();
    return c.report();
  },
};
