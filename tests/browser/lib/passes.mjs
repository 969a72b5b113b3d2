// The browser suites, defined once and run for each pass (webgpu.test.mjs,
// cpu.test.mjs): registry, autodiff, training, memory, errors, and the JS
// surface (lib/surface.mjs: every op through its JS call, every name of
// web/index.d.ts used by a test). Every
// subtest fails on a page console error or uncaught exception as well.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, openSession, loadSuite } from './browser.mjs';
import { expect, namesOp, TRAIN_STEPS } from './expect.mjs';
import { defineSurfaceTests } from './surface.mjs';
import { nativeModel } from './native-model.mjs';

// Each test's own limit: a hung readback fails its test, not the whole run.
const T = { timeout: 60_000 };

export function definePass(passName) {
  const pass = PASSES[passName];
  const gpu = pass.gpu;
  const device = gpu ? 'webgpu' : 'cpu';
  describe(`${pass.name} pass`, { timeout: 300_000 }, () => {
    let s;
    let setup;
    before(async () => {
      assertBuilt({ wrapper: true });
      s = await openSession(pass);
      await loadSuite(s, '/tests/browser/pages/suite.js');
      setup = await s.call('setup', pass.name);
    });
    after(() => s?.close());
    const run = (name, ...args) => s.call('scenario', name, ...args);

    test('init', T, () => {
      const { info, hasGpu } = setup;
      assert.equal(hasGpu, gpu, 'navigator.gpu presence');
      assert.equal(info.device, device);
      if (gpu) {
        assert.ok(info.adapter, 'init reports the adapter');
        const text = JSON.stringify(info.adapter).toLowerCase();
        assert.match(text, /swiftshader/, `the SwiftShader adapter: ${text}`);
        assert.equal(info.reason, null);
      } else {
        assert.equal(info.adapter, null);
        assert.equal(typeof info.reason, 'string', 'init says why it fell back to the cpu');
        assert.match(info.reason, /webgpu|navigator\.gpu/i, `reason: ${info.reason}`);
      }
    });

    test('basics: creation, readback and ops with known values', T, async () => {
      expect.basics(await run('basics'), { device });
    });
    if (gpu) {
      test("devices: to('cpu'), to('webgpu'), mixing is an Error", T, async () => {
        expect.devices(await run('devices'));
      });
    }

    if (gpu) {
      // wgpu cannot ask a browser for subgroups (gfx-rs/wgpu#10146); skiff's init adds them to
      // its device request, and SwiftShader's blocked matmul then shares its loads of B.
      test("matmul on SwiftShader shares loads of B across a subgroup, with the cpu's results", T, async () => {
        const { subgroups, products, kernels } = await s.call('sharedMatmul');
        for (const [name, { diff, scale }] of Object.entries(products)) {
          assert.ok(diff <= 1e-5 * scale, `${name}: the GPU's product differs from the cpu's by ${diff} (largest ${scale})`);
        }
        if (subgroups) {
          // x @ w.T: 16 rows per lane, B one element per load.
          assert.ok(kernels.some((k) => /:16x32x4u4[ks]sb4$/.test(k)), `no sharing kernel for x @ w.T among ${kernels.join(', ')}`);
          // The tall block (32 rows per lane) with each load of A: k, s, x.
          for (const a of ['k', 's', 'x']) {
            const name = `32x32x4u4${a}xb4`;
            assert.ok(kernels.some((k) => k.endsWith(`:${name}`)), `no tall sharing kernel ${name} among ${kernels.join(', ')}`);
          }
        }
      });
    }

    describe('registry', () => {
      test('every op case passes checkCase', { timeout: 180_000 }, async (t) => {
        const cases = await s.call('registryCases');
        assert.ok(cases.length > 0, 'registryCases() is empty');
        const byOp = new Map();
        const expected = new Map();
        for (const c of cases) {
          if (!byOp.has(c.op)) byOp.set(c.op, []);
          byOp.get(c.op).push({ caseIndex: c.caseIndex, label: c.label });
          // The cpu checks always run; with the GPU, its checks too.
          expected.set(c.op, gpu ? [...c.expectedChecks, ...c.expectedGpuChecks] : c.expectedChecks);
        }
        t.diagnostic(`${cases.length} case samples over ${byOp.size} ops`);
        for (const [op, opCases] of byOp) {
          await t.test(op, async () => {
            const failures = await s.call('checkOp', op, opCases, gpu, expected.get(op));
            assert.deepEqual(failures, [], `${op}: ${failures.length} of ${opCases.length} case(s) failed:\n  ${failures.join('\n  ')}`);
          });
        }
      });
      test('registryCoverage names an existing method or function for every op', T, async () => {
        const cov = await s.call('coverage');
        const cases = await s.call('registryCases');
        const ops = [...new Set(cases.map((c) => c.op))];
        assert.deepEqual(await s.call('opNames'), ops, 'testing.opNames() lists the registry ops in order');
        const missing = ops.filter((op) => !(op in cov));
        assert.deepEqual(missing, [], 'registry ops absent from registryCoverage()');
        const unresolved = Object.entries(cov)
          .filter(([, v]) => !v.resolves)
          .map(([op, v]) => `${op} -> ${JSON.stringify(v.jsName)}`);
        assert.deepEqual(unresolved, [], 'coverage names that are no function of the module or Tensor');
      });
    });

    describe('autodiff', () => {
      test('double grad: d2/dx2 x^3 = 6x (createGraph)', T, async () => expect.doubleGrad(await run('doubleGrad')));
      test('grad options: gradOutputs, allowUnused', T, async () => expect.gradOptions(await run('gradOptions')));
      test('hooks', T, async () => expect.hooks(await run('hooks')));
      test('custom Function vs analytic and finite differences', T, async () =>
        expect.customFunction(await run('customFunction')));
      test('retainGraph', T, async () => expect.retainGraph(await run('retainGraph')));
      test('noGrad', T, async () => expect.noGrad(await run('noGrad')));
    });

    describe('nn and optim', () => {
      test('Linear, Conv2d and a forward hook against their definitions', T, async () => expect.modules(await run('modules')));
      test('SGD, Adam and StepLR against their update rules', T, async () => expect.optimizers(await run('optimizers')));
    });

    test('jit: a compiled Adam step matches eager steps', T, async () => {
      expect.jit(await run('jit'));
    });
    test('jit: a model trained and exported natively predicts the same here', { timeout: 900_000 }, async () => {
      const { bytes, expected } = nativeModel();
      expect.inferenceModel(await run('inferenceModel', { bytes, expected, device }), expected);
    });
    test(`training: 2-16-2 MLP, Adam, ${TRAIN_STEPS} steps on XOR blobs`, { timeout: 120_000 }, async (t) => {
      const r = await run('training', { steps: TRAIN_STEPS });
      t.diagnostic(`loss ${r.losses.map(([i, l]) => `${i}:${l.toFixed(4)}`).join(' ')}; accuracy ${r.accuracy}; ${r.msPerStep.toFixed(1)} ms/step`);
      expect.training(r);
    });

    describe('memory', () => {
      test('tidy semantics', T, async () => expect.tidySemantics(await run('tidySemantics')));
      test('200 training steps in tidy: no leaks', { timeout: 120_000 }, async (t) => {
        const r = await run('memoryTidy', { steps: 200 });
        t.diagnostic(`after step 1: ${JSON.stringify(r.first)}; ${r.msPerStep.toFixed(1)} ms/step`);
        expect.memoryTidy(r, { gpu });
      });
    });

    describe('errors', () => {
      test('misuse throws an Error naming the op', T, async (t) => {
        const results = await run('errors', { gpu });
        for (const r of results) await t.test(r.label, () => namesOp(r, r.names, r.label));
      });
      test('the module still works after the errors', T, async () => expect.stillWorks(await run('stillWorks')));
    });

    // Last: it loses the WebGPU device, and its coverage check counts every test before it.
    describe('the JS surface', () => defineSurfaceTests((...a) => s.call(...a), { device, gpu }));

    if (gpu) {
      // Last in the pass: a kernel the earlier tests ran has been built into
      // a pipeline by the runtime's device already and is not built again
      // (compileKernels and builds in suite.js say which others are only
      // validated by Tint); this test's own limit.
      test("every WGSL kernel compiles with Chromium's WebGPU (Tint)", { timeout: 180_000 }, async (t) => {
        assert.ok(await s.call('hasKernelSources'), 'the bindings export no testing.kernelSources()');
        const { count, reused, failures } = await s.call('compileKernels');
        t.diagnostic(`${count} kernels, ${reused} of them built by the runtime during this pass`);
        assert.ok(count > 0, 'testing.kernelSources() is empty');
        assert.deepEqual(failures, [], `${failures.length} of ${count} kernels fail to compile:\n  ${failures.join('\n  ')}`);
      });
    }
  });
}
