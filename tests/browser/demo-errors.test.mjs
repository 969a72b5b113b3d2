// The demo page's error advice (www/lib/errors.js) for the errors skiff
// really raises: produced here by the package in Node (cpu), or, where Node
// has no GPU, built as the GPU runtime raises them (a SkiffError with the
// kind its Rust error maps to; the webgpu passes check those kinds on the
// real device). The advice follows `kind`, never the message's words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as skiff from '../../web/node.js';
import { collapsedError, divergedError, explain, fileError } from '../../www/lib/errors.js';
import { assertBuilt } from './lib/browser.mjs';

const raised = (fn) => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error');
};

/** A SkiffError as the GPU runtime raises it (src/backend/gpu, src/web/error.rs). */
const gpuError = (op, kind, detail) => new skiff.SkiffError(`${op}: ${detail}`, { op, kind });

test('size errors read as out of memory, with a smaller batch as the advice', async () => {
  assertBuilt();
  await skiff.init({ device: 'cpu' });
  const errors = [
    raised(() => skiff.zeros([2 ** 15, 2 ** 14])),
    raised(() => skiff.ones([40000, 1]).matmul(skiff.ones([1, 40000]))),
    gpuError('zeros', 'memory', "a GPU buffer of 4294967296 bytes exceeds the adapter's limit of 2147483648 bytes per storage buffer"),
    gpuError('data', 'memory', 'a GPU command failed: Out of memory'),
  ];
  for (const e of errors) {
    assert.ok(e instanceof skiff.SkiffError, `${e.message} is a SkiffError`);
    assert.equal(e.kind, 'memory', e.message);
    const r = explain(e, 150);
    assert.equal(r.title, 'Out of memory', e.message);
    assert.match(r.advice, /smaller batch size/);
    assert.match(r.advice, /last checkpoint \(step 150\)/);
    assert.equal(r.gpuProblem, true);
  }
});

test('a lost device offers the cpu, from the start when nothing was saved', () => {
  const r = explain(gpuError('data', 'device-lost', 'the GPU device was lost: device lost (Destroyed): GpuDevice::destroy was called'));
  assert.equal(r.title, 'The GPU device was lost');
  assert.match(r.advice, /Continue on the cpu from the start/);
  assert.equal(r.gpuProblem, true);
});

test('a failed GPU command offers the cpu', () => {
  const r = explain(gpuError('data', 'device', "a GPU command failed: Validation Error: kernel 'add' failed"), 20);
  assert.equal(r.title, 'The GPU reported an error');
  assert.match(r.advice, /Continue on the cpu from the last checkpoint \(step 20\)/);
  assert.equal(r.gpuProblem, true);
});

test('bad files, divergence and anything else get their own advice and no cpu switch', () => {
  const file = explain(fileError('x.safetensors: header too large'));
  assert.equal(file.title, 'That file could not be loaded');
  assert.equal(file.gpuProblem, false);
  const nan = explain(divergedError(NaN, 5));
  assert.equal(nan.title, 'Training diverged');
  assert.equal(nan.gpuProblem, false);
  const shape = raised(() => skiff.ones([2, 3]).matmul(skiff.ones([2, 3])));
  assert.equal(shape.kind, 'shape');
  const other = explain(shape);
  assert.equal(other.title, 'Something went wrong');
  assert.equal(other.gpuProblem, false);
});

test('the advice follows the kind, not the words of the message', () => {
  // Words that the old regular expressions took for a lost device or out of memory.
  for (const message of ['data: the GPU device was lost', 'zeros: out of memory', 'conv2d: a WebGPU shader failed', 'x: the training loss became NaN']) {
    assert.equal(explain(new Error(message)).title, 'Something went wrong', message);
  }
  // A SkiffError of another kind that happens to mention memory.
  const value = gpuError('manualSeed', 'value', 'could not allocate a seed');
  assert.equal(explain(value).title, 'Something went wrong');
});

test('a test accuracy back at chance reads as divergence or as not learning, by what happened', () => {
  // Learned, then fell back: the rate is too high, whatever it is.
  const fell = explain(collapsedError({ acc: 0.098, step: 400 }, 0.05, 0.82));
  assert.equal(fell.title, 'Training diverged');
  assert.match(fell.advice, /learning rate \(0\.05\) is too high: lower it/);
  assert.equal(fell.gpuProblem, false);
  assert.match(collapsedError({ acc: 0.098, step: 400 }, 0.05, 0.82).message, /fell from 82\.0% to 9\.8% at step 400/);
  // Never left chance: a high rate collapsed it (SGD at lr 9), a tiny one never moved.
  assert.equal(explain(collapsedError({ acc: 0.1, step: 300 }, 9, 0.11)).title, 'Training diverged');
  const slow = explain(collapsedError({ acc: 0.12, step: 300 }, 1e-6, 0.12));
  assert.equal(slow.title, 'Training is not learning');
  assert.match(slow.advice, /too low .*raise it/);
  // The NaN loss's error keeps its own advice.
  assert.match(explain(divergedError(NaN, 9)).advice, /Lower the learning rate/);
});
