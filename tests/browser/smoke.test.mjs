// Smoke test below the wrapper: the raw wasm-bindgen module (pkg/skiff.js)
// loads in headless Chromium, opens WebGPU on SwiftShader (webgpu pass) or
// runs on the cpu (WebGPU hidden), and reads a computed tensor back.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, openSession, loadSuite } from './lib/browser.mjs';

for (const pass of Object.values(PASSES)) {
  describe(`raw pkg smoke (${pass.name} pass)`, { timeout: 120_000 }, () => {
    let s;
    before(async () => {
      assertBuilt();
      s = await openSession(pass);
      await loadSuite(s, '/tests/browser/pages/raw-smoke.js');
    });
    after(() => s?.close());

    test('x + 1 computes and reads back', async () => {
      const r = await s.call('run', pass.name);
      assert.deepEqual(r.values, [2, 3, 4]);
      assert.deepEqual(r.shape, [3]);
      assert.equal(r.dtype, 'float32');
      assert.equal(r.hasGpu, pass.gpu, 'navigator.gpu presence');
      assert.equal(r.info.device, pass.name);
      assert.equal(r.device, pass.name);
      if (pass.gpu) {
        // the browser's own view of the adapter (skiff's report is checked by the wrapper suites)
        assert.equal(r.adapter?.architecture, 'swiftshader', `the SwiftShader adapter: ${JSON.stringify(r.adapter)}`);
        assert.ok(r.info.adapter, 'initBackend reports an adapter');
        assert.equal(r.info.adapter.backend, 'BrowserWebGpu');
        assert.equal(r.memory.gpu && typeof r.memory.gpu.liveBytes, 'number');
        assert.ok(r.memory.gpu.readbacks >= 1, 'the values came back from the GPU');
      } else {
        assert.equal(r.adapter, null, 'no WebGPU adapter in the cpu pass');
        assert.equal(r.info.adapter, null);
      }
      assert.equal(r.memory.tensors, 0, 'both handles were disposed');
    });
  });
}
