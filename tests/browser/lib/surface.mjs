// The JS-surface tests (the Node halves): every registry case through its
// camelCase call (pages/op-table.js), the behavioural scenarios of the whole
// package (pages/surface-*.js), and the check that every name web/index.d.ts
// declares was touched by a test (lib/dts-coverage.mjs over pages/trace.js).
// Defined once, run by each browser pass (passes.mjs) and, without the
// coverage check, by surface.test.mjs in Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { declaredNames, untouched } from './dts-coverage.mjs';

/** [title, scenario]: the behavioural scenarios, in the order they run. */
export const SURFACE_SCENARIOS = [
  ['nn layers: batch norm (train, eval, running stats), layer norm, dropout, embedding, pools, activations', 'layers'],
  ['containers: names, get/children, train/eval, pre-hooks, zeroGrad, state dicts, to()', 'containers'],
  ['MultiheadAttention against attention written with tensor ops (masks, causal)', 'attention'],
  ['every loss class against its formula', 'losses'],
  ['nn.init: bounds and statistics of every initialiser, calculateGain', 'init'],
  ['AdamW, RMSprop, Adagrad and SGD against their update rules; options, groups, state dicts', 'optimizerRules'],
  ['every scheduler against its formula', 'schedulers'],
  ['clipGradNorm (the norm stays a tensor) and clipGradValue', 'clipping'],
  ['where, fold/unfold, grad mode, backendInfo, devices, memory, emptyCache, safetensors', 'functions'],
  ['Tensor methods outside the registry', 'tensorMethods'],
  ['PyTorch fixture layers48: every entry\'s output and gradients (cpu: float64 to 1e-12; WebGPU: float32 to 1e-5)', 'torchFixture'],
  ['autograd properties, custom Function subclasses, needsInputGrad', 'autogradExtras'],
  ['autocast scopes and GradScaler methods', 'mixedPrecision'],
  ['custom ops: WGSL and cpu kernels, derivatives to second order, scalars, shape rules, jit, errors on the user\'s line', 'customOps'],
  ['profile: calls per op, transfers, GPU kernel times where timestamp-query exists, the Chrome trace', 'profiler'],
  ['leak report: trackOrigins and memory({ detailed: true }) find a leak in a loop at its line', 'leakReport'],
  ['deterministic mode: a seeded MLP and CNN run and every registry forward give the native bits (WebGPU: within 1e-5)', 'determinism'],
  ['free() and [Symbol.dispose]() on every class', 'handles'],
  ['bad arguments and options: an Error naming the op and the value', 'badArguments'],
];

/** Asserts a scenario's { count, failures } (pages/checks.js). */
export function assertChecks(r, title) {
  assert.ok(r.count > 0, `${title}: no checks ran`);
  assert.deepEqual(r.failures, [], `${title}: ${r.failures.length} of ${r.count} checks failed:\n  ${r.failures.join('\n  ')}`);
}

/** Asserts checkSurface's result (pages/surface.js), one subtest per failing op. */
export async function assertSurfaceOps(t, r) {
  t.diagnostic(`${r.ran} registry cases through their JS calls`);
  assert.ok(r.ran > 0, 'no registry case ran');
  assert.deepEqual(r.missing, [], 'registry cases without an entry in tests/browser/pages/op-table.js');
  assert.deepEqual(r.stale, [], 'op-table.js entries naming no registry case (renamed or removed?)');
  for (const [op, failures] of Object.entries(r.failures)) {
    await t.test(op, () => assert.fail(`${op}: ${failures.length} case(s) differ from the Rust output:\n  ${failures.join('\n  ')}`));
  }
}

/**
 * Defines the JS-surface tests for a session: `call(name, ...args)` runs a
 * page export (suite.js). `coverage`: also check every declared name was
 * touched (last, after everything else in the page ran).
 */
export function defineSurfaceTests(call, { device, gpu, coverage = true }) {
  const T = { timeout: 60_000 };
  test('every registry case through its camelCase JS call gives the Rust output', { timeout: 180_000 }, async (t) =>
    assertSurfaceOps(t, await call('surfaceOps', device)),
  );
  for (const [title, name] of SURFACE_SCENARIOS) {
    test(title, T, async () => assertChecks(await call('scenario', name), title));
  }
  test(gpu ? 'testing.loseDevice() destroys the WebGPU device; the cpu still works' : 'testing.loseDevice() without WebGPU is an Error', T, async () =>
    assertChecks(await call('scenario', 'loseDevice', { gpu }), 'loseDevice'),
  );
  if (coverage) {
    test('every name web/index.d.ts declares was used by a test', T, async (t) => {
      const declared = declaredNames();
      const missing = untouched(declared, await call('touched'));
      t.diagnostic(`${declared.names.length - missing.length} of ${declared.names.length} declared names used`);
      assert.deepEqual(missing, [], 'declared in web/index.d.ts (or its classes in pkg/skiff.d.ts) but used by no test');
    });
  }
}
