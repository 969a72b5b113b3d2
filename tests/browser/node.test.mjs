// The package in Node (no browser): `import ... from 'skiff-ml'` resolves
// through package.json "exports" (the "node" condition: web/node.js, which
// reads pkg/skiff_bg.wasm from disk). Node has no WebGPU, so init() falls
// back to the cpu and says why; then the shared scenarios run as in the
// browser passes, with the same assertions.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { PUBLISHED_PKG_DIR, assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';
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
