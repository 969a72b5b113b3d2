// The bad-input corpus (pages/bad-input*.js) in Node and in both Chromium
// passes: every entry must throw a SkiffError whose message starts with the op
// the caller called, with that `op` and a valid `kind` (or give PyTorch's
// documented result), and the instance
// must still work after each. In Node, the former traps also run 10,000
// times each with the instance and its memory checked, and the calls that
// leaked wasm stack space 100,000 times each. Last in each
// environment (it may abort an instance that cannot fail an allocation
// cleanly): four live 1 GiB tensors.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, loadSuite, openSession } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';
import { BAD_INPUT, hugeAllocations, repeatEntries, runBadInput } from './pages/bad-input.js';

/** The entries repeated 10,000 times: the calls that trapped or hung the instance before. */
const WORST = /was a trap|past 2 \*\* 28 elements|was minutes|endless loop|was a \[4294967295/;

/** Asserts a corpus result; `env` names where it ran. */
function assertCorpus(t, r, env) {
  t.diagnostic(`${env}: ${r.count} distinct bad calls, ${r.ops.length} ops named`);
  assert.equal(r.count, BAD_INPUT.length, 'every corpus entry ran');
  assert.ok(r.count >= 220, `the corpus has ${r.count} calls, fewer than 220`);
  assert.deepEqual(r.failures, [], `${env}: ${r.failures.length} of ${r.count} calls failed:\n  ${r.failures.join('\n  ')}`);
}

/** Asserts a hugeAllocations result. */
function assertHuge(r) {
  if (r.error) {
    assert.ok(!r.error.trap, `an allocation trapped the instance: ${r.error.message}`);
    assert.ok(r.error.isError, `a non-Error was thrown: ${r.error.message}`);
    assert.match(r.error.message, /^zeros: /, 'the allocation failure names zeros');
    assert.deepEqual(
      { isSkiffError: r.error.isSkiffError, op: r.error.op, kind: r.error.kind },
      { isSkiffError: true, op: 'zeros', kind: 'memory' },
      `the allocation failure is a SkiffError of zeros, kind 'memory': ${r.error.message}`,
    );
  } else {
    assert.equal(r.made, 4, 'without an error, all four tensors exist');
  }
  assert.equal(r.works, '', `the instance no longer works after the allocations: ${r.works}`);
}

describe('bad input: Node', { timeout: 300_000 }, () => {
  let skiff;
  let cleanup = () => {};
  before(async () => {
    assertBuilt({ wrapper: true });
    ({ skiff, cleanup } = await importForNode('skiff-bad-input-'));
    await skiff.init({ device: 'cpu' });
  });
  after(() => cleanup());

  test('the corpus: an Error naming the called op (or PyTorch\'s result), then a working instance', async (t) => {
    assertCorpus(t, await runBadInput(skiff), 'node');
  });

  test('the former traps, 10,000 times each: the instance works and its memory stays flat', async (t) => {
    const wasm = await skiff._raw.default(); // already initialised: the instance's exports
    const bytesBefore = wasm.memory.buffer.byteLength;
    const r = await repeatEntries(skiff, (label) => WORST.test(label), { reps: 10_000 });
    const grown = wasm.memory.buffer.byteLength - bytesBefore;
    t.diagnostic(`${r.calls} calls over ${r.entries} entries; wasm memory grew by ${grown} bytes`);
    assert.ok(r.entries >= 10, `only ${r.entries} entries matched the former traps`);
    assert.deepEqual(r.failures, []);
    assert.equal(r.tensorsAfter, r.tensorsBefore, 'live tensor handles before and after');
    assert.ok(grown <= 64 * 2 ** 20, `wasm memory grew by ${grown} bytes over ${r.calls} failing calls`);
  });

  // wasm-bindgen's own check of a freed object throws from inside wasm, and a
  // JS exception unwinding wasm frames leaks their stack space: 50,000 calls
  // corrupted the instance ("memory access out of bounds") before the
  // wrapper and the bindings checked the pointer first.
  test('calls on and with freed handles, 100,000 times each: the instance still works', async (t) => {
    const r = await repeatEntries(skiff, (label) => /leak(ed|ing) wasm stack/.test(label), { reps: 100_000, every: 10_000 });
    t.diagnostic(`${r.calls} calls over ${r.entries} entries`);
    assert.ok(r.entries >= 3, `only ${r.entries} entries matched`);
    assert.deepEqual(r.failures, []);
  });

  test('four live 1 GiB tensors: an Error naming zeros, not a trap', async () => {
    assertHuge(await hugeAllocations(skiff));
  });
});

for (const passName of ['webgpu', 'cpu']) {
  const pass = PASSES[passName];
  describe(`bad input: Chromium, ${pass.name} pass`, { timeout: 300_000 }, () => {
    let s;
    before(async () => {
      assertBuilt({ wrapper: true });
      s = await openSession(pass);
      await loadSuite(s, '/tests/browser/pages/bad-input-page.js');
      const { device } = await s.call('setup', pass.name);
      assert.equal(device, pass.gpu ? 'webgpu' : 'cpu');
    });
    after(() => s?.close());

    test('the corpus: an Error naming the called op (or PyTorch\'s result), then a working instance', { timeout: 240_000 }, async (t) => {
      assertCorpus(t, await s.call('corpus'), `chromium ${pass.name}`);
    });

    test('four live 1 GiB tensors: an Error naming zeros, not a trap', { timeout: 120_000 }, async () => {
      assertHuge(await s.call('huge'));
    });
  });
}
