// The package in Node (no browser): `import ... from 'skiff-ml'` resolves
// through package.json "exports" (the "node" condition: web/node.js, which
// reads pkg/skiff_bg.wasm from disk). Node has no WebGPU, so init() falls
// back to the cpu and says why; then the shared scenarios run as in the
// browser passes, with the same assertions. Last, the guide's JS examples
// (examples/js/, which docs/ quotes) run in a project that installed the
// package, each checked against what it should print.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { PUBLISHED_PKG_DIR, REPO, assertBuilt } from './lib/browser.mjs';
import { importForNode, installPackage } from './lib/package.mjs';
import { expect, namesOp, TRAIN_STEPS } from './lib/expect.mjs';
import { scenarios } from './pages/scenarios.js';
import { nativeModel } from './lib/native-model.mjs';

describe('node: the package entry web/node.js', { timeout: 120_000 }, () => {
  let skiff;
  let info;
  let entry;
  let cleanup = () => {};
  before(async () => {
    assertBuilt({ wrapper: true });
    ({ skiff, entry, cleanup } = await importForNode('skiff-node-'));
    info = await skiff.init();
  });
  after(() => cleanup());

  // The package's own name resolves through its "exports" to the published pkg/ (npm run build).
  const published = fs.existsSync(path.join(PUBLISHED_PKG_DIR, 'skiff.js'));
  test("the 'skiff-ml' import resolves to web/node.js", { skip: !published && 'pkg/ is not built (npm run build)' }, async () => {
    const [byName, direct] = await Promise.all([import('skiff-ml'), import('../../web/node.js')]);
    assert.equal(byName.init, direct.init);
  });

  test('init() falls back to the cpu with a reason', async () => {
    assert.equal(info.device, 'cpu');
    assert.equal(info.adapter, null);
    assert.equal(typeof info.reason, 'string');
    assert.match(info.reason, /webgpu|navigator\.gpu/i, `reason: ${info.reason}`);
  });

  test("init({ device: 'webgpu' }) rejects with an Error naming init", async () => {
    await assert.rejects(skiff.init({ device: 'webgpu' }), (e) => {
      assert.ok(e instanceof Error);
      assert.match(e.message, /^init:/);
      return true;
    });
    // the cpu backend chosen before still works
    assert.deepEqual(Array.from(await skiff.tensor([1, 2]).add(1).data()), [2, 3]);
  });

  test('SKIFF_DETERMINISTIC=1 turns deterministic mode on at init(); a value that is not on or off fails init()', () => {
    const child = (value) =>
      spawnSync(
        process.execPath,
        ['--input-type=module', '-e', `const s = await import(${JSON.stringify(entry)}); await s.init(); console.log(s.isDeterministic());`],
        { env: { ...process.env, SKIFF_DETERMINISTIC: value }, encoding: 'utf8', timeout: 60_000 },
      );
    for (const [value, on] of [['1', 'true'], ['yes', 'true'], ['0', 'false'], ['', 'false']]) {
      const r = child(value);
      assert.equal(r.status, 0, `SKIFF_DETERMINISTIC=${value}: ${r.stderr}`);
      assert.equal(r.stdout.trim(), on, `SKIFF_DETERMINISTIC=${JSON.stringify(value)}`);
    }
    const bad = child('maybe');
    assert.notEqual(bad.status, 0, 'SKIFF_DETERMINISTIC=maybe must fail init()');
    assert.match(bad.stderr, /init: .*SKIFF_DETERMINISTIC="maybe" is not one of 1, 0, true, false/);
    assert.equal(skiff.isDeterministic(), false, 'this process was started without the variable');
  });

  const run = (name, ...args) => scenarios[name](skiff, ...args);
  test('basics', async () => expect.basics(await run('basics'), { device: 'cpu' }));
  test('autodiff: double grad', async () => expect.doubleGrad(await run('doubleGrad')));
  test('autodiff: grad options', async () => expect.gradOptions(await run('gradOptions')));
  test('autodiff: hooks', async () => expect.hooks(await run('hooks')));
  test('autodiff: custom Function', async () => expect.customFunction(await run('customFunction')));
  test('autodiff: retainGraph', async () => expect.retainGraph(await run('retainGraph')));
  test('autodiff: noGrad', async () => expect.noGrad(await run('noGrad')));
  test('nn: Linear, Conv2d, forward hook', async () => expect.modules(await run('modules')));
  test('optim: SGD, Adam, StepLR', async () => expect.optimizers(await run('optimizers')));
  test(`training: ${TRAIN_STEPS} Adam steps`, async (t) => {
    const r = await run('training', { steps: TRAIN_STEPS });
    t.diagnostic(`loss ${r.losses.map(([i, l]) => `${i}:${l.toFixed(4)}`).join(' ')}; ${r.msPerStep.toFixed(2)} ms/step`);
    expect.training(r);
  });
  test('jit: a compiled Adam step matches eager steps', async () => expect.jit(await run('jit')));
  test('jit: a model exported natively predicts the same in wasm', { timeout: 900_000 }, async () => {
    const { bytes, expected } = nativeModel();
    expect.inferenceModel(await run('inferenceModel', { bytes, expected, device: 'cpu' }), expected);
  });
  test('memory: tidy semantics', async () => expect.tidySemantics(await run('tidySemantics')));
  test('memory: 200 steps in tidy, no leaks', async () => expect.memoryTidy(await run('memoryTidy', { steps: 200 }), { gpu: false }));
  test('errors name the op', async (t) => {
    for (const r of await run('errors', { gpu: false })) await t.test(r.label, () => namesOp(r, r.names, r.label));
  });
  test('still works after the errors', async () => expect.stillWorks(await run('stillWorks')));
});

