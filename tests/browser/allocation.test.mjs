// Memory the wasm instance cannot get is an error for the op that asked,
// never a trap: WebAssembly memory ends at 4 GiB, so a fourth live 1 GiB
// tensor cannot exist. Each refused call names the JS op and the size, and
// the instance keeps computing afterwards (it would be dead after a trap).
// Runs in Node: the same wasm as in the browser, without a tab's own limits.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';

const GIB_OF_F32 = 1 << 28; // elements: 1 GiB of float32, the most one tensor may hold in wasm

describe('node: allocations past the wasm memory', { timeout: 120_000 }, () => {
  let skiff;
  let cleanup = () => {};
  before(async () => {
    assertBuilt({ wrapper: true });
    ({ skiff, cleanup } = await importForNode('skiff-alloc-'));
    await skiff.init({ device: 'cpu' });
  });
  after(() => cleanup());

  async function stillWorks() {
    assert.deepEqual(Array.from(await skiff.tensor([1, 2, 3]).mul(2).data()), [2, 4, 6]);
  }

  test('a fourth live 1 GiB tensor is an out-of-memory error naming the op', async () => {
    const live = [];
    let refused = null;
    try {
      for (let i = 0; i < 5 && !refused; i++) {
        try {
          live.push(skiff.zeros([GIB_OF_F32]));
        } catch (e) {
          refused = { i, e };
        }
      }
      assert.ok(refused, 'five live 1 GiB tensors fit in a 4 GiB wasm memory?');
      assert.ok(refused.i >= 1, `the first 1 GiB tensor was refused: ${refused.e.message}`);
      assert.ok(refused.e instanceof Error, `not an Error: ${refused.e}`);
      assert.match(refused.e.message, /^zeros: out of memory: 1\.0 GiB for 268435456 float32 elements/);
      // Every creation function and a growing op refuse the same way, by name.
      for (const [op, call] of [
        ['ones', () => skiff.ones([GIB_OF_F32])],
        ['full', () => skiff.full([GIB_OF_F32], 2)],
        ['randn', () => skiff.randn([2 ** 14, 2 ** 14])],
        ['rand', () => skiff.rand([2 ** 14, 2 ** 14])],
        ['exp', () => live[0].exp()],
      ]) {
        assert.throws(call, (e) => e instanceof Error && new RegExp(`^${op}: out of memory`).test(e.message), op);
      }
      await stillWorks();
    } finally {
      for (const t of live) t.dispose();
    }
    // Freed, the memory serves new tensors again.
    const again = skiff.zeros([2 ** 14, 2 ** 14]);
    assert.deepEqual(Array.from(again.shape), [2 ** 14, 2 ** 14]);
    again.dispose();
    await stillWorks();
  });
});
