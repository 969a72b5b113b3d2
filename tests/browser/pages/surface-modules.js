// Containers and module plumbing (Sequential, ModuleList, ModuleDict, names,
// hooks, train/eval, state dicts) and multi-head attention against a
// hand-written attention from tensor ops. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { arr, checker } from './checks.js';

/** y = x W^T + b for row-major x [n, k], W [m, k], b [m] (or null). */
function linear(x, n, k, W, m, b) {
  const y = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < m; j++) {
      let s = b ? b[j] : 0;
      for (let q = 0; q < k; q++) s += x[i * k + q] * W[j * k + q];
      y.push(s);
    }
  }
  return y;
}

export const moduleScenarios = {
  async containers(skiff) {
    const { tensor, nn, noGrad } = skiff;
    const c = checker();
    skiff.manualSeed(5);
    const [l1, act, drop, l2] = [new nn.Linear(3, 4), new nn.ReLU(), new nn.Dropout(0.5), new nn.Linear(4, 2, { bias: false })];
    const seq = new nn.Sequential(l1, act, drop, l2);
    c.equal('Sequential named parameters', seq.namedParameters().map(([n, t]) => [n, Array.from(t.shape)]), [
      ['0.weight', [4, 3]],
      ['0.bias', [4]],
      ['3.weight', [2, 4]],
    ]);
    c.equal('Sequential numParameters', seq.numParameters, 12 + 4 + 8);
    // An empty sum of floats is -0 in Rust: a layer without parameters must say 0.
    c.equal('a layer without parameters has 0 (not -0)', Object.is(act.numParameters, 0), true);
    c.equal('Sequential parameters()', seq.parameters().length, 3);
    c.equal('Sequential children()', seq.children().map(([n, m]) => [n, m.typeName]), [
      ['0', 'Linear'],
      ['1', 'ReLU'],
      ['2', 'Dropout'],
      ['3', 'Linear'],
    ]);
    c.equal('Sequential([...]) without new: the same layers', nn.Sequential([l1, act, drop, l2]).numParameters, 24);
    c.equal('Sequential typeName', seq.typeName, 'Sequential');
    c.equal(
      'Sequential toString (PyTorch repr)',
      seq.toString(),
      'Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)\n  (1): ReLU()\n  (2): Dropout(p=0.5)\n  (3): Linear(in_features=4, out_features=2, bias=False)\n)',
    );
    const [W1, b1, W2] = await Promise.all(seq.parameters().map(arr));
    c.equal('get(0) shares the layer', await arr(seq.get(0).parameters()[0]), W1);
    c.equal('get(-1) counts from the end', seq.get(-1).numParameters, 8);
    await c.throws('get(4) is out of range', () => seq.get(4), /Module\.get/, /4/);

    // eval() reaches every descendant: dropout off, so forward = l2(relu(l1 x)).
    seq.eval();
    c.equal('eval() propagates', [seq.training, l1.training, drop.training], [false, false, false]);
    const xs = [0.5, -1, 2, 1, 0, -0.5];
    const X = tensor(xs, { shape: [2, 3] });
    const f = (x) => linear(linear(x, 2, 3, W1, 4, b1).map((v) => Math.max(v, 0)), 2, 4, W2, 2, null);
    c.close('Sequential forward = l2(relu(l1 x))', await arr(noGrad(() => seq.forward(X))), f(xs));
    const pre = seq.registerForwardPreHook((module, input) => {
      c.equal('the pre-hook gets the module', module.typeName, 'Sequential');
      return input.mul(2);
    });
    c.close('a forward pre-hook replaces the input', await arr(noGrad(() => seq.forward(X))), f(xs.map((v) => 2 * v)));
    pre.remove();
    c.close('after remove() the pre-hook is gone', await arr(noGrad(() => seq.forward(X))), f(xs));
    seq.train(true);
    c.equal('train(true) propagates', drop.training, true);
    seq.train(false);
    c.equal('train(false) is eval', drop.training, false);

    // zeroGrad clears every parameter's gradient.
    seq.forward(X).sum().backward();
    c.ok('backward fills the gradients', seq.parameters().every((p) => p.grad !== undefined));
    seq.zeroGrad();
    c.ok('zeroGrad clears them', seq.parameters().every((p) => p.grad === undefined));

    // stateDict -> safetensors bytes -> loadStateDict into a fresh model; to(device).
    const bytes = await seq.stateDict();
    c.equal('stateDict names (loadSafetensors)', Object.keys(skiff.loadSafetensors(bytes)).sort(), ['0.bias', '0.weight', '3.weight']);
    const fresh = new nn.Sequential([new nn.Linear(3, 4), new nn.ReLU(), new nn.Dropout(0.5), new nn.Linear(4, 2, { bias: false })]);
    c.equal('loadStateDict reports nothing missing', fresh.loadStateDict(bytes), { missingKeys: [], unexpectedKeys: [] });
    fresh.eval();
    c.close('the loaded model computes the same', await arr(noGrad(() => fresh.forward(X))), f(xs));
    const device = skiff.getDefaultDevice();
    fresh.to(device);
    c.ok(`to('${device}') keeps the parameters there`, fresh.parameters().every((p) => p.device === device));

    // ModuleList and ModuleDict hold state but have no forward.
    const list = new nn.ModuleList([l1, l2]);
    c.equal('ModuleList names', list.namedParameters().map(([n]) => n), ['0.weight', '0.bias', '1.weight']);
    c.equal('ModuleList get(1)', list.get(1).toString(), 'Linear(in_features=4, out_features=2, bias=False)');
    c.equal('ModuleList() is empty', new nn.ModuleList().numParameters, 0);
    const dict = new nn.ModuleDict({ enc: l1, dec: l2 });
    c.equal('ModuleDict names', dict.namedParameters().map(([n]) => n), ['enc.weight', 'enc.bias', 'dec.weight']);
    c.equal('ModuleDict get(key)', dict.get('dec').numParameters, 8);
    c.equal('ModuleDict children()', dict.children().map(([k]) => k), ['enc', 'dec']);
    await c.throws('ModuleDict get of a missing key', () => dict.get('nope'), /Module\.get/, /nope/);
    {
      // toDtype: every float parameter converted in place, still trainable,
      // and the forward in that dtype gives the f32 forward's values rounded.
      // Modules live on the pass's device; float16 is a cpu dtype in both
      // passes (WebGPU without shader-f16 refuses it), float64 too.
      const m = new nn.Linear(3, 2);
      const dtypes = () => m.parameters().map((p) => [p.dtype, p.requiresGrad]);
      if (m.parameters()[0].device === 'cpu') {
        const x = tensor([[0.5, -1.25, 2]]);
        const want = await arr(m.forward(x));
        m.toDtype('float16');
        c.equal('toDtype: the parameters are float16', dtypes(), [
          ['float16', true],
          ['float16', true],
        ]);
        const got = m.forward(x.toDtype('float16'));
        c.equal('toDtype: the forward runs in float16', got.dtype, 'float16');
        c.close('toDtype: the f32 outputs, rounded', await arr(got), want, { atol: 1e-2, rtol: 1e-2 });
        m.toDtype('float32');
      } else {
        await c.throws('toDtype: float64 on the GPU', () => m.toDtype('float64'), /Module\.toDtype/);
      }
      c.equal('toDtype: float32 parameters, still trainable', dtypes(), [
        ['float32', true],
        ['float32', true],
      ]);
    }
    return c.report();
  },

  /** MultiheadAttention against attention written with tensor ops (PyTorch's definition). */
  async attention(skiff) {
    const { tensor, nn, noGrad } = skiff;
    const c = checker();
    skiff.manualSeed(3);
    const [E, H, B, L, S] = [4, 2, 2, 3, 3];
    const mha = new nn.MultiheadAttention(E, H);
    // Non-zero biases, so a bias left out would show.
    const bias = (n) => tensor(Array.from({ length: n }, (_, k) => 0.1 * (k % 5) - 0.2));
    mha.loadStateDict({ in_proj_bias: bias(3 * E), 'out_proj.bias': bias(E) }, { strict: false });
    const p = Object.fromEntries(mha.namedParameters());
    c.equal('MultiheadAttention parameter names', Object.keys(p).sort(), ['in_proj_bias', 'in_proj_weight', 'out_proj.bias', 'out_proj.weight']);
    const data = (n, s) => tensor(Array.from({ length: n }, (_, k) => Math.sin(s * (k + 1))), { shape: [B, n / B / E, E] });
    const [q, k, v] = [data(B * L * E, 1.3), data(B * S * E, 0.7), data(B * S * E, 2.1)];

    // The definition: per-head softmax(q Wq^T k Wk^T / sqrt(E/H) + mask) v Wv^T, heads concatenated, out_proj.
    const reference = (mask, causal) =>
      noGrad(() => {
        const proj = (x, i) =>
          x
            .matmul(p.in_proj_weight.narrow(0, i * E, E).t())
            .add(p.in_proj_bias.narrow(0, i * E, E))
            .reshape([B, -1, H, E / H])
            .permute([0, 2, 1, 3]);
        let scores = proj(q, 0).matmul(proj(k, 1).transpose(-2, -1)).div(Math.sqrt(E / H));
        if (mask) scores = scores.maskedFill(mask.reshape([B, 1, 1, S]), -1e30);
        if (causal) scores = scores.maskedFill(tensor(Array.from({ length: L * S }, (_, t) => t % S > Math.floor(t / S)), { shape: [L, S] }), -1e30);
        const weights = scores.softmax(-1);
        const heads = weights.matmul(proj(v, 2)).permute([0, 2, 1, 3]).reshape([B, L, E]);
        return [heads.matmul(p['out_proj.weight'].t()).add(p['out_proj.bias']), weights];
      });
    const compare = async (label, [out, w], [rout, rw]) => {
      c.equal(`${label}: shapes`, [Array.from(out.shape), Array.from(w.shape)], [[B, L, E], [B, H, L, S]]);
      c.close(`${label}: output`, await arr(out), await arr(rout));
      c.close(`${label}: weights`, await arr(w), await arr(rw));
    };
    await compare('attention(q, k, v)', noGrad(() => mha.attention(q, k, v)), reference(null, false));
    const mask = tensor([false, true, false, false, false, true], { shape: [B, S] });
    const masked = noGrad(() => mha.attention(q, k, v, { keyPaddingMask: mask }));
    await compare('keyPaddingMask', masked, reference(mask, false));
    const mw = await arr(masked[1]);
    const maskedAt = (i) => [1, 2][Math.floor(i / (H * L * S))] === i % S; // key 1 of batch 0, key 2 of batch 1
    c.ok('masked keys get weight 0', mw.every((x, i) => !maskedAt(i) || x === 0), `${mw}`);
    await compare('causal: true', noGrad(() => mha.attention(q, k, v, { causal: true })), reference(null, true));
    // forward(x) is self-attention; a causal module masks by default.
    const self = noGrad(() => mha.forward(q));
    c.close('forward(x) = attention(x, x, x)', await arr(self), await arr(noGrad(() => mha.attention(q, q, q)[0])));
    const causal = new nn.MultiheadAttention(E, H, { causal: true, bias: false });
    c.equal('bias: false has no biases', causal.namedParameters().map(([n]) => n).sort(), ['in_proj_weight', 'out_proj.weight']);
    c.equal('MultiheadAttention toString', causal.toString(), 'MultiheadAttention(\n  embed_dim=4, num_heads=2, bias=False, causal=True\n  (out_proj): Linear(in_features=4, out_features=4, bias=False)\n)');
    const cw = await arr(noGrad(() => causal.attention(q, q, q)[1]));
    c.ok('a causal module masks later keys', cw.every((x, i) => i % S <= Math.floor(i / S) % L || x === 0));
    await c.throws('attention needs [B, T, E] inputs', () => mha.attention(tensor([1, 2, 3, 4]), k, v), /^attention: MultiheadAttention:/, /\[4\]/);
    return c.report();
  },
};
