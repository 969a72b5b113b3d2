// Index tensors made on WebGPU (int32 zeros/full, argmax results) as indices
// and labels, out-of-range values made on the GPU, and a GPU allocation the
// driver refuses, in headless Chromium on SwiftShader (pages/index-ops.js).
// The browser cannot block on a readback, so the range check of indices the
// host never saw runs on the device and reports at the next readback, and an
// allocation failure reports there too; either way the device keeps working.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, openSession, loadSuite } from './lib/browser.mjs';

const T = { timeout: 60_000 };

function close(got, want, what, tol = 1e-5) {
  assert.equal(got.length, want.length, `${what}: lengths ${got.length} vs ${want.length}`);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `${what}[${i}]: ${g} vs ${want[i]} (${got} vs ${want})`));
}

/**
 * The message of an Error raised for `op`: "op: ..." plus every fact; a
 * failure found on the device is reported by the readback that found it,
 * after the readback's own name ("data: gather: ...").
 */
function namesOp(msg, op, facts) {
  assert.ok(typeof msg === 'string', `expected an error from ${op}, got none`);
  assert.match(msg, new RegExp(`^((data|item|toAsync|array): )?${op}: `), `the error does not name ${op}: ${msg}`);
  for (const f of facts) assert.ok(msg.includes(f), `the ${op} error lacks ${JSON.stringify(f)}: ${msg}`);
}

describe('webgpu: device-made indices and GPU allocation failures', { timeout: 300_000 }, () => {
  let s;
  before(async () => {
    assertBuilt({ wrapper: true });
    s = await openSession(PASSES.webgpu);
    await loadSuite(s, '/tests/browser/pages/index-ops.js');
    const { device } = await s.call('setup');
    assert.equal(device, 'webgpu', 'init chose WebGPU');
  });
  after(() => s?.close());

  test('every index op runs on int32 zeros/full/argmax made on the GPU, forward and backward, without a readback', T, async () => {
    const r = await s.call('deviceMadeIndices');
    const names = Object.keys(r);
    for (const op of ['crossEntropy/zeros', 'crossEntropy/full', 'crossEntropy/argmax', 'gather/full', 'indexSelect/zeros', 'embedding/full', 'scatterAdd/full', 'indexAdd/zeros']) {
      assert.ok(names.includes(op), `${op} ran`);
    }
    for (const [name, { readbacks, gpu, cpu }] of Object.entries(r)) {
      assert.equal(readbacks, 0, `${name}: the op read back from the GPU`);
      close(gpu, cpu, name);
    }
  });

  test('an empty batch of device-made indices', T, async () => {
    const r = await s.call('emptyBatch');
    assert.equal(r.loss, 0);
    assert.deepEqual(r.grad, [0, 5]);
    assert.deepEqual(r.indexSelect, [0, 3]);
    assert.equal(r.gather, 0);
    assert.deepEqual(r.embedding, [0, 3]);
    close(r.scatterAdd, r.x, 'scatterAdd of nothing');
  });

  test('out-of-range indices made on the GPU: the next readback rejects naming the op, once; the device keeps working', T, async () => {
    const r = await s.call('outOfRange');
    const x = r.x; // [5, 3]
    const facts = {
      gather: ['index 7 is out of range for axis 0 of size 5', 'index shape [2, 3]', 'found on the device', '6 index value(s)'],
      indexSelect: ['index -1 is out of range for axis 0 of size 5', 'index shape [2]'],
      embedding: ['index 5 is out of range for axis 0 of size 5', 'input shape [5, 3], index shape [2, 2]'],
      scatterAdd: ['index 9 is out of range for axis 0 of size 5', 'leaves out the sources'],
      indexAdd: ['index 6 is out of range for axis 0 of size 5'],
      crossEntropy: ['label 4 is out of range [0, 4) for scores of shape [3, 4]', '3 label(s)'],
    };
    const op = { gather: 'gather', indexSelect: 'index_select', embedding: 'embedding', scatterAdd: 'scatter_add', indexAdd: 'index_add', crossEntropy: 'cross_entropy' };
    for (const [name, f] of Object.entries(facts)) {
      const c = r[name];
      assert.equal(c.threw, null, `${name} threw at the call (a host readback?): ${c.threw}`);
      namesOp(c.first, op[name], f);
      assert.ok(Array.isArray(c.again), `${name}: the second readback of the same result must succeed`);
      namesOp(c.reused, op[name], f.slice(0, 1));
      // A SkiffError of the called op (data), with the op found failing on the device as innerOp.
      assert.deepEqual(c.reusedFields, { isSkiffError: true, op: 'data', kind: 'value', innerOp: op[name] }, `${name}: the rejection's fields`);
      assert.deepEqual(c.later, [2, 4, 6], `${name}: later work`);
    }
    // The documented results: gather-like ops read 0, scatters add nothing.
    assert.deepEqual(r.gather.again, [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(r.indexSelect.again, [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(r.embedding.again, Array(12).fill(0));
    close(r.scatterAdd.again, x, 'scatterAdd');
    close(r.indexAdd.again, x, 'indexAdd');
    assert.deepEqual(r.crossEntropy.again.length, 3);
  });

  test('zeros([2**14, 2**14]) beyond what the driver can allocate: an error naming the op at the next readback, and the device keeps working', T, async () => {
    const r = await s.call('outOfMemory');
    assert.equal(r.threw, null, 'the browser learns of the failure only later');
    namesOp(r.first, 'full', ['the GPU could not allocate 1073741824 bytes', 'recompute']);
    assert.match(r.withItAgain, /values were lost/, 'work recorded with the failed buffer reads as lost');
    assert.deepEqual(r.earlierValues, [2, 4, 6], 'work recorded before the allocation is intact');
    assert.match(r.bigRead, /has no GPU memory/);
    assert.deepEqual(r.bigReadFields, { isSkiffError: true, op: 'data', kind: 'memory', innerOp: null }, 'reading the big tensor: out of memory');
    assert.ok(r.liveAfter - r.liveBefore < 2 ** 20, `live bytes after dispose: ${r.liveAfter - r.liveBefore} more than before`);
    assert.ok(r.pooledAfter < 2 ** 30, `the failed 1 GiB buffer entered the pool (${r.pooledAfter} bytes pooled)`);
    assert.deepEqual(r.later, [20, 40, 60]);
    assert.deepEqual(r.grad, [1, -1]);
    assert.deepEqual(r.fresh, [1024 * 1024]);
  });
});
