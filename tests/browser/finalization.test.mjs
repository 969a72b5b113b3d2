// The FinalizationRegistry safety net: tensors a program forgets to dispose
// are freed once the garbage collector collects their handles (wasm-bindgen's
// --weak-refs registration). Run in a child Node with --expose-gc, so the
// test can collect on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { REPO, assertBuilt } from './lib/browser.mjs';

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
