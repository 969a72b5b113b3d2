// The package in Node (no browser): `import ... from 'skiff'` resolves
// through package.json "exports" (the "node" condition: web/node.js, which
// reads pkg/skiff_bg.wasm from disk). Node has no WebGPU, so init() falls
// back to the cpu and says why; then the shared scenarios run as in the
// browser passes, with the same assertions.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PKG_DIR, REPO, assertBuilt } from './lib/browser.mjs';
import { installPackage } from './lib/package.mjs';
import { expect, namesOp, TRAIN_STEPS } from './lib/expect.mjs';
import { scenarios } from './pages/scenarios.js';

describe('node: the package entry web/node.js', { timeout: 120_000 }, () => {
  let skiff;
  let info;
  let tmp;
  before(async () => {
    assertBuilt({ wrapper: true });
    if (PKG_DIR === path.join(REPO, 'pkg')) {
      // the package's own name resolves through its "exports" (self-reference)
      skiff = await import('skiff');
    } else {
      // a development build (SKIFF_TEST_PKG_DIR): an installed copy of the package
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-node-'));
      skiff = await import(pathToFileURL(path.join(installPackage(tmp), 'web/node.js')).href);
    }
    info = await skiff.init();
  });
  after(() => tmp && fs.rmSync(tmp, { recursive: true, force: true }));

  test("the 'skiff' import resolves to web/node.js", { skip: PKG_DIR !== path.join(REPO, 'pkg') }, async () => {
    const direct = await import('../../web/node.js');
    assert.equal(skiff.init, direct.init);
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
  test('memory: tidy semantics', async () => expect.tidySemantics(await run('tidySemantics')));
  test('memory: 200 steps in tidy, no leaks', async () => expect.memoryTidy(await run('memoryTidy', { steps: 200 }), { gpu: false }));
  test('errors name the op', async (t) => {
    for (const r of await run('errors', { gpu: false })) await t.test(r.label, () => namesOp(r, r.names, r.label));
  });
  test('still works after the errors', async () => expect.stillWorks(await run('stillWorks')));
});
