// The FinalizationRegistry safety net: tensors a program forgets to dispose
// are freed once the garbage collector collects their handles (wasm-bindgen's
// --weak-refs registration). Run in a child Node with --expose-gc, so the
// test can collect on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { REPO, assertBuilt } from './lib/browser.mjs';
import { expect } from './lib/expect.mjs';

const SCRIPT = `
import * as skiff from ${JSON.stringify(path.join(REPO, 'web/node.js'))};
await skiff.init({ device: 'cpu' });
const base = skiff.memory();
(() => {
  // 100 handles (and their 4 KiB storages) made and forgotten, outside any tidy scope.
  for (let i = 0; i < 100; i++) skiff.ones([1024]).mul(2);
})();
const leaked = skiff.memory();
let now = leaked;
for (let i = 0; i < 50 && now.tensors > base.tensors; i++) {
  globalThis.gc();
  await new Promise((r) => setTimeout(r, 10)); // finalizers run on a later task
  now = skiff.memory();
}
console.log(JSON.stringify({ base, leaked, now }));
`;

test('forgotten tensors are freed by the garbage collector', () => {
  assertBuilt({ wrapper: true });
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', SCRIPT], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const { base, leaked, now } = JSON.parse(out.trim().split('\n').at(-1));
  assert.equal(leaked.tensors, base.tensors + 200, 'each iteration leaves two live handles (ones, and its product)');
  assert.ok(leaked.bytes.cpu >= base.bytes.cpu + 200 * 4096, `live cpu bytes grew: ${JSON.stringify(leaked.bytes)}`);
  assert.equal(now.tensors, base.tensors, `after GC the live handles return to the start: ${JSON.stringify(now)}`);
  assert.equal(now.bytes.cpu, base.bytes.cpu, 'and so do the live cpu bytes');
});

// The shared tidy scenario counts the live tensors it made, not a change of
// memory().tensors: the safety net above may free an earlier test's forgotten
// tensors at any of its awaits (once in CI's WebGPU pass: -4 live where 4
// were). Here 8 forgotten handles are collected in the middle of it.
const TIDY_SCRIPT = `
import * as skiff from ${JSON.stringify(path.join(REPO, 'web/node.js'))};
import { scenarios } from ${JSON.stringify(path.join(REPO, 'tests/browser/pages/scenarios.js'))};
await skiff.init({ device: 'cpu' });
(() => {
  for (let i = 0; i < 8; i++) skiff.tensor([i]);
})();
const before = skiff.memory().tensors;
// Its async tidy first collects, and waits a task for the finalizers.
const tidy = (fn) =>
  fn.constructor.name === 'AsyncFunction'
    ? skiff.tidy(async () => {
        globalThis.gc();
        await new Promise((r) => setTimeout(r, 50));
        return fn();
      })
    : skiff.tidy(fn);
const r = await scenarios.tidySemantics({ ...skiff, tidy });
console.log(JSON.stringify({ r, freedMeanwhile: before - skiff.memory().tensors }));
`;

test("the tidy scenario's count ignores tensors the garbage collector frees meanwhile", () => {
  assertBuilt({ wrapper: true });
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', TIDY_SCRIPT], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const { r, freedMeanwhile } = JSON.parse(out.trim().split('\n').at(-1));
  assert.equal(freedMeanwhile, 8, 'the 8 forgotten handles were collected during the scenario');
  expect.tidySemantics(r);
});
