// nn layers through the JS surface, each against its definition computed
// here in plain JS: batch norm (train and eval, running statistics), layer
// norm, dropout, embedding, the pools, flatten and the activation modules.
// Returns { count, failures } (checks.js).
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
const biasedVar = (v) => mean(v.map((x) => (x - mean(v)) ** 2));

/** Column j of a row-major [rows, cols] array. */
const column = (flat, cols, j) => flat.filter((_, k) => k % cols === j);

/** erf to ~1e-7 (Abramowitz and Stegun 7.1.26), for GELU's exact form. */
export function erf(x) {
  const s = Math.sign(x);
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
}

/** A [n, c, h, w] pooling of a row-major plane `x` (h x w) with PyTorch's window rule. */
function pool2d(x, h, w, [kh, kw], [sh, sw], [ph, pw], reduce) {
  const oh = Math.floor((h + 2 * ph - kh) / sh) + 1;
  const ow = Math.floor((w + 2 * pw - kw) / sw) + 1;
  const out = [];
  for (let i = 0; i < oh; i++) {
    for (let j = 0; j < ow; j++) {
      const win = [];
      for (let a = 0; a < kh; a++) {
        for (let b = 0; b < kw; b++) {
          const [r, q] = [i * sh - ph + a, j * sw - pw + b];
          win.push(r >= 0 && r < h && q >= 0 && q < w ? x[r * w + q] : null);
        }
      }
      out.push(reduce(win));
    }
  }
  return out;
}
const maxOf = (win) => Math.max(...win.filter((v) => v !== null));
const meanWithPad = (win) => win.reduce((s, v) => s + (v ?? 0), 0) / win.length;