describe("node: the guide's JS examples (examples/js/)", { timeout: 900_000 }, () => {
  let dir;
  before(() => {
    assertBuilt({ wrapper: true });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-examples-'));
    installPackage(dir);
    fs.cpSync(path.join(REPO, 'examples/js'), dir, { recursive: true });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  /** Runs `node examples/js/<file> ...args` in the project; its stdout lines. */
  const run = (file, ...args) => {
    const r = spawnSync(process.execPath, [file, ...args], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
    assert.equal(r.status, 0, `${file} failed:\n${r.stdout}\n${r.stderr}`);
    return r.stdout.trim().split('\n');
  };
  const numbers = (line) => line.split(': ')[1].split(', ').map(Number);
  const sigmoid = (v) => 1 / (1 + Math.exp(-v));

  test('amp.mjs: XOR learned under autocast with a GradScaler', () => {
    const lines = run('amp.mjs');
    assert.equal(lines[0], 'autocast computes in float16', 'the cpu runs float16');
    const losses = lines.map((l) => l.match(/^step \d+: loss ([\d.]+) \(float32\)$/)).filter(Boolean).map((m) => Number(m[1]));
    assert.equal(losses.length, 4, lines.join('\n'));
    assert.ok(losses[0] > 0.5 && losses[3] < 0.1, `the loss falls: ${losses}`);
    assert.ok(lines.includes('predictions: 0, 1, 1, 0'), lines.join('\n'));
  });

  test('custom-op.mjs: SiLU and its gradient', () => {
    const [values, grads] = run('custom-op.mjs').map(numbers);
    const xs = [-1, 0, 2];
    xs.forEach((v, i) => {
      assert.ok(Math.abs(values[i] - v * sigmoid(v)) < 1e-5, `silu(${v}) = ${values[i]}`);
      const d = sigmoid(v) * (1 + v * (1 - sigmoid(v)));
      assert.ok(Math.abs(grads[i] - d) < 1e-5, `silu'(${v}) = ${grads[i]}, not ${d}`);
    });
  });

  test('profile.mjs: the table and the Chrome trace of one step', () => {
    const lines = run('profile.mjs', dir);
    assert.match(lines[0], /^op\s+calls\s+host ms/);
    for (const op of ['matmul', 'adam_step']) assert.ok(lines.some((l) => l.startsWith(`${op} `)), `${op} in:\n${lines.join('\n')}`);
    const loss = Number(lines.at(-1).split(' ').at(-1));
    assert.ok(loss > 1 && loss < 4, `the step's loss is printed last: ${lines.at(-1)}`);
    const trace = JSON.parse(fs.readFileSync(path.join(dir, 'step.json'), 'utf8'));
    assert.ok(trace.traceEvents.some((e) => e.name === 'matmul'), 'the trace holds the matmuls');
  });

  test('leak.mjs: the leaking line, with its 100 tensors', () => {
    const source = fs.readFileSync(path.join(dir, 'leak.mjs'), 'utf8').split('\n');
    const line = source.findIndex((l) => l.includes('losses.push')) + 1;
    const rows = run('leak.mjs').filter((l) => l.includes(`leak.mjs:${line}:`));
    assert.ok(rows.length > 0 && rows.every((r) => /\b100\b/.test(r)), `100 tensors each from leak.mjs:${line}:\n${rows.join('\n')}`);
  });

  test('determinism.mjs: deterministic mode on, three losses as bits', () => {
    const lines = run('determinism.mjs');
    assert.equal(lines[0], 'deterministic: true');
    const losses = lines.slice(1).map((h) => {
      assert.match(h, /^[0-9a-f]{8}$/);
      return new Float32Array(new Uint32Array([parseInt(h, 16)]).buffer)[0];
    });
    assert.equal(losses.length, 3);
    assert.ok(losses.every((l) => Math.abs(l - Math.log(10)) < 0.5), `about ln(10) for 10 random classes: ${losses}`);
  });

  test('jit.mjs: two captures, then replays', () => {
    const lines = run('jit.mjs');
    assert.equal(lines.filter((l) => /^loss \d+\.\d{4}$/.test(l)).length, 8, lines.join('\n'));
    assert.ok(lines.includes('captures 2, replays 6'), lines.join('\n'));
    assert.match(lines.find((l) => l.endsWith('kernels per step:')) ?? '', /^\d+ kernels per step:$/);
  });

  test('inference-model.mjs: a model exported natively predicts what it predicted natively', () => {
    const { bytes, expected } = nativeModel();
    const exported = path.join(dir, 'export');
    fs.mkdirSync(exported, { recursive: true });
    fs.writeFileSync(path.join(exported, 'model.safetensors'), new Uint8Array(bytes));
    fs.writeFileSync(path.join(exported, 'expected.json'), JSON.stringify(expected));
    const lines = run('inference-model.mjs', exported);
    const classes = expected.logitsShape[1];
    const argmax = (row) => {
      const v = expected.logits.slice(row * classes, (row + 1) * classes);
      return v.indexOf(Math.max(...v));
    };
    const want = Array.from({ length: expected.logitsShape[0] }, (_, row) => argmax(row));
    assert.deepEqual(numbers(lines.find((l) => l.startsWith('predictions: '))), want);
    const worst = Number(lines.find((l) => l.startsWith('largest difference')).split(': ')[1]);
    assert.ok(worst < 1e-4, `within 1e-4 of the native logits: ${worst}`);
  });
});
