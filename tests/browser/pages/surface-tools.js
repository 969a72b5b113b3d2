// The profiler (skiff.profile): per-op calls against the ops the profiled
// code calls, transfers against what it moved, GPU kernel times consistent
// with the dispatches (on adapters with timestamp-query), a Chrome trace
// that parses and holds every call, and sessions that neither nest nor
// outlive a throw. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { checker } from './checks.js';

export const toolScenarios = {
  async profiler(skiff) {
    const c = checker();
    const gpu = skiff.getDefaultDevice() === 'webgpu';
    const x = skiff.randn([16, 32]);
    const w = skiff.randn([32, 8]);
    x.matmul(w).relu().sum(); // compiled outside the session
    const p = await skiff.profile(async () => {
      let h = x.matmul(w).relu();
      h = h.add(x.matmul(w));
      return h.data();
    });
    const calls = (op) => p.ops.find((o) => o.op === op)?.calls ?? 0;
    c.equal('the result of fn', p.result.length, 16 * 8);
    c.equal('calls per op', [calls('matmul'), calls('relu'), calls('add')], [2, 1, 1]);
    c.ok('host time per op', p.ops.every((o) => o.hostMs >= 0) && p.wallMs > 0);
    c.ok('the table names the ops', /^op\s+calls\s+host ms/.test(p.table) && p.table.includes('matmul'), p.table);
    if (gpu) {
      c.ok('dispatches and one submit for the readback', p.dispatches >= 4 && p.submits >= 1, p.table);
      c.equal('one readback of the result', [p.readbacks, p.readbackBytes], [1, 16 * 8 * 4]);
      const kernels = p.ops.reduce((n, o) => n + o.gpuKernels, 0);
      if (p.timedDevices.length) {
        c.equal('timestamp queries: every dispatch timed', kernels + p.untimedDispatches, p.dispatches);
        c.ok('matmul ran on the GPU for some time', p.ops.find((o) => o.op === 'matmul').gpuMs > 0, p.table);
      } else {
        c.ok('no timestamp-query here: no GPU times', kernels === 0 && p.ops.every((o) => o.gpuMs === null), p.table);
      }
    } else {
      c.equal('the cpu: no GPU work', [p.dispatches, p.submits, p.readbacks, p.timedDevices.length], [0, 0, 0, 0]);
    }
    const trace = JSON.parse(p.chromeTrace);
    const complete = trace.traceEvents.filter((e) => e.ph === 'X');
    const total = p.ops.reduce((n, o) => n + o.calls + o.gpuKernels, 0);
    c.equal('the Chrome trace holds every call and kernel', complete.length, total);
    c.ok('named by op', complete.some((e) => e.name === 'matmul' && e.tid === 1));

    await c.throws('profiles do not nest', () => skiff.profile(() => skiff.profile(() => 1)), /^profile: a profile is already recording/);
    await c.throws('fn must be a function', () => skiff.profile(3), /^profile: fn must be a function, got the number 3/);
    await c.throws('fn throwing rejects with its error', () => skiff.profile(() => { throw new Error('inside'); }), /^inside$/);
    const after = await skiff.profile(() => x.exp());
    c.equal('and the next profile records', after.ops.map((o) => [o.op, o.calls]), [['exp', 1]]);
    return c.report();
  },
};