export const nnScenarios = {
  async layers(skiff) {
    const { tensor, nn, noGrad } = skiff;
    const c = checker();
    const eps = 1e-5;

    // ---- BatchNorm1d: batch statistics in training, running ones in eval.
    const x = [1, 2, 0, 3, -1, 4, 0.5, 0, 2, -2, 1, 1]; // [4, 3]
    const [w, b] = [
      [1.5, -0.5, 2],
      [0.1, 0.2, -0.3],
    ];
    const bn = new nn.BatchNorm1d(3);
    const report = bn.loadStateDict({ weight: tensor(w), bias: tensor(b) }, { strict: false });
    c.equal('BatchNorm1d: loadStateDict({ strict: false }) reports the buffers missing', report.missingKeys.slice().sort(), [
      'num_batches_tracked',
      'running_mean',
      'running_var',
    ]);
    c.equal('BatchNorm1d: training by default', bn.training, true);
    const X = tensor(x, { shape: [4, 3] });
    const y = noGrad(() => bn.forward(X));
    noGrad(() => bn.forward(X)); // a second batch: the running statistics move again
    const cols = [0, 1, 2].map((j) => column(x, 3, j));
    const want = x.map((v, k) => ((v - mean(cols[k % 3])) / Math.sqrt(biasedVar(cols[k % 3]) + eps)) * w[k % 3] + b[k % 3]);
    c.close('BatchNorm1d train: (x - batch mean) / sqrt(biased var + eps) * w + b', await arr(y), want);
    // momentum 0.1, running var from the unbiased batch variance, twice.
    let rm = [0, 0, 0];
    let rv = [1, 1, 1];
    for (let step = 0; step < 2; step++) {
      rm = rm.map((r, j) => 0.9 * r + 0.1 * mean(cols[j]));
      rv = rv.map((r, j) => 0.9 * r + 0.1 * ((biasedVar(cols[j]) * 4) / 3));
    }
    const buffers = Object.fromEntries(await Promise.all(bn.namedBuffers().map(async ([n, t]) => [n, await arr(t)])));
    c.close('BatchNorm1d running_mean after two batches', buffers.running_mean, rm);
    c.close('BatchNorm1d running_var after two batches', buffers.running_var, rv);
    c.equal('BatchNorm1d num_batches_tracked', buffers.num_batches_tracked, [2]);
    c.equal('BatchNorm1d buffers()', bn.buffers().length, 3);
    bn.eval();
    c.equal('BatchNorm1d: eval() clears training', bn.training, false);
    const ye = noGrad(() => bn.forward(X));
    c.close('BatchNorm1d eval: running statistics', await arr(ye), x.map((v, k) => ((v - rm[k % 3]) / Math.sqrt(rv[k % 3] + eps)) * w[k % 3] + b[k % 3]));
    c.close('BatchNorm1d eval leaves running_mean alone', await arr(bn.namedBuffers()[0][1]), rm);
    bn.train();
    c.equal('BatchNorm1d: train() sets training', bn.training, true);
    c.equal('BatchNorm1d toString', bn.toString(), 'BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)');

    // ---- BatchNorm2d with options: statistics per channel over N, H, W.
    const x4 = Array.from({ length: 16 }, (_, k) => ((k * 7) % 11) - 5); // [2, 2, 2, 2]
    const bn2 = new nn.BatchNorm2d(2, { momentum: 0.5, eps: 1e-3 });
    const y2 = noGrad(() => bn2.forward(tensor(x4, { shape: [2, 2, 2, 2] })));
    const chan = (k) => Math.floor(k / 4) % 2;
    const ch = [0, 1].map((j) => x4.filter((_, k) => chan(k) === j));
    c.close('BatchNorm2d train (eps 1e-3)', await arr(y2), x4.map((v, k) => (v - mean(ch[chan(k)])) / Math.sqrt(biasedVar(ch[chan(k)]) + 1e-3)));
    const [[, rm2], [, rv2]] = bn2.namedBuffers();
    c.close('BatchNorm2d running_mean (momentum 0.5)', await arr(rm2), ch.map((v) => 0.5 * mean(v)));
    c.close('BatchNorm2d running_var (momentum 0.5, unbiased)', await arr(rv2), ch.map((v) => 0.5 + 0.5 * ((biasedVar(v) * 8) / 7)));
    const plain = new nn.BatchNorm2d(2, { affine: false, trackRunningStats: false });
    c.equal('BatchNorm2d affine: false has no parameters', plain.parameters().length, 0);
    c.equal('BatchNorm2d trackRunningStats: false has no buffers', plain.buffers().length, 0);
    plain.eval();
    c.close('BatchNorm2d without running statistics uses the batch in eval', await arr(noGrad(() => plain.forward(tensor(x4, { shape: [2, 2, 2, 2] })))), x4.map((v, k) => (v - mean(ch[chan(k)])) / Math.sqrt(biasedVar(ch[chan(k)]) + eps)));

    // ---- LayerNorm: each row of [2, 3] normalised (biased variance), then w, b.
    const ln = new nn.LayerNorm(3, { eps: 1e-5 });
    ln.loadStateDict({ weight: tensor([2, 1, 0.5]), bias: tensor([0, 1, -1]) });
    const xr = [1, 2, 4, -3, 0, 3];
    const rows = [xr.slice(0, 3), xr.slice(3)];
    const lnWant = xr.map((v, k) => {
      const r = rows[Math.floor(k / 3)];
      return ((v - mean(r)) / Math.sqrt(biasedVar(r) + eps)) * [2, 1, 0.5][k % 3] + [0, 1, -1][k % 3];
    });
    c.close('LayerNorm(3) forward', await arr(noGrad(() => ln.forward(tensor(xr, { shape: [2, 3] })))), lnWant);
    c.equal('LayerNorm elementwiseAffine: false has no parameters', new nn.LayerNorm([2, 3], { elementwiseAffine: false }).numParameters, 0);
    c.equal('LayerNorm toString', ln.toString(), 'LayerNorm((3,), eps=1e-05, elementwise_affine=True)');

    // ---- Dropout: zeros with probability p, survivors scaled by 1/(1-p); identity in eval and for p = 0.
    skiff.manualSeed(11);
    const ones = skiff.ones([4000]);
    const d = new nn.Dropout(0.25);
    const dv = await arr(noGrad(() => d.forward(ones)));
    const kept = dv.filter((v) => v !== 0);
    c.ok('Dropout(0.25) keeps about 75%', Math.abs(kept.length / 4000 - 0.75) < 0.03, `${kept.length} of 4000`);
    c.ok('Dropout(0.25) scales survivors by 1/(1-p)', kept.every((v) => Math.abs(v - 4 / 3) < 1e-6), `${kept.slice(0, 3)}`);
    d.eval();
    c.equal('Dropout in eval is the identity', (await arr(noGrad(() => d.forward(ones)))).every((v) => v === 1), true);
    c.equal('Dropout(0) in training is the identity', (await arr(noGrad(() => new nn.Dropout(0).forward(ones)))).every((v) => v === 1), true);
    const td = await arr(ones.dropout(0.5, { training: true }));
    c.ok('Tensor.dropout(0.5): zeros or 2', td.every((v) => v === 0 || v === 2) && td.some((v) => v === 0), `${td.slice(0, 6)}`);
    // skiff refuses p = 1 (PyTorch returns zeros); the error must say why.
    await c.throws('Dropout(1.5) is refused, naming the value', () => new nn.Dropout(1.5), /Dropout/, /1\.5/);
    c.equal('Dropout toString', new nn.Dropout().toString(), 'Dropout(p=0.5)');

    // ---- Embedding: rows of the table.
    const emb = new nn.Embedding(5, 3);
    const [[wname, table]] = emb.namedParameters();
    c.equal('Embedding weight', [wname, Array.from(table.shape)], ['weight', [5, 3]]);
    const tv = await arr(table);
    const idx = [4, 0, 4, 2];
    const ev = await arr(noGrad(() => emb.forward(tensor(new Int32Array(idx), { shape: [2, 2] }))));
    c.close('Embedding forward: rows of the weight', ev, idx.flatMap((i) => tv.slice(3 * i, 3 * i + 3)), { atol: 0, rtol: 0 });

    // ---- Pools on a 4x4 plane (values 0..15).
    const plane = Array.from({ length: 16 }, (_, k) => k);
    const img = tensor(plane, { shape: [1, 1, 4, 4] });
    const run = async (m) => arr(noGrad(() => m.forward(img)));
    c.equal('MaxPool2d(2)', await run(new nn.MaxPool2d(2)), [5, 7, 13, 15]);
    c.equal('MaxPool2d(3, { stride: 1, padding: 1 })', await run(new nn.MaxPool2d(3, { stride: 1, padding: 1 })), pool2d(plane, 4, 4, [3, 3], [1, 1], [1, 1], maxOf));
    c.close('AvgPool2d(2)', await run(new nn.AvgPool2d(2)), [2.5, 4.5, 10.5, 12.5]);
    c.close('AvgPool2d([3, 2], { stride: [1, 2], padding: 1 }) counts the padding', await run(new nn.AvgPool2d([3, 2], { stride: [1, 2], padding: 1 })), pool2d(plane, 4, 4, [3, 2], [1, 2], [1, 1], meanWithPad));
    // Adaptive: cells [floor(i*in/out), ceil((i+1)*in/out)) per axis.
    const cells = (n, out) => Array.from({ length: out }, (_, i) => [Math.floor((i * n) / out), Math.ceil(((i + 1) * n) / out)]);
    const adaptive = cells(4, 2).flatMap(([r0, r1]) => cells(4, 3).map(([c0, c1]) => mean(plane.filter((_, k) => Math.floor(k / 4) >= r0 && Math.floor(k / 4) < r1 && k % 4 >= c0 && k % 4 < c1))));
    c.close('AdaptiveAvgPool2d([2, 3])', await run(new nn.AdaptiveAvgPool2d([2, 3])), adaptive);
    c.close('AdaptiveAvgPool2d(1): the global mean', await run(new nn.AdaptiveAvgPool2d(1)), [7.5]);
    c.equal('MaxPool2d toString', new nn.MaxPool2d(2).toString(), 'MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))');

    // ---- Flatten and the activation modules.
    const x3 = skiff.zeros([2, 3, 4]);
    c.equal('Flatten(): dims 1..-1', Array.from(new nn.Flatten().forward(x3).shape), [2, 12]);
    c.equal('Flatten({ startDim: 0, endDim: 1 })', Array.from(new nn.Flatten({ startDim: 0, endDim: 1 }).forward(x3).shape), [6, 4]);
    const xa = [-2, -0.5, 0, 0.7, 3];
    const act = async (m) => arr(noGrad(() => m.forward(tensor(xa))));
    const sig = (v) => 1 / (1 + Math.exp(-v));
    c.close('ReLU', await act(new nn.ReLU()), xa.map((v) => Math.max(v, 0)));
    c.close('LeakyReLU({ negativeSlope: 0.2 })', await act(new nn.LeakyReLU({ negativeSlope: 0.2 })), xa.map((v) => (v > 0 ? v : 0.2 * v)));
    c.close('LeakyReLU() default slope 0.01', await act(new nn.LeakyReLU()), xa.map((v) => (v > 0 ? v : 0.01 * v)));
    c.close('GELU(): x Phi(x), exact', await act(new nn.GELU()), xa.map((v) => 0.5 * v * (1 + erf(v / Math.SQRT2))));
    const tanhGelu = (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
    c.close("GELU({ approximate: 'tanh' })", await act(new nn.GELU({ approximate: 'tanh' })), xa.map(tanhGelu));
    c.close('Sigmoid', await act(new nn.Sigmoid()), xa.map(sig));
    c.close('Tanh', await act(new nn.Tanh()), xa.map(Math.tanh));
    c.close('SiLU', await act(new nn.SiLU()), xa.map((v) => v * sig(v)));
    const z = xa.reduce((s, v) => s + Math.exp(v), 0);
    c.close('Softmax() over the last dim', await act(new nn.Softmax()), xa.map((v) => Math.exp(v) / z));
    const sm0 = await arr(noGrad(() => new nn.Softmax(0).forward(tensor([[1, 2], [3, 5]]))));
    c.close('Softmax(0) over columns', sm0, [1 / (1 + Math.exp(2)), 1 / (1 + Math.exp(3)), 1 / (1 + Math.exp(-2)), 1 / (1 + Math.exp(-3))]);
    c.equal('activation typeNames', [new nn.ReLU(), new nn.GELU(), new nn.SiLU(), new nn.Softmax()].map((m) => m.typeName), ['ReLU', 'GELU', 'SiLU', 'Softmax']);
    // The activations of issue 48, against their definitions.
    const relu6 = (v) => Math.min(Math.max(v, 0), 6);
    const [seluAlpha, seluScale] = [1.6732632423543772, 1.0507009873554805];
    c.close('ELU({ alpha: 0.7 })', await act(new nn.ELU({ alpha: 0.7 })), xa.map((v) => (v > 0 ? v : 0.7 * Math.expm1(v))));
    c.close('ELU() default alpha 1', await act(new nn.ELU()), xa.map((v) => (v > 0 ? v : Math.expm1(v))));
    c.close('SELU', await act(new nn.SELU()), xa.map((v) => seluScale * (v > 0 ? v : seluAlpha * Math.expm1(v))));
    c.close('Mish', await act(new nn.Mish()), xa.map((v) => v * Math.tanh(Math.log1p(Math.exp(v)))));
    c.close('Hardswish', await act(new nn.Hardswish()), xa.map((v) => (v * relu6(v + 3)) / 6));
    c.close('Hardsigmoid', await act(new nn.Hardsigmoid()), xa.map((v) => relu6(v + 3) / 6));
    c.close('PReLU(): one slope of 0.25', await act(new nn.PReLU()), xa.map((v) => (v > 0 ? v : 0.25 * v)));
    const prelu = new nn.PReLU({ numParameters: 2, init: 0.1 });
    c.equal('PReLU parameters: weight [2]', prelu.namedParameters().map(([k, t]) => [k, Array.from(t.shape)]), [['weight', [2]]]);
    c.close('PReLU per channel', await arr(noGrad(() => prelu.forward(tensor([[-1, 2], [3, -4]])))), [-0.1, 2, 3, -0.4]);
    c.equal('PReLU toString', prelu.toString(), 'PReLU(num_parameters=2)');
    // Layers that move elements.
    c.close('Identity', await act(new nn.Identity()), xa);
    c.equal('Unflatten(1, [2, -1])', Array.from(new nn.Unflatten(1, [2, -1]).forward(skiff.zeros([2, 6])).shape), [2, 2, 3]);
    const pix = tensor(Array.from({ length: 8 }, (_, k) => k), { shape: [1, 4, 1, 2] });
    const shuffled = noGrad(() => new nn.PixelShuffle(2).forward(pix));
    c.equal('PixelShuffle(2): [1, 4, 1, 2] to [1, 1, 2, 4]', [Array.from(shuffled.shape), await arr(shuffled)], [[1, 1, 2, 4], [0, 2, 1, 3, 4, 6, 5, 7]]);
    c.equal('PixelUnshuffle(2) inverts it', await arr(noGrad(() => new nn.PixelUnshuffle(2).forward(shuffled))), [0, 1, 2, 3, 4, 5, 6, 7]);
    const padded = noGrad(() => new nn.ZeroPad2d([1, 0, 0, 1]).forward(tensor([[1, 2], [3, 4]])));
    c.equal('ZeroPad2d([left 1, right 0, top 0, bottom 1])', [Array.from(padded.shape), await arr(padded)], [[3, 3], [0, 1, 2, 0, 3, 4, 0, 0, 0]]);
    c.equal('ZeroPad2d(2) toString', new nn.ZeroPad2d(2).toString(), 'ZeroPad2d((2, 2, 2, 2))');
    // Normalisations, convolutions and resampling of issue 48 (their values
    // against PyTorch: surface-torch.js): parameter names and shapes, reprs.
    const shapes = (m) => m.namedParameters().map(([n, t]) => [n, Array.from(t.shape)]);
    c.equal('GroupNorm(2, 4) parameters', shapes(new nn.GroupNorm(2, 4)), [['weight', [4]], ['bias', [4]]]);
    c.equal('InstanceNorm2d(3) has no parameters', shapes(new nn.InstanceNorm2d(3)), []);
    c.equal('RMSNorm([2, 3]) parameters', shapes(new nn.RMSNorm([2, 3])), [['weight', [2, 3]]]);
    c.equal('Conv1d(4, 6, 3, { groups: 2 }) parameters', shapes(new nn.Conv1d(4, 6, 3, { groups: 2 })), [['weight', [6, 2, 3]], ['bias', [6]]]);
    c.equal('ConvTranspose2d(4, 6, [2, 3], { groups: 2 }) parameters', shapes(new nn.ConvTranspose2d(4, 6, [2, 3], { groups: 2 })), [['weight', [4, 3, 2, 3]], ['bias', [6]]]);
    const up = noGrad(() => new nn.ConvTranspose2d(1, 1, 2, { stride: 2, bias: false }).forward(skiff.ones([1, 1, 3, 3])));
    c.equal('ConvTranspose2d stride 2 doubles H and W', Array.from(up.shape), [1, 1, 6, 6]);
    const near = noGrad(() => new nn.Upsample({ scaleFactor: 2 }).forward(tensor([1, 2, 3, 4], { shape: [1, 1, 2, 2] })));
    c.equal('Upsample({ scaleFactor: 2 }) repeats each pixel', await arr(near), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
    const line = noGrad(() => new nn.Upsample({ size: 3, mode: 'linear', alignCorners: true }).forward(tensor([0, 4], { shape: [1, 1, 2] })));
    c.close('Upsample linear with aligned corners', await arr(line), [0, 2, 4]);
    c.equal('Upsample toString', new nn.Upsample({ size: [4, 6], mode: 'bilinear' }).toString(), "Upsample(size=(4, 6), mode='bilinear')");
    c.equal('GroupNorm toString', new nn.GroupNorm(2, 6).toString(), 'GroupNorm(2, 6, eps=1e-05, affine=True, bias=True)');
    // Recurrent and transformer layers (values against PyTorch: surface-torch.js):
    // PyTorch's parameter names, the shapes of the outputs and states.
    const lstm = new nn.LSTM(3, 5, { numLayers: 2, bidirectional: true, batchFirst: true });
    c.equal('LSTM parameter names and shapes', shapes(lstm).slice(0, 5), [
      ['weight_ih_l0', [20, 3]], ['weight_hh_l0', [20, 5]], ['bias_ih_l0', [20]], ['bias_hh_l0', [20]], ['weight_ih_l0_reverse', [20, 3]],
    ]);
    c.equal('LSTM toString', lstm.toString(), 'LSTM(3, 5, num_layers=2, batch_first=True, bidirectional=True)');
    const [out, [h, cell]] = noGrad(() => lstm.forwardWithState(skiff.ones([2, 7, 3])));
    c.equal('LSTM output [N, L, 2H] and states [2 * layers, N, H]', [out.shape, h.shape, cell.shape].map((t) => Array.from(t)), [[2, 7, 10], [4, 2, 5], [4, 2, 5]]);
    const gru = new nn.GRU(3, 5);
    const [gOut, gH] = noGrad(() => gru.forwardWithState(skiff.ones([4, 2, 3]), skiff.zeros([1, 2, 5])));
    c.equal('GRU forwardWithState gives [output, hN]', [Array.from(gOut.shape), Array.from(gH.shape)], [[4, 2, 5], [1, 2, 5]]);
    c.close('GRU: hN is the last step of the output', await arr(gH), (await arr(gOut)).slice(3 * 10));
    c.equal('GRU.forward is the output', Array.from(noGrad(() => gru.forward(skiff.ones([4, 2, 3]))).shape), [4, 2, 5]);
    const lstmCell = new nn.LSTMCell(3, 5);
    const [cellH, cellC] = noGrad(() => lstmCell.forwardWithState(skiff.ones([2, 3])));
    c.equal('LSTMCell forwardWithState gives [h, c]', [Array.from(cellH.shape), Array.from(cellC.shape)], [[2, 5], [2, 5]]);
    c.equal('RNNCell toString', new nn.RNNCell(3, 5, { nonlinearity: 'relu', bias: false }).toString(), 'RNNCell(3, 5, bias=False, nonlinearity=relu)');
    const enc = new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, batchFirst: true });
    c.equal('TransformerEncoderLayer parameter names', enc.namedParameters().map(([n]) => n).slice(0, 4), ['self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight', 'self_attn.out_proj.bias']);
    enc.eval();
    const src = skiff.randn([2, 3, 4]);
    const pad = skiff.tensor([false, false, true, false, false, false], { shape: [2, 3], dtype: 'bool' });
    const masked = noGrad(() => enc.encode(src, { srcKeyPaddingMask: pad, isCausal: true }));
    c.equal('TransformerEncoderLayer.encode keeps [N, L, E]', Array.from(masked.shape), [2, 3, 4]);
    // Causal: the first position sees only itself, so changing later ones leaves it alone.
    const changed = skiff.cat([src.narrow(1, 0, 1), skiff.randn([2, 2, 4])], 1);
    const first = (x) => arr(noGrad(() => enc.encode(x, { isCausal: true }).narrow(1, 0, 1)));
    c.close('causal encode: position 0 ignores the later positions', await first(changed), await first(src));
    const all = (x) => arr(noGrad(() => enc.forward(x).narrow(1, 0, 1)));
    const [seen, before] = [await all(changed), await all(src)];
    c.ok('non-causal forward: position 0 sees the later ones', seen.some((v, i) => Math.abs(v - before[i]) > 1e-6));
    const dec = new nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8 });
    c.equal('TransformerDecoderLayer.decode keeps [T, N, E]', Array.from(noGrad(() => dec.decode(skiff.ones([3, 2, 4]), skiff.ones([5, 2, 4]), { tgtIsCausal: true })).shape), [3, 2, 4]);
    return c.report();
  },
};
