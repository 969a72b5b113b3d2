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
        c.ok('the timed device has a name', p.timedDevices.every((d) => typeof d === 'string' && d.length > 0), JSON.stringify(p.timedDevices));
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

/** "file:line" of the caller of `lineHere` (the frame below it in the stack). */
function lineHere() {
  const frames = new Error().stack.split('\n').filter((l) => /:\d+:\d+\)?$/.test(l));
  const m = frames[1].match(/([^/\s(]+):(\d+):\d+\)?$/);
  return `${m[1]}:${m[2]}:`;
}

toolScenarios.leakReport = async (skiff) => {
  const c = checker();
  await c.throws('detailed needs tracking', () => skiff.memory({ detailed: true }), /^memory: .*call trackOrigins\(true\) first/);
  await c.throws('a bad option', () => skiff.memory({ detail: true }), /^memory: unknown option "detail"/);
  skiff.trackOrigins(true);
  const x = skiff.ones([32]);
  const kept = [];
  let at = '';
  for (let i = 0; i < 5; i++) {
    // Both handles stay alive: the exp too, until disposed (or collected).
    const e = x.exp(); kept.push(e, e.mul(x)); at = lineHere();
  }
  const temp = x.sin();
  temp.dispose();
  const m = skiff.memory({ detailed: true });
  skiff.trackOrigins(false);
  const device = skiff.getDefaultDevice();
  // The test harness wraps skiff's methods (pages/trace.js), so the loop's
  // line is the wrapper's caller: one of the stack's frames.
  const from = (o) => o.stack.some((f) => f.includes(at));
  const leak = m.origins.find((o) => from(o) && o.op === 'mul');
  c.ok('the leak is one site, at the line of the loop', leak !== undefined, `${at} in ${JSON.stringify(m.origins.map((o) => [o.op, o.stack]))}`);
  if (leak) {
    c.equal('5 tensors of 32 float32 on the default device', [leak.tensors, leak.bytes, leak.device], [5, 5 * 32 * 4, device]);
    c.ok('its stack starts with the site', leak.stack[0] === leak.site && leak.stack.length <= 4);
  }
  const exp = m.origins.find((o) => from(o) && o.op === 'exp');
  c.equal('the intermediate handles are listed too', exp && [exp.tensors, exp.bytes], [5, 5 * 32 * 4]);
  c.ok('a disposed tensor is not listed', !m.origins.some((o) => o.op === 'sin'));
  kept.forEach((t) => t.dispose());
  skiff.trackOrigins(true);
  const after = skiff.memory({ detailed: true });
  skiff.trackOrigins(false);
  c.ok('disposed, the leak leaves the report', !after.origins.some(from));
  return c.report();
};
