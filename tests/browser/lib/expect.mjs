// The assertions of the shared scenarios (tests/browser/pages/scenarios.js),
// with their analytic truths. Used by the browser passes and the Node test.
import assert from 'node:assert/strict';

/** Training must bring the XOR-blob cross-entropy (ln 2 = 0.693 at chance) below this. */
export const TRAIN_STEPS = 100;
// Measured: ~0.001 after 100 steps and ~0.01 after 20, on the cpu and on SwiftShader.
export const TRAIN_LOSS_BELOW = 0.05;

/** |a - b| <= atol + rtol |b| elementwise, with a message naming the index. */
export function close(actual, expected, { atol = 1e-5, rtol = 1e-4, what = 'values' } = {}) {
  const a = Array.isArray(actual) || ArrayBuffer.isView(actual) ? Array.from(actual) : [actual];
  const e = Array.isArray(expected) || ArrayBuffer.isView(expected) ? Array.from(expected) : [expected];
  assert.equal(a.length, e.length, `${what}: length ${a.length}, expected ${e.length}`);
  a.forEach((v, i) => {
    const tol = atol + rtol * Math.abs(e[i]);
    assert.ok(
      typeof v === 'number' && Math.abs(v - e[i]) <= tol,
      `${what}[${i}] = ${v}, expected ${e[i]} (tolerance ${tol.toExponential(2)})\n  got      ${JSON.stringify(a)}\n  expected ${JSON.stringify(e)}`,
    );
  });
}

const flat = (x) => (Array.isArray(x) ? x.flat(Infinity) : [x]);

/** The Error the scenario captured must exist and name one of `names` ("op: ..."). */
export function namesOp(err, names, label) {
  assert.ok(err.threw, `${label}: expected an Error, but nothing was thrown`);
  assert.ok(err.isError, `${label}: expected an Error object, got ${err.message}`);
  const alt = names.map((n) => n.replace(/[.]/g, '\\.')).join('|');
  assert.match(
    err.message,
    new RegExp(`(^|[^A-Za-z0-9_.])(${alt}):`, 'i'),
    `${label}: the message should name the op (one of ${names.join(', ')} followed by ':'), got: ${err.message}`,
  );
}

