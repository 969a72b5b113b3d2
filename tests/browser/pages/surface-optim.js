// Optimizers, schedules and gradient clipping through the JS surface, each
// against PyTorch's update rule computed by hand here. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

// loss = sum(c * p^2): the gradient is 2 c p.
const C = [1, 2, 0.5];
const P0 = [1, -2, 3];
const grad = (p) => p.map((v, i) => 2 * C[i] * v);

/** Runs `steps` steps of `opt` (built by `make(params)`) on the quadratic; the parameter values after each. */
async function descend(skiff, make, steps) {
  const p = skiff.tensor(P0, { requiresGrad: true });
  const c = skiff.tensor(C);
  const opt = make([p]);
  const out = [];
  for (let i = 0; i < steps; i++) {
    opt.zeroGrad();
    p.mul(p).mul(c).sum().backward();
    opt.step();
    out.push(await arr(p));
  }
  return { out, opt, p };
}

/** The same steps in plain JS: `update(p, g, state, t)` returns the new p. */
function simulate(update, steps) {
  let p = P0.slice();
  const state = {};
  const out = [];
  for (let t = 1; t <= steps; t++) {
    p = update(p, grad(p), state, t);
    out.push(p);
  }
  return out;
}

const zeros = () => P0.map(() => 0);

export const optimScenarios = {
  async optimizerRules(skiff) {
    const { optim } = skiff;
    const c = checker();
    const tol = { atol: 1e-5, rtol: 1e-5 };

    // AdamW: decoupled decay p *= 1 - lr wd, then Adam with bias correction.
    const adamw = (lr, [b1, b2], eps, wd, amsgrad) => (p, g, s, t) => {
      s.m ??= zeros();
      s.v ??= zeros();
      s.vmax ??= zeros();
      return p.map((x, i) => {
        x *= 1 - lr * wd;
        s.m[i] = b1 * s.m[i] + (1 - b1) * g[i];
        s.v[i] = b2 * s.v[i] + (1 - b2) * g[i] * g[i];
        s.vmax[i] = Math.max(s.vmax[i], s.v[i]);
        const v = amsgrad ? s.vmax[i] : s.v[i];
        return x - (lr * (s.m[i] / (1 - b1 ** t))) / (Math.sqrt(v / (1 - b2 ** t)) + eps);
      });
    };
    const aw = await descend(skiff, (ps) => new optim.AdamW(ps, { lr: 0.1, weightDecay: 0.5 }), 3);
    c.close('AdamW({ lr: 0.1, weightDecay: 0.5 }), three steps', aw.out, simulate(adamw(0.1, [0.9, 0.999], 1e-8, 0.5, false), 3), tol);
    const aw2 = await descend(skiff, (ps) => new optim.AdamW(ps, { lr: 0.05, betas: [0.8, 0.9], eps: 1e-3, amsgrad: true }), 3);
    c.close('AdamW with betas, eps, amsgrad and the default weightDecay 0.01', aw2.out, simulate(adamw(0.05, [0.8, 0.9], 1e-3, 0.01, true), 3), tol);

    // RMSprop: v = a v + (1-a) g^2; centered subtracts the mean gradient squared; momentum buffers g / denom.
    const rmsprop = (lr, alpha, eps, wd, mom, centered) => (p, g0, s) => {
      s.v ??= zeros();
      s.ga ??= zeros();
      s.buf ??= zeros();
      return p.map((x, i) => {
        const g = g0[i] + wd * x;
        s.v[i] = alpha * s.v[i] + (1 - alpha) * g * g;
        s.ga[i] = alpha * s.ga[i] + (1 - alpha) * g;
        const denom = Math.sqrt(centered ? s.v[i] - s.ga[i] ** 2 : s.v[i]) + eps;
        if (mom > 0) {
          s.buf[i] = mom * s.buf[i] + g / denom;
          return x - lr * s.buf[i];
        }
        return x - (lr * g) / denom;
      });
    };
    const rp = await descend(skiff, (ps) => new optim.RMSprop(ps, { lr: 0.01 }), 3);
    c.close('RMSprop({ lr: 0.01 }) (alpha 0.99)', rp.out, simulate(rmsprop(0.01, 0.99, 1e-8, 0, 0, false), 3), tol);
    const rp2 = await descend(skiff, (ps) => new optim.RMSprop(ps, { lr: 0.02, alpha: 0.9, momentum: 0.5, centered: true, weightDecay: 0.1, eps: 1e-4 }), 3);
    c.close('RMSprop centered with momentum and weight decay', rp2.out, simulate(rmsprop(0.02, 0.9, 1e-4, 0.1, 0.5, true), 3), tol);

    // Adagrad: lr / (1 + (t-1) lrDecay) * g / (sqrt(sum g^2) + eps), the sum starting at initialAccumulatorValue.
    const adagrad = (lr, decay, wd, init, eps) => (p, g0, s, t) => {
      s.sum ??= p.map(() => init);
      return p.map((x, i) => {
        const g = g0[i] + wd * x;
        s.sum[i] += g * g;
        return x - ((lr / (1 + (t - 1) * decay)) * g) / (Math.sqrt(s.sum[i]) + eps);
      });
    };
    const ag = await descend(skiff, (ps) => new optim.Adagrad(ps, { lr: 0.5 }), 3);
    c.close('Adagrad({ lr: 0.5 })', ag.out, simulate(adagrad(0.5, 0, 0, 0, 1e-10), 3), tol);
    const ag2 = await descend(skiff, (ps) => new optim.Adagrad(ps, { lr: 0.5, lrDecay: 0.1, weightDecay: 0.2, initialAccumulatorValue: 1, eps: 1e-3 }), 3);
    c.close('Adagrad with lrDecay, weightDecay, initialAccumulatorValue, eps', ag2.out, simulate(adagrad(0.5, 0.1, 0.2, 1, 1e-3), 3), tol);

    // SGD with momentum, dampening, Nesterov and weight decay.
    const sgd = (lr, mom, damp, wd, nesterov) => (p, g0, s, t) => {
      s.buf ??= zeros();
      return p.map((x, i) => {
        const g = g0[i] + wd * x;
        s.buf[i] = t === 1 ? g : mom * s.buf[i] + (1 - damp) * g;
        return x - lr * (nesterov ? g + mom * s.buf[i] : s.buf[i]);
      });
    };
    const sg = await descend(skiff, (ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9, dampening: 0.2, weightDecay: 0.05 }), 3);
    c.close('SGD momentum, dampening, weightDecay', sg.out, simulate(sgd(0.1, 0.9, 0.2, 0.05, false), 3), tol);
    const sn = await descend(skiff, (ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true }), 3);
    c.close('SGD Nesterov', sn.out, simulate(sgd(0.1, 0.9, 0, 0, true), 3), tol);

    // Options: lr get/set, setOption per group, paramGroups, typeName, toString.
    const { opt } = aw;
    c.equal('typeName', [opt.typeName, rp.opt.typeName, ag.opt.typeName], ['AdamW', 'RMSprop', 'Adagrad']);
    c.close('lr getter', opt.lr, 0.1);
    opt.lr = 0.25;
    c.close('lr setter', opt.lr, 0.25);
    opt.setOption('betas', [0.5, 0.6]);
    opt.setOption('weightDecay', 0, { group: 0 });
    c.equal('paramGroups() after setOption', opt.paramGroups(), [{ numParams: 1, lr: 0.25, betas: [0.5, 0.6], eps: 1e-8, weightDecay: 0, amsgrad: false }]);
    c.equal('toString', rp.opt.toString(), 'RMSprop (\nParameter Group 0\n    alpha: 0.99\n    centered: False\n    eps: 1e-08\n    lr: 0.01\n    momentum: 0.0\n    weightDecay: 0.0\n)');
    // Parameter groups with their own options.
    const [a, b] = [skiff.tensor([1], { requiresGrad: true }), skiff.tensor([1], { requiresGrad: true })];
    const groups = new optim.SGD([{ params: [a] }, { params: [b], lr: 0.5 }], { lr: 0.1 });
    a.add(b).sum().backward();
    groups.step();
    c.close('per-group lr', [...(await arr(a)), ...(await arr(b))], [0.9, 0.5]);
    c.equal('paramGroups() per group', groups.paramGroups().map((g) => g.lr), [0.1, 0.5]);

    // stateDict round trip: a restored optimizer continues exactly like the original.
    const bytes = await aw.opt.stateDict();
    c.ok('Optimizer.stateDict has the moments', Object.keys(skiff.loadSafetensors(bytes)).some((k) => /^state\.0\.exp_avg$/.test(k)));
    const q = skiff.tensor(await arr(aw.p), { requiresGrad: true });
    const restored = new optim.AdamW([q], { lr: 0.1 });
    restored.loadStateDict(bytes);
    const cc = skiff.tensor(C);
    for (const [opt1, p1] of [
      [aw.opt, aw.p],
      [restored, q],
    ]) {
      opt1.zeroGrad();
      p1.mul(p1).mul(cc).sum().backward();
      opt1.step();
    }
    c.close('a restored AdamW steps like the original', await arr(q), await arr(aw.p), { atol: 0, rtol: 0 });
    return c.report();
  },

  /** Every scheduler against its formula, through lastLr, lrAt, stepCount and the optimizer's lr. */
  async schedulers(skiff) {
    const { optim } = skiff;
    const c = checker();
    const opt = (lr = 0.1) => new optim.SGD([skiff.tensor([1], { requiresGrad: true })], { lr });
    const trace = (o, s, n) => {
      const lrs = [o.lr];
      for (let i = 0; i < n; i++) {
        s.step();
        lrs.push(o.lr);
      }
      return lrs;
    };
    const range = (n) => Array.from({ length: n + 1 }, (_, i) => i);
    let o = opt();
    const step = new optim.lrScheduler.StepLR(o, { stepSize: 3, gamma: 0.5 });
    c.close('StepLR: base gamma^floor(t / stepSize)', trace(o, step, 7), range(7).map((t) => 0.1 * 0.5 ** Math.floor(t / 3)));
    c.equal('StepLR stepCount and typeName', [step.stepCount, step.typeName], [7, 'StepLR']);
    c.close('StepLR lastLr', step.lastLr, [0.1 * 0.5 ** 2]);
    c.close('StepLR default gamma 0.1 (lrAt)', new optim.StepLR(opt(), { stepSize: 2 }).lrAt(5), 0.1 * 0.1 ** 2);
    o = opt(0.2);
    const exp = new optim.ExponentialLR(o, { gamma: 0.9 });
    c.close('ExponentialLR: base gamma^t', trace(o, exp, 4), range(4).map((t) => 0.2 * 0.9 ** t));
    o = opt(1);
    const cos = new optim.CosineAnnealingLR(o, { totalSteps: 8, warmupSteps: 2, minLr: 0.1 });
    const cosAt = (t) => (t < 2 ? t / 2 : t >= 8 ? 0.1 : 0.1 + 0.9 * 0.5 * (1 + Math.cos((Math.PI * (t - 2)) / 6)));
    c.close('CosineAnnealingLR: linear warm-up from 0, then cosine to minLr', trace(o, cos, 10), range(10).map(cosAt));
    c.equal('CosineAnnealingLR typeName (the JS class name)', cos.typeName, 'CosineAnnealingLR');
    c.close('CosineAnnealingLR without warm-up starts at the base rate', new optim.lrScheduler.CosineAnnealingLR(opt(0.5), { totalSteps: 4 }).lrAt(0), 0.5);
    o = opt();
    const one = new optim.OneCycleLR(o, { maxLr: 1, totalSteps: 10, pctStart: 0.3, divFactor: 10, finalDivFactor: 100 });
    // PyTorch: cosine from maxLr/div up to maxLr at step pct*total - 1, then down to maxLr/div/finalDiv at total - 1.
    const anneal = (a, b, f) => b + ((a - b) * (1 + Math.cos(Math.PI * f))) / 2;
    const oneAt = (t) => (t <= 2 ? anneal(0.1, 1, t / 2) : anneal(1, 0.001, Math.min((t - 2) / 7, 1)));
    c.close('OneCycleLR: up to maxLr, then down (cosine)', trace(o, one, 9), range(9).map(oneAt));
    c.close('OneCycleLR lrAt', [one.lrAt(0), one.lrAt(2), one.lrAt(9)], [0.1, 1, 0.001]);
    c.equal('OneCycleLR via lrScheduler', new optim.lrScheduler.OneCycleLR(opt(), { maxLr: 1, totalSteps: 10 }).typeName, 'OneCycleLR');
    c.close('ExponentialLR via lrScheduler', new optim.lrScheduler.ExponentialLR(opt(), { gamma: 0.5 }).lrAt(3), 0.0125);
    return c.report();
  },

  /** clipGradNorm (p = 2, 1 and inf; the norm stays a tensor), clipGradValue and the nn.utils names. */
  async clipping(skiff) {
    const { tensor, nn } = skiff;
    const c = checker();
    const params = (g1, g2) => {
      const [a, b] = [tensor([0, 0], { requiresGrad: true }), tensor([0, 0, 0], { requiresGrad: true })];
      a.grad = tensor(g1);
      b.grad = tensor(g2);
      return [a, b];
    };
    const [g1, g2] = [
      [3, -4],
      [0, 12, 0],
    ];
    let ps = params(g1, g2);
    const norm = skiff.clipGradNorm(ps, 6.5);
    c.equal('clipGradNorm returns a 0-d tensor on the gradients\' device', [Array.from(norm.shape), norm.device], [[], skiff.getDefaultDevice()]);
    c.close('clipGradNorm: the 2-norm before clipping', await norm.item(), 13);
    const k = 6.5 / (13 + 1e-6);
    c.close('clipGradNorm scales every gradient by maxNorm / (norm + 1e-6)', [...(await arr(ps[0].grad)), ...(await arr(ps[1].grad))], [...g1, ...g2].map((v) => v * k));
    ps = params(g1, g2);
    c.close('a norm under maxNorm leaves the gradients', [await skiff.clipGradNorm(ps, 100).item(), ...(await arr(ps[1].grad))], [13, ...g2]);
    ps = params(g1, g2);
    c.close("nn.utils.clipGradNorm_({ normType: 'inf' }): max |g|", await nn.utils.clipGradNorm_(ps, 6, { normType: 'inf' }).item(), 12);
    c.close('... and the scale 6 / (12 + 1e-6)', await arr(ps[0].grad), g1.map((v) => (v * 6) / (12 + 1e-6)));
    ps = params(g1, g2);
    c.close('normType 1: sum |g|', await skiff.clipGradNorm(ps, 1e6, { normType: 1 }).item(), 19);
    c.equal('no gradients: undefined', skiff.clipGradNorm([tensor([1], { requiresGrad: true })], 1), undefined);
    ps = params(g1, g2);
    skiff.clipGradValue(ps, 3.5);
    c.close('clipGradValue clamps into [-v, v]', [...(await arr(ps[0].grad)), ...(await arr(ps[1].grad))], [3, -3.5, 0, 3.5, 0]);
    ps = params(g1, g2);
    nn.utils.clipGradValue_(ps, 1);
    c.close('nn.utils.clipGradValue_', await arr(ps[1].grad), [0, 1, 0]);
    return c.report();
  },
};
