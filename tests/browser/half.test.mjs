// float16 in the browser (pages/half.js): on the wasm cpu backend in both
// passes, and on WebGPU over SwiftShader, which has no shader-f16, the clear
// error that names the missing feature. Native f16 GPU kernels are tested on
// lavapipe (tests/gpu_backend/half.rs, tests/gpu_backend/half_registry.rs).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, openSession, loadSuite } from './lib/browser.mjs';

const f16 = (v) => {
  // Round a number to the nearest float16 (ties to even), as a JS number.
  if (!Number.isFinite(v) || Math.abs(v) >= 65520) return Math.sign(v) * Infinity;
  const e = Math.max(Math.floor(Math.log2(Math.abs(v))), -14);
  const step = 2 ** (e - 10);
  const q = v / step;
  const r = Math.round(q);
  const even = Math.abs(q - Math.trunc(q)) === 0.5 ? 2 * Math.round(q / 2) : r;
  return even * step;
};

async function cpuChecks(s) {
  const r = await s.call('onTheCpu');
  assert.equal(r.dtype, 'float16');
  assert.deepEqual(r.values, [f16(0.1), 1, Infinity, -2.5]);
  assert.equal(Math.fround(0.1) === r.values[0], false, 'float16 0.1 is not float32 0.1');
  // [[1, 2], [3, 4]] x [[0.5, -1], [2, 0.25]]
  assert.deepEqual(r.product, [4.5, -0.5, 9.5, -2]);
  assert.equal(r.productDtype, 'float16');
  // d/da sum((a b)^2) = 2 (a b) b^T
  assert.deepEqual(r.grad, [2 * (4.5 * 0.5 - 0.5 * -1), 2 * (4.5 * 2 - 0.5 * 0.25), 2 * (9.5 * 0.5 - 2 * -1), 2 * (9.5 * 2 - 2 * 0.25)]);
  assert.equal(r.gradDtype, 'float16');
  assert.deepEqual(r.cast, [f16(0.1), 3]);
  assert.deepEqual(r.backToFloat32, [f16(0.1), 3]);
  assert.equal(r.badDtype.kind, 'argument');
  assert.match(r.badDtype.message, /'float16'/);
}

for (const pass of [PASSES.webgpu, PASSES.cpu]) {
  describe(`float16 (${pass.name} pass)`, { timeout: 300_000 }, () => {
    let s;
    let info;
    before(async () => {
      assertBuilt({ wrapper: true });
      s = await openSession(pass);
      await loadSuite(s, '/tests/browser/pages/half.js');
      info = await s.call('setup', pass.gpu ? 'webgpu' : 'cpu');
    });
    after(() => s?.close());

    test('float16 tensors compute on the wasm cpu backend: casts, a product, gradients', async () => cpuChecks(s));

    test('autocast and GradScaler: dtypes, one readback per step, a skipped step on inf gradients', async () => {
      const r = await s.call('mixedPrecision', pass.gpu ? 'webgpu' : 'cpu');
      const half = pass.gpu ? 'float32' : 'float16'; // SwiftShader has no shader-f16
      assert.equal(r.autocast.dtype, half);
      if (pass.gpu) {
        assert.match(r.autocast.reason, /has no shader-f16: autocast computes in float32 there/);
        assert.equal(r.warnings.length, 1, `one console warning: ${r.warnings}`);
        assert.match(r.warnings[0], /shader-f16/);
      } else {
        assert.equal(r.autocast.reason, null);
        assert.deepEqual(r.warnings, []);
      }
      assert.deepEqual(r.dtypes, { matmul: half, softmax: 'float32', sum: 'float32', relu: half, enabled: true });
      assert.equal(r.after, false, 'autocast is off after its scope');
      assert.deepEqual(r.steps.map((t) => t.stepped), [true, false, true, true]);
      assert.ok(r.steps.every((t) => t.lossDtype === 'float32'));
      if (pass.gpu) assert.ok(r.steps.every((t) => t.readbacks === 1), JSON.stringify(r.steps));
      // 1024, halved by the skipped step, doubled after two good steps in a row.
      assert.equal(r.scale, 1024);
      assert.equal(r.weightDtype, 'float32');
      assert.match(r.misuse.message, /no step or unscale_ since the last update/);
      assert.equal(r.badOption.kind, 'value');
      assert.match(r.badOption.message, /backoffFactor must be in \(0, 1\), got 2/);
    });

    if (pass.gpu) {
      test('on SwiftShader (no shader-f16) float16 on the GPU is a dtype error naming the feature', async () => {
        assert.equal(info.device, 'webgpu');
        assert.equal(info.shaderF16, false);
        const r = await s.call('onTheGpu');
        for (const what of ['made', 'zeros', 'moved']) {
          const e = r[what];
          assert.ok(e, `${what}: no error`);
          assert.equal(e.kind, 'dtype', `${what}: ${e.message}`);
          assert.match(e.message, /float16 tensors need the adapter feature shader-f16/, what);
        }
        assert.deepEqual(r.ok, [3, 6]);
      });
    }
  });
}
