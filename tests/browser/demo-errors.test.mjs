// The demo page's error advice (www/lib/errors.js) for the errors skiff
// really raises: produced here by the package in Node (cpu), or quoted from
// the GPU runtime where Node has no GPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as skiff from '../../web/node.js';
import { explain } from '../../www/lib/errors.js';
import { assertBuilt } from './lib/browser.mjs';

const raised = (fn) => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error');
};

test('size errors read as out of memory, with a smaller batch as the advice', async () => {
  assertBuilt();
  await skiff.init({ device: 'cpu' });
  const errors = [
    raised(() => skiff.zeros([2 ** 15, 2 ** 14])),
    raised(() => skiff.ones([40000, 1]).matmul(skiff.ones([1, 40000]))),
    new Error("alloc: a GPU buffer of 4294967296 bytes exceeds the adapter's limit of 2147483648 bytes per storage buffer"),
    new Error('to_vec: a GPU command failed: Out of memory'),
  ];
  for (const e of errors) {
    const r = explain(e, 150);
    assert.equal(r.title, 'Out of memory', e.message);
    assert.match(r.advice, /smaller batch size/);
    assert.match(r.advice, /last checkpoint \(step 150\)/);
    assert.equal(r.gpuProblem, true);
  }
});

test('a lost device offers the cpu, from the start when nothing was saved', () => {
  const r = explain(new Error('to_vec: the GPU device was lost: device lost (Destroyed): GpuDevice::destroy was called'));
  assert.equal(r.title, 'The GPU device was lost');
  assert.match(r.advice, /Continue on the cpu from the start/);
  assert.equal(r.gpuProblem, true);
});

test('bad files, divergence and anything else get their own advice and no cpu switch', () => {
  const file = explain(Object.assign(new Error('x.safetensors: header too large'), { kind: 'file' }));
  assert.equal(file.title, 'That file could not be loaded');
  assert.equal(file.gpuProblem, false);
  const nan = explain(new Error('the training loss became NaN: the learning rate (5) is too high; press Reset'));
  assert.equal(nan.title, 'Training diverged');
  assert.equal(nan.gpuProblem, false);
  const other = explain(raised(() => skiff.ones([2, 3]).matmul(skiff.ones([2, 3]))));
  assert.equal(other.title, 'Something went wrong');
  assert.equal(other.gpuProblem, false);
});
