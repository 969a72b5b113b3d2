// skiff in a dedicated Web Worker (`skiff-ml/worker`: web/worker.js), in
// Chromium on both passes: the worker gets its own wasm instance and device
// (WebGPU on SwiftShader, or the cpu with WebGPU hidden), trains while the
// page keeps drawing frames, streams its loss, answers a prediction between
// two training steps, hands its weights to the page (moved, not copied)
// where they predict the same, stops when a call's signal aborts, and its
// errors arrive as SkiffErrors with their op and kind.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, assertBuilt, openSession, loadSuite } from './lib/browser.mjs';

const T = { timeout: 120_000 };

for (const pass of [PASSES.webgpu, PASSES.cpu]) {
  describe(`Web Worker (${pass.name} pass)`, { timeout: 300_000 }, () => {
    let s;
    let backend;
    before(async () => {
      assertBuilt({ wrapper: true });
      s = await openSession(pass);
      await loadSuite(s, '/tests/browser/pages/worker-page.js');
      backend = await s.call('start', pass.name);
    });
    after(() => s?.close());

    test('the worker runs init() with its own device', T, () => {
      // Chromium validates relaxed SIMD, so the worker loads that build by default.
      assert.equal(backend.wasmSimd, 'relaxed');
      if (pass.gpu) {
        assert.equal(backend.device, 'webgpu');
        assert.match(JSON.stringify(backend.adapter).toLowerCase(), /swiftshader/);
        // SwiftShader has no half-precision shaders; the device says so.
        assert.equal(backend.adapter.shaderF16, false);
      } else {
        assert.equal(backend.device, 'cpu');
        assert.match(backend.reason, /webgpu|navigator\.gpu/i, `the worker says why it fell back: ${backend.reason}`);
      }
    });

    test('trains in the worker, streams its loss, and the page keeps drawing', T, async (t) => {
      const steps = 150;
      const { result, metrics, frames, trainMs, midway } = await s.call('trainWhileDrawing', steps);
      assert.equal(result.done, steps);
      assert.equal(result.aborted, false);
      assert.deepEqual(metrics.map((m) => m.step), Array.from({ length: steps / 10 }, (_, i) => 10 * (i + 1)));
      assert.ok(metrics.at(-1).loss < 0.5 * metrics[0].loss, `the loss falls: ${metrics.map((m) => m.loss.toFixed(3))}`);
      // The page drew frames while the worker trained, between metrics too.
      assert.ok(metrics.at(-1).framesSoFar > metrics[0].framesSoFar, `frames at the first and last metrics: ${metrics[0].framesSoFar}, ${metrics.at(-1).framesSoFar}`);
      // At least half the display's 60 frames a second while training ran
      // (a fixed count failed on a fast machine: 150 steps took 71 ms).
      const expected = Math.max(2, Math.floor((0.5 * trainMs) / 16.7));
      t.diagnostic(`${frames} frames during ${trainMs.toFixed(0)} ms of training`);
      assert.ok(frames >= expected, `${frames} frames drawn during ${trainMs.toFixed(0)} ms of training, expected ${expected}`);
      // The worker answered a prediction between two of its training steps.
      assert.equal(midway.beforeTrainEnded, true, 'the prediction came back before training ended');
      assert.ok(midway.steps > 0 && midway.steps < steps, `predicted after step ${midway.steps}`);
      assert.equal(midway.probs.length, 5);
    });

    test("the worker's weights, moved to the page, predict what the worker predicts", T, async () => {
      const r = await s.call('weightsOnThePage');
      assert.equal(r.isUint8Array, true);
      assert.ok(r.bytes > (2 * 16 + 16 + 16 * 2 + 2) * 4, `a safetensors file of ${r.bytes} bytes`);
      assert.deepEqual([r.received, r.sentAfter], [1000, 0], 'bytes marked with transfer() move to the worker');
      assert.equal(r.steps, 150);
      // XOR learned: the class-1 points (signs agree) high, the others low.
      assert.ok(r.worker[0] > 0.8 && r.worker[1] > 0.8 && r.worker[2] < 0.2 && r.worker[3] < 0.2, `${r.worker}`);
      const tol = pass.gpu ? 1e-5 : 0; // the page runs on the cpu; the cpu worker computes the same bits
      r.page.forEach((p, i) => assert.ok(Math.abs(p - r.worker[i]) <= tol, `point ${i}: page ${p}, worker ${r.worker[i]}`));
    });

    test("serve()'s own emit sends events from work that outlived its call", T, async () => {
      assert.deepEqual(await s.call('background'), { result: 'scheduled', event: { after: 20 } });
    });

    test("a call's AbortSignal stops the handler between steps", T, async () => {
      const { result, before } = await s.call('abortMidway');
      assert.equal(result.aborted, true);
      assert.ok(result.done >= 5 && result.done < 100_000, `stopped after ${result.done} steps`);
      assert.deepEqual({ done: before.done, aborted: before.aborted }, { done: 0, aborted: true });
    });

    test('errors cross as SkiffErrors naming the op; misuse is named; terminate() rejects what runs', T, async () => {
      const e = await s.call('errors', pass.name);
      assert.deepEqual({ ...e.bad, message: undefined }, { name: 'SkiffError', message: undefined, op: 'matmul', kind: 'shape', skiff: true });
      assert.match(e.bad.message, /^matmul: .*\[2, 3\].*\[4, 5\]/);
      assert.equal(e.unknown.op, 'SkiffWorker.call');
      assert.match(e.unknown.message, /no handler "nope" \(it serves "train", "predict", "weights", "received", "bad", "later", "hang"\)/);
      for (const [key, op, pattern] of [
        ['method', 'SkiffWorker.call', /method must be a string, got the number 42/],
        ['signal', 'SkiffWorker.call', /signal must be an AbortSignal, got the string "stop"/],
        ['clone', 'SkiffWorker.call', /predict: the argument cannot be sent to a worker/],
        ['start', 'SkiffWorker.start', /worker must be a Worker or a script URL, got the number 42/],
        ['option', 'SkiffWorker.start', /unknown option "devise"/],
        ['transfer', 'transfer', /value must be an object/],
        ['listener', 'SkiffWorker.on', /listener must be a function/],
      ]) {
        assert.equal(e[key]?.op, op, `${key}: ${JSON.stringify(e[key])}`);
        assert.equal(e[key].kind, 'argument', key);
        assert.equal(e[key].skiff, true, key);
        assert.match(e[key].message, pattern, key);
      }
      assert.equal(e.throws.op, 'SkiffWorker.start');
      assert.equal(e.throws.kind, 'device-lost');
      assert.match(e.throws.message, /worker-throws\.js.*failed/);
      assert.equal(e.after.probs.length, 5, 'the worker answers after the errors');
      assert.equal(e.baselineSimd, 'simd128', 'SkiffWorker.start passes relaxedSimd to the worker');
      assert.equal(e.baselineTrained, 5, 'and it trains there');
      assert.deepEqual([e.terminated.op, e.terminated.kind], ['SkiffWorker.call', 'value']);
      assert.match(e.terminated.message, /^SkiffWorker\.call: hang: the worker .*worker-train\.js.* was terminated/);
      assert.match(e.later.message, /^SkiffWorker\.call: predict: .*was terminated/);
    });
  });
}
