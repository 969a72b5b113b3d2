// The loss classes against their formulas, and nn.init against the bounds
// and statistics PyTorch defines for each initialiser. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

const sum = (v) => v.reduce((a, b) => a + b, 0);
const mean = (v) => sum(v) / v.length;
const std = (v) => Math.sqrt(mean(v.map((x) => (x - mean(v)) ** 2)));

export const lossInitScenarios = {
  async losses(skiff) {
    const { tensor, nn } = skiff;
    const c = checker();
    const logits = [2, -1, 0.5, 0, 0.3, 0.3, -2, 1, -1, 0, 1, 2.5]; // [3, 4]
    const labels = [1, 0, 3];
    const X = tensor(logits, { shape: [3, 4] });
    const Y = tensor(new Int32Array(labels));
    const rowsOf = (v) => [0, 1, 2].map((i) => v.slice(4 * i, 4 * i + 4));
    const logp = rowsOf(logits).map((r) => {
      const lse = Math.log(sum(r.map(Math.exp)));
      return r.map((x) => x - lse);
    });
    const nll = labels.map((y, i) => -logp[i][y]);
    const run = async (loss, input, target) => arr(loss.forward(input, target));

    c.close('CrossEntropyLoss(): mean of -log softmax at the label', await run(new nn.CrossEntropyLoss(), X, Y), mean(nll));
    c.close("CrossEntropyLoss({ reduction: 'sum' })", await run(new nn.CrossEntropyLoss({ reduction: 'sum' }), X, Y), sum(nll));
    c.close("CrossEntropyLoss({ reduction: 'none' })", await run(new nn.CrossEntropyLoss({ reduction: 'none' }), X, Y), nll);
    // Label smoothing eps: (1 - eps) nll + eps * mean over classes of -log p.
    const smooth = labels.map((y, i) => 0.8 * nll[i] + 0.2 * mean(logp[i].map((v) => -v)));
    const ls = new nn.CrossEntropyLoss({ labelSmoothing: 0.2 });
    c.close('CrossEntropyLoss({ labelSmoothing: 0.2 })', await run(ls, X, Y), mean(smooth));
    c.equal('CrossEntropyLoss typeName and toString', [ls.typeName, ls.toString()], ['CrossEntropyLoss', 'CrossEntropyLoss(label_smoothing=0.2)']);

    const L = tensor(logp.flat(), { shape: [3, 4] });
    c.close('NLLLoss(): mean of -input at the label', await run(new nn.NLLLoss(), L, Y), mean(nll));
    c.close("NLLLoss({ reduction: 'none' })", await run(new nn.NLLLoss({ reduction: 'none' }), L, Y), nll);

    const x = [0.5, -1, 2, 0, 1.5, -0.25];
    const t = [1, -1, 0, 0.5, 2, 0.25];
    const [Xs, Ts] = [tensor(x), tensor(t)];
    const d = x.map((v, i) => v - t[i]);
    c.close('MSELoss(): mean squared error', await run(new nn.MSELoss(), Xs, Ts), mean(d.map((v) => v * v)));
    c.close("MSELoss({ reduction: 'sum' })", await run(new nn.MSELoss({ reduction: 'sum' }), Xs, Ts), sum(d.map((v) => v * v)));
    c.close('L1Loss(): mean absolute error', await run(new nn.L1Loss(), Xs, Ts), mean(d.map(Math.abs)));
    c.close("L1Loss({ reduction: 'none' })", await run(new nn.L1Loss({ reduction: 'none' }), Xs, Ts), d.map(Math.abs));
    const probs = [1, 0, 0.5, 0.2, 0.9, 0];
    const bce = x.map((v, i) => Math.max(v, 0) - v * probs[i] + Math.log1p(Math.exp(-Math.abs(v))));
    c.close('BCEWithLogitsLoss(): -[p log s(x) + (1-p) log(1 - s(x))]', await run(new nn.BCEWithLogitsLoss(), Xs, tensor(probs)), mean(bce));
    c.close("BCEWithLogitsLoss({ reduction: 'sum' })", await run(new nn.BCEWithLogitsLoss({ reduction: 'sum' }), Xs, tensor(probs)), sum(bce));
    c.equal('loss reprs', [new nn.MSELoss({ reduction: 'sum' }).toString(), new nn.L1Loss().toString(), new nn.NLLLoss({ reduction: 'none' }).typeName], [
      "MSELoss(reduction='sum')",
      'L1Loss()',
      'NLLLoss',
    ]);
    // The loss keeps the graph: d/dx mean((x - t)^2) = 2 (x - t) / n.
    const xg = tensor(x, { requiresGrad: true });
    new nn.MSELoss().forward(xg, Ts).backward();
    c.close('MSELoss backward', await arr(xg.grad), d.map((v) => (2 * v) / x.length));
    await c.throws('a loss of mismatched shapes names the op', () => new nn.MSELoss().forward(Xs, tensor([1, 2])), /^MSELoss\.forward:/, /\[6\]/);
    return c.report();
  },

  /** nn.init: PyTorch's bounds and standard deviations, on [64, 32] weights (2048 draws). */
  async init(skiff) {
    const { nn } = skiff;
    const c = checker();
    skiff.manualSeed(21);
    const [fanOut, fanIn] = [64, 32];
    const n = fanOut * fanIn;
    const fresh = () => skiff.zeros([fanOut, fanIn]);
    const g = nn.init;
    /** Uniform in [-b, b): inside the bounds, reaching near both ends, mean ~0. */
    const uniform = async (label, t, lo, hi) => {
      const v = await arr(t);
      c.ok(`${label}: inside [${lo}, ${hi})`, v.every((x) => x >= lo && x < hi), `min ${Math.min(...v)}, max ${Math.max(...v)}`);
      c.ok(`${label}: spans the range`, Math.min(...v) < lo + 0.02 * (hi - lo) && Math.max(...v) > hi - 0.02 * (hi - lo));
      const sd = (hi - lo) / Math.sqrt(12);
      c.close(`${label}: mean`, mean(v), (lo + hi) / 2, { atol: (4 * sd) / Math.sqrt(n), rtol: 0 });
    };
    const normal = async (label, t, mu, sigma) => {
      const v = await arr(t);
      c.close(`${label}: mean`, mean(v), mu, { atol: (4 * sigma) / Math.sqrt(n), rtol: 0 });
      c.close(`${label}: std`, std(v), sigma, { atol: 0, rtol: 0.08 });
    };
    const t = fresh();
    c.ok('init functions return the tensor they fill', g.uniform_(t, { a: -0.5, b: 2 }) === t);
    await uniform('uniform_({ a: -0.5, b: 2 })', t, -0.5, 2);
    await uniform('uniform_() on [0, 1)', g.uniform_(fresh()), 0, 1);
    await normal('normal_({ mean: 1, std: 0.5 })', g.normal_(fresh(), { mean: 1, std: 0.5 }), 1, 0.5);
    await normal('normal_() is N(0, 1)', g.normal_(fresh()), 0, 1);
    const bx = Math.sqrt(6 / (fanIn + fanOut));
    await uniform('xavierUniform_(): b = sqrt(6 / (fanIn + fanOut))', g.xavierUniform_(fresh()), -bx, bx);
    await uniform('xavierUniform_({ gain: 2 })', g.xavierUniform_(fresh(), { gain: 2 }), -2 * bx, 2 * bx);
    await normal('xavierNormal_(): std = sqrt(2 / (fanIn + fanOut))', g.xavierNormal_(fresh()), 0, Math.sqrt(2 / (fanIn + fanOut)));
    await normal('xavierNormal_({ gain: 0.5 })', g.xavierNormal_(fresh(), { gain: 0.5 }), 0, 0.5 * Math.sqrt(2 / (fanIn + fanOut)));
    // Kaiming: gain / sqrt(fan); the default nonlinearity is leaky_relu with a = 0 (gain sqrt 2).
    const bk = Math.sqrt(2) * Math.sqrt(3 / fanIn);
    await uniform('kaimingUniform_(): b = sqrt(2) sqrt(3 / fanIn)', g.kaimingUniform_(fresh()), -bk, bk);
    const bt = (5 / 3) * Math.sqrt(3 / fanOut);
    await uniform("kaimingUniform_({ mode: 'fan_out', nonlinearity: 'tanh' })", g.kaimingUniform_(fresh(), { mode: 'fan_out', nonlinearity: 'tanh' }), -bt, bt);
    const ba = Math.sqrt(2 / (1 + 0.2 ** 2)) * Math.sqrt(3 / fanIn);
    await uniform("kaimingUniform_({ a: 0.2 }): leaky_relu's gain", g.kaimingUniform_(fresh(), { a: 0.2 }), -ba, ba);
    await normal("kaimingNormal_({ nonlinearity: 'relu' })", g.kaimingNormal_(fresh(), { nonlinearity: 'relu' }), 0, Math.sqrt(2 / fanIn));
    await normal("kaimingNormal_({ mode: 'fan_out', nonlinearity: 'linear' })", g.kaimingNormal_(fresh(), { mode: 'fan_out', nonlinearity: 'linear' }), 0, 1 / Math.sqrt(fanOut));
    // A conv weight [out, in, kh, kw]: fans count the receptive field.
    const conv = g.kaimingUniform_(skiff.zeros([8, 4, 3, 3]), { nonlinearity: 'conv2d' });
    const bc = Math.sqrt(3 / (4 * 9));
    c.ok('kaimingUniform_ of a conv weight: fanIn = in * kh * kw', (await arr(conv)).every((x) => Math.abs(x) <= bc) && Math.max(...(await arr(conv))) > 0.9 * bc);
    c.equal('constant_(t, 0.25)', [...new Set(await arr(g.constant_(fresh(), 0.25)))], [0.25]);
    c.equal('zeros_ and ones_', [[...new Set(await arr(g.zeros_(skiff.ones([3]))))], [...new Set(await arr(g.ones_(fresh())))]], [[0], [1]]);
    const gains = [
      g.calculateGain('linear'),
      g.calculateGain('conv2d'),
      g.calculateGain('sigmoid'),
      g.calculateGain('tanh'),
      g.calculateGain('relu'),
      g.calculateGain('leaky_relu'),
      g.calculateGain('leaky_relu', 0.2),
    ];
    c.close('calculateGain: PyTorch\'s table', gains, [1, 1, 1, 5 / 3, Math.SQRT2, Math.sqrt(2 / (1 + 0.01 ** 2)), Math.sqrt(2 / (1 + 0.04))], { atol: 1e-12, rtol: 0 });
    // A module's parameters can be re-initialised in place through init.
    const lin = new nn.Linear(fanIn, fanOut);
    const [weight] = lin.parameters();
    g.zeros_(weight);
    c.equal('init writes into a module parameter', [...new Set(await arr(lin.parameters()[0]))], [0]);
    c.equal('the parameter is still a leaf that requires grad', [weight.isLeaf, weight.requiresGrad], [true, true]);
    await c.throws('init of a 1-D tensor needs fans', () => g.xavierUniform_(skiff.zeros([3])), /^xavierUniform_: fan in\/out/, /\[3\]/);
    return c.report();
  },
};
