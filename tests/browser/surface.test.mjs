// The JS surface in Node (the package's cpu fallback): every registry case
// through its camelCase call and the behavioural scenarios, as the browser
// passes run them (lib/surface.mjs). Also the checks' own tests: the op
// table's missing/stale detection, a wrong JS result being reported, and the
// web/index.d.ts parser finding a name no test touched.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PKG_DIR, REPO, assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';
import { declaredNames, untouched } from './lib/dts-coverage.mjs';
import { SURFACE_SCENARIOS, assertChecks, assertSurfaceOps } from './lib/surface.mjs';
import { makeTracer } from './pages/trace.js';
import { checkSurface, checkSurfaceCase, tableProblems } from './pages/surface.js';
import { OP_TABLE } from './pages/op-table.js';
import { surfaceScenarios } from './pages/surface-scenarios.js';

let skiff;
let tracer;
let cleanup = () => {};
before(async () => {
  assertBuilt({ wrapper: true });
  ({ skiff, cleanup } = await importForNode('skiff-surface-'));
  await skiff.init({ device: 'cpu' });
  tracer = makeTracer(skiff);
});
after(() => cleanup());

describe('node: the JS surface', { timeout: 120_000 }, () => {
  test('every registry case through its camelCase JS call gives the Rust output', async (t) =>
    assertSurfaceOps(t, await checkSurface(skiff, tracer, skiff.testing.registryCases(), { device: 'cpu' })),
  );
  for (const [title, name] of SURFACE_SCENARIOS) {
    test(title, async () => assertChecks(await surfaceScenarios[name](tracer.api), title));
  }
  test('testing.loseDevice() without WebGPU is an Error', async () =>
    assertChecks(await surfaceScenarios.loseDevice(tracer.api, { gpu: false }), 'loseDevice'),
  );
});

describe('the checks check', () => {
  test('tableProblems names registry cases without an entry and entries without a case', () => {
    const cases = [
      { op: 'neg', caseIndex: 0, caseName: 'neg' },
      { op: 'neg', caseIndex: 0, caseName: 'neg', sample: 'transposed' },
      { op: 'brand_new', caseIndex: 0, caseName: 'first' },
    ];
    const { missing, stale } = tableProblems(cases, { neg: OP_TABLE.neg, exp: OP_TABLE.exp });
    assert.deepEqual(missing, ['brand_new / first'], 'a sample variant runs through its base entry; a new op has none');
    assert.deepEqual(stale, ['exp / exp'], 'an entry whose case the registry no longer lists');
  });

  test('a JS call giving another result, or throwing, is reported', async () => {
    const c = skiff.testing.registryCases().find((x) => x.op === 'sum' && x.label === 'sum axis 1');
    assert.ok(c, "the registry has sum's 'sum axis 1' case");
    const wrongAxis = { sum: { 'sum axis 1': (s, [x]) => x.sum(2) } };
    assert.match(await checkSurfaceCase(skiff, tracer, c, { device: 'cpu', table: wrongAxis }), /^shape \[2,3\], Rust gives \[2,4\]/);
    const wrongValues = { sum: { 'sum axis 1': (s, [x]) => x.sum(1).mul(1.001) } };
    assert.match(await checkSurfaceCase(skiff, tracer, c, { device: 'cpu', table: wrongValues }), /elements differ/);
    const throws = { sum: { 'sum axis 1': (s, [x]) => x.sum(1, { keepDim: true }) } };
    assert.match(await checkSurfaceCase(skiff, tracer, c, { device: 'cpu', table: throws }), /the JS call threw: sum: unknown option "keepDim"/);
    assert.equal(await checkSurfaceCase(skiff, tracer, c, { device: 'cpu' }), null, 'the real entry passes');
  });

  test('web/index.d.ts: the parser finds the declared names, and each exists in the module', () => {
    const declared = declaredNames();
    for (const name of ['tensor', 'nn.Linear', 'nn.init.kaimingUniform_', 'optim.lrScheduler.StepLR', 'testing.caseData', 'Tensor.conv2d', 'Tensor.shape', 'Tensor.array', 'Module.forward', 'Function.apply', 'ModuleHookHandle.remove']) {
      assert.ok(declared.names.includes(name), `declaredNames() misses ${name}`);
    }
    assert.deepEqual(declared.coveredBy['Module.linear'], ['nn.Linear'], 'a static factory is covered by the wrapper the d.ts ties it to');
    const absent = declared.names.filter((name) => {
      const [head, ...rest] = name.split('.');
      const kind = declared.kinds[name];
      if (kind === 'export') return name.split('.').reduce((o, k) => (o == null ? undefined : o[k]), skiff) === undefined;
      const cls = skiff[head];
      if (typeof cls !== 'function') return true;
      const member = rest.join('.').replace(/^\[Symbol\.(\w+)\]$/, (_, s) => `@@${s}`);
      const key = member.startsWith('@@') ? Symbol[member.slice(2)] : member;
      return kind === 'static' ? !(key in cls) : !(key in cls.prototype);
    });
    assert.deepEqual(absent, [], 'declared in the types but missing from the module');
  });

  test('a name added to web/index.d.ts and used by no test is reported', () => {
    const index = fs.readFileSync(path.join(REPO, 'web/index.d.ts'), 'utf8');
    const pkg = fs.readFileSync(path.join(PKG_DIR, 'skiff.d.ts'), 'utf8');
    const before = declaredNames({ index, pkg });
    const grown = declaredNames({
      index: index.replace('export function emptyCache(): void;', 'export function emptyCache(): void;\nexport function trimMemory(): void;'),
      pkg: pkg.replace(/^ {4}zero_\(\): Tensor(<D>)?;$/m, (line) => `${line}\n    lerp(end: Tensor, weight: number): Tensor;`),
    });
    assert.deepEqual(untouched(grown, before.names), ['Tensor.lerp', 'trimMemory']);
    assert.deepEqual(untouched(before, before.names), []);
  });
});