export const expect = {
  basics(r, { device }) {
    assert.deepEqual(r.scalar, { shape: [], item: 3, array: 3 }, 'tensor(3)');
    assert.deepEqual(
      r.nested,
      {
        shape: [2, 2],
        dtype: 'float32',
        device,
        array: [
          [1, 2],
          [3, 4],
        ],
      },
      'tensor(nested arrays)',
    );
    assert.deepEqual(
      r.typed,
      {
        shape: [2, 3],
        dtype: 'int32',
        array: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      },
      'tensor(Int32Array, { shape })',
    );
    assert.deepEqual(r.float64, { dtype: 'float64', device: 'cpu', values: [0.1, 0.2] }, 'tensor(Float64Array)');
    assert.deepEqual(r.bool, { dtype: 'bool', array: [true, false, true] }, 'tensor(booleans)');
    assert.deepEqual(r.zeros, [0, 0, 0, 0, 0, 0], 'zeros');
    assert.deepEqual(r.ones3, [3, 3], 'ones * 3');
    assert.deepEqual(r.full, [7, 7], 'full');
    assert.deepEqual(r.arange, [0, 1, 2, 3, 4], 'arange(0, 5)');
    close(r.linspace, [0, 0.25, 0.5, 0.75, 1], { what: 'linspace(0, 1, 5)' });
    assert.deepEqual(
      r.eye,
      [
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
      ],
      'eye(3)',
    );
    assert.deepEqual(r.seeded.a1, r.seeded.a2, 'manualSeed(7) twice gives the same randn');
    assert.ok(new Set(r.seeded.a1).size === 6, 'randn values are distinct');
    assert.ok(
      r.rand.every((v) => v >= 0 && v < 1),
      `rand in [0, 1): ${r.rand}`,
    );
    assert.ok(new Set(r.rand).size > 60, 'rand values are (almost all) distinct');
    assert.equal(r.randint.dtype, 'int32', 'randint dtype');
    assert.ok(
      r.randint.values.every((v) => v === 0 || v === 1 || v === 2),
      `randint(0, 3) values: ${r.randint.values}`,
    );
    assert.equal(new Set(r.randint.values).size, 3, 'randint(0, 3) hits 0, 1 and 2 in 64 draws');
    assert.deepEqual(r.matmul, [[17], [39]], 'matmul');
    assert.deepEqual(r.addScalar, [2, 3, 4], 'add(1)');
    assert.deepEqual(r.subTensor, [4, 5], 'sub(tensor)');
    assert.deepEqual(
      r.mulBroadcast,
      [
        [10, 200],
        [30, 400],
      ],
      'mul (broadcast)',
    );
    assert.deepEqual(r.divScalar, [0.5, 1.5], 'div(2)');
    assert.deepEqual(r.relu, [0, 0, 2], 'relu');
    assert.equal(r.sumAll, 10, 'sum()');
    assert.deepEqual(r.sumKeep, { shape: [2, 1], array: [[3], [7]] }, 'sum([1], { keepdim: true })');
    close(r.mean, 2.5, { what: 'mean()' });
    const e = [1, 2, 3].map(Math.exp);
    const z = e.reduce((p, q) => p + q);
    close(flat(r.softmax), e.map((v) => v / z), { what: 'softmax' });
    close(r.crossEntropy, -Math.log(Math.exp(2) / (Math.exp(2) + Math.exp(1) + 1)), { what: 'crossEntropy' });
    // permute([2, 0, 1]) of arange(24) as [2, 3, 4]: out[i][j][k] = in[j][k][i]
    assert.deepEqual(r.permute.shape, [4, 2, 3], 'permute shape');
    assert.deepEqual(
      r.permute.second,
      [
        [1, 5, 9],
        [13, 17, 21],
      ],
      'permute values',
    );
    assert.deepEqual(r.reshape, [4], 'reshape');
    assert.match(r.string, /2, 2/, `toString names the shape: ${r.string}`);
    assert.equal(r.disposed, true, 'isDisposed after dispose()');
  },

  devices(r) {
    assert.equal(r.gpuDevice, 'webgpu');
    assert.equal(r.cpuDevice, 'cpu');
    namesOp(r.blocked, ['to'], "to('cpu') of a webgpu tensor (a blocking readback)");
    assert.match(r.blocked.message, /toAsync/, `to('cpu') should point at toAsync: ${r.blocked.message}`);
    assert.deepEqual(r.cpuValues, [1, 2, 3], "toAsync('cpu') values");
    assert.equal(r.backDevice, 'webgpu');
    assert.deepEqual(r.backValues, [2, 4, 6], "to('webgpu') then mul(2)");
    namesOp(r.mixed, ['add'], 'add of a webgpu and a cpu tensor');
  },

  doubleGrad(r) {
    close(r.g1, r.xs.map((x) => 3 * x * x), { what: 'd/dx sum(x^3) = 3x^2' });
    close(r.g2, r.xs.map((x) => 6 * x), { what: 'd2/dx2 = 6x' });
    close(r.g3, [6, 6, 6], { what: 'd3/dx3 = 6' });
    close(r.viaBackward, r.xs.map((x) => 6 * x), { what: 'backward({ createGraph }) then grad: 6x' });
  },

  gradOptions(r) {
    assert.deepEqual(r.weighted, [2, 20, 200], 'grad with gradOutputs [1, 10, 100] of 2x');
    assert.deepEqual(r.allowUnused.first, [2, 2, 2], 'allowUnused: the used input');
    assert.equal(r.allowUnused.second, 'undefined', 'allowUnused: the unused input gets undefined');
    namesOp(r.notAllowed, ['grad'], 'grad of an unused input without allowUnused');
  },

  hooks(r) {
    assert.equal(r.calls, 1, 'the leaf hook ran once');
    assert.deepEqual(r.doubled, [4, 8, 12], 'a doubling hook on x: 2 * 2x');
    assert.deepEqual(r.accumulated, [6, 12, 18], 'after remove(): 4x + 2x accumulated');
    assert.deepEqual(r.intermediate, [20, 40], 'hook x10 on u = w^2: 10 * 2w');
    assert.deepEqual(r.observed.seen, [3], 'an observing hook sees the gradient shape');
    assert.deepEqual(r.observed.grad, [18, 36, 54], 'a hook returning undefined leaves the gradient: 18z');
  },

  customFunction(r) {
    close(r.forward, r.xs.map((x) => x ** 3), { what: 'Cube forward', rtol: 1e-5 });
    close(r.cubeGrad, r.xs.map((x) => 3 * x * x), { what: 'Cube backward = 3x^2', rtol: 1e-5 });
    close(r.cubeGrad, r.cubeFd, { what: 'Cube backward vs finite differences', atol: 2e-3, rtol: 2e-3 });
    close(r.chained, r.xs.map((x) => 9 * x ** 8), { what: 'Cube(Cube(x)) backward = 9x^8', rtol: 1e-4 });
    close(r.mulAdd.ga, r.bs.map((b) => b + 1), { what: 'MulAdd d/da = b + 1' });
    close(r.mulAdd.gb, r.as, { what: 'MulAdd d/db = a' });
    close(r.mulAdd.ga, r.mulAdd.fdA, { what: 'MulAdd d/da vs finite differences', atol: 2e-3, rtol: 2e-3 });
    close(r.mulAdd.gb, r.mulAdd.fdB, { what: 'MulAdd d/db vs finite differences', atol: 2e-3, rtol: 2e-3 });
    assert.deepEqual(r.reverse.forward, [1, 2], 'gradient reversal forward is the identity');
    assert.deepEqual(r.reverse.grad, [-1, -2], 'gradient reversal backward (-0.5 g of 2r) ran, not autodiff');
  },

  retainGraph(r) {
    assert.deepEqual(r.first, [2, 4, 6], 'first backward: 2x');
    const e = r.second;
    assert.ok(e.threw && e.isError, `a second backward without retainGraph must throw an Error: ${e.message}`);
    assert.match(e.message, /backward/, `the error should say it is about backward: ${e.message}`);
    assert.match(e.message, /retain_?graph/i, `the error should point at retainGraph: ${e.message}`);
    assert.deepEqual(r.retained, [4, 8, 12], 'with retainGraph the second backward accumulates: 2x + 2x');
  },

  noGrad(r) {
    assert.deepEqual(r, { leaf: true, inside: false, after: true, asyncInside: false });
  },

  modules(r) {
    const { params, x, y, shape } = r.linear;
    const W = params['[3,2]'];
    const b = params['[3]'];
    assert.ok(W && b, `Linear(2, 3) parameters of shapes [3,2] and [3]: ${JSON.stringify(Object.keys(params))}`);
    assert.deepEqual(shape, [2, 3], 'Linear(2, 3) on [2, 2]');
    const expected = [];
    for (let i = 0; i < 2; i++) for (let o = 0; o < 3; o++) expected.push(x[2 * i] * W[2 * o] + x[2 * i + 1] * W[2 * o + 1] + b[o]);
    close(y, expected, { what: 'Linear: x W^T + b' });
    assert.ok(
      W.every((v) => Math.abs(v) <= 1 / Math.sqrt(2)) && new Set(W).size === 6,
      `Linear init: distinct values within 1/sqrt(in) = 0.707: ${W}`,
    );
    assert.deepEqual(r.hook.seen, { input: [2, 2], output: [2, 3] }, 'the forward hook sees input and output');
    close(r.hook.hooked, expected.map((v) => 2 * v), { what: 'a forward hook returning output * 2' });
    close(r.hook.unhooked, expected, { what: 'after remove()' });

    const cw = r.conv.params['[1,1,2,2]'];
    const cb = r.conv.params['[1]'];
    assert.ok(cw && cb, `Conv2d(1, 1, 2) parameters: ${JSON.stringify(Object.keys(r.conv.params))}`);
    assert.deepEqual(r.conv.shape, [1, 1, 2, 2], 'Conv2d(1, 1, 2) on [1, 1, 3, 3]');
    const conv = [];
    for (let i = 0; i < 2; i++) {
      for (let j = 0; j < 2; j++) {
        let acc = cb[0];
        for (let a = 0; a < 2; a++) for (let c = 0; c < 2; c++) acc += cw[2 * a + c] * ((i + a) * 3 + (j + c));
        conv.push(acc);
      }
    }
    close(r.conv.y, conv, { what: 'Conv2d: cross-correlation + bias' });
  },

  optimizers(r) {
    const c = [1, 2, 3];
    const p0 = [1, -2, 3];
    close(r.sgdStep, p0.map((p, i) => p - 0.1 * 2 * c[i] * p), { what: 'SGD: p - lr g' });
    if (r.gradAfterZeroGrad !== null) assert.deepEqual(r.gradAfterZeroGrad, [0, 0, 0], 'zeroGrad clears the gradient');
    // Adam (betas 0.9, 0.999, eps 1e-8), two steps, in float64
    const lr = 0.01;
    let q = p0.slice();
    let m = [0, 0, 0];
    let v = [0, 0, 0];
    const expected = [];
    for (let t = 1; t <= 2; t++) {
      const g = q.map((x, i) => 2 * c[i] * x);
      m = m.map((mi, i) => 0.9 * mi + 0.1 * g[i]);
      v = v.map((vi, i) => 0.999 * vi + 0.001 * g[i] * g[i]);
      q = q.map((x, i) => x - (lr * (m[i] / (1 - 0.9 ** t))) / (Math.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8));
      expected.push(q);
    }
    close(r.adamSteps[0], expected[0], { what: 'Adam step 1 (p - lr sign(g))', atol: 1e-6 });
    close(r.adamSteps[1], expected[1], { what: 'Adam step 2', atol: 1e-6 });
    close(r.stepLR, [1 - 0.1 - 0.1 - 0.05 - 0.05], { what: 'SGD under StepLR(stepSize 2, gamma 0.5)' });
  },

  training(r) {
    const [, first] = r.losses[0];
    assert.ok(first > 0.5 && first < 1.2, `the initial loss ${first} should be near ln 2 = 0.69`);
    assert.ok(
      r.finalLoss < TRAIN_LOSS_BELOW,
      `after ${TRAIN_STEPS} Adam steps the loss should fall below ${TRAIN_LOSS_BELOW}; losses: ${JSON.stringify(r.losses)}`,
    );
    assert.ok(r.accuracy >= 0.95, `training accuracy ${r.accuracy} should be >= 0.95`);
    assert.equal(r.parameters, 4, 'two Linear layers: 2 weights and 2 biases');
    assert.equal(r.stateDict.isUint8Array, true, 'stateDict() is a Uint8Array');
    const shapes = Object.values(r.stateDict.shapes)
      .map((s) => JSON.stringify(s))
      .sort();
    assert.deepEqual(shapes, ['[16,2]', '[16]', '[2,16]', '[2]'].sort(), `safetensors shapes: ${JSON.stringify(r.stateDict.shapes)}`);
    assert.equal(r.restoredMatches, true, 'a model loaded from stateDict() computes the same logits');
  },

  memoryTidy(r, { gpu }) {
    assert.equal(r.first.scopes, 0, 'no scope left open after a step');
    assert.deepEqual(
      r.differing,
      [],
      `memory() must stay at its value after the first step (${JSON.stringify(r.first)}); it changed at: ${JSON.stringify(r.differing)}`,
    );
    assert.deepEqual(r.last, r.first);
    if (gpu) {
      assert.equal(typeof r.first.gpuLiveBytes, 'number', 'memory().gpu.liveBytes on the webgpu pass');
      assert.ok(r.first.gpuLiveBytes > 0, 'the model lives on the GPU');
    } else {
      assert.equal(r.first.gpuLiveBytes, null, 'memory().gpu is null without a GPU');
    }
    assert.ok(r.loss < 0.6, `the model trained meanwhile (loss ${r.loss} after ${r.steps} steps)`);
  },

  tidySemantics(r) {
    assert.equal(r.interDisposed, true, 'an intermediate is disposed at the end of tidy');
    assert.deepEqual(r.outValues, [2, 4, 6], 'the returned tensor survives');
    assert.equal(r.keptAlive, true, 'keep() survives tidy');
    assert.deepEqual(r.keptValues, [4]);
    assert.equal(r.interAsyncDisposed, true, 'async tidy disposes intermediates');
    assert.deepEqual(r.outAsyncValues, [2], 'async tidy keeps tensors in a returned object');
    assert.deepEqual(r.nestedValues, [3], 'nested tidy');
    assert.equal(r.innerResultDisposed, true, "the inner tidy's result belongs to the outer scope");
    assert.ok(r.thrown.threw && r.thrown.message.includes('boom'), 'tidy rethrows');
    assert.equal(r.thrownInsideDisposed, true, 'a throwing tidy still disposes its tensors');
    assert.equal(r.scopesAfterThrow, 0, 'a throwing tidy closes its scope');
    assert.equal(r.liveBeforeDispose, 4, 'out, kept, outAsync.r and nested are live');
    assert.equal(r.liveAfterDispose, 0, 'dispose() of arrays and objects frees them');
  },

  errors(results) {
    const problems = [];
    for (const r of results) {
      try {
        namesOp(r, r.names, r.label);
      } catch (e) {
        problems.push(e.message);
      }
    }
    assert.deepEqual(problems, [], `${problems.length} of ${results.length} misuse cases:\n${problems.join('\n')}`);
  },

  jit(r) {
    assert.deepEqual(r.losses.compiled, r.losses.eager, 'compiled and eager steps give the same losses, bit for bit');
    assert.deepEqual(r.params[0], r.params[1], 'and leave the same parameters');
    assert.ok(r.losses.eager.at(-1) < r.losses.eager[0], `the loss falls: ${r.losses.eager}`);
    // Call 1 made Adam's state (not kept), call 2 captured the steady step.
    assert.deepEqual([r.counts.captures, r.counts.replays], [2, r.losses.eager.length - 2], r.log.join('\n'));
    assert.ok(r.counts.kernels > 0, 'the program has kernels');
    assert.match(r.log[0], /first call/);
    assert.match(r.program, /adam/, r.program);
    assert.match(r.program, /\$Adam\.lr\[0\]/, 'the learning rate is a host number the program reads');
    assert.equal(r.afterHalf.captures, 3, 'a batch-size change recaptures');
    assert.match(r.afterHalf.log.at(-1), /input 0 is float32 \[16, 2\]|input 0 is f32 \[16, 2\]/, r.afterHalf.log.at(-1));
    const e = r.errors;
    assert.equal(e.async?.op, 'jit', JSON.stringify(e.async));
    assert.match(e.async.message, /Promise/);
    assert.match(e.hook?.message ?? '', /hook/i, JSON.stringify(e.hook));
    assert.match(e.hook.message, /cannot be captured/);
    assert.equal(e.notFunction?.op, 'jit');
    assert.match(e.badOption?.message ?? '', /unknown option "cache"/);
    assert.equal(r.singleIsTensor, true, 'a function returning a Tensor returns a Tensor when replayed');
    assert.equal(r.pairLength, 2);
    assert.match(r.text, /^program\(/, r.text);
  },

  /** `want`: the native run's logits and shape (examples/export_model.rs). */
  inferenceModel(r, want) {
    assert.equal(r.isModel, true);
    assert.deepEqual(r.shape, want.logitsShape);
    assert.deepEqual(r.inputs, [{ dtype: 'float32', shape: want.shape }]);
    assert.match(r.programStart, /^program\(%0: f32\[512\] input 0\)/, r.programStart);
    // wasm's GEMM and libm are not the native ones (issue 21): close, not equal.
    r.got.forEach((g, i) => assert.ok(Math.abs(g - want.logits[i]) <= 1e-5 * (1 + Math.abs(want.logits[i])), `logit ${i}: ${g} vs ${want.logits[i]}`));
    const classes = want.logitsShape[1];
    const argmax = (v, row) => v.slice(row * classes, (row + 1) * classes).reduce((b, x, k, a) => (x > a[b] ? k : b), 0);
    for (let row = 0; row < want.logitsShape[0]; row++) assert.equal(argmax(r.got, row), argmax(want.logits, row), `prediction ${row}`);
    assert.match(r.errors.wrongShape?.message ?? '', /input 0 is float32 \[2, 1, 8, 8\]/, JSON.stringify(r.errors.wrongShape));
    assert.equal(r.errors.notAModel?.op, 'loadInferenceModel', JSON.stringify(r.errors.notAModel));
    assert.match(r.errors.plainWeights?.message ?? '', /not a saved skiff program/, JSON.stringify(r.errors.plainWeights));
    assert.match(r.freed?.message ?? '', /run/, `using a freed model: ${JSON.stringify(r.freed)}`);
  },

  stillWorks(r) {
    assert.deepEqual(r, { values: [2, 6], scopes: 0, gradEnabled: true });
  },
};
