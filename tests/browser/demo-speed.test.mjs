// The demo's step timing (www/lib/speed.js), in Node: what counts as a
// measurement of a mode and which measurements the page compares.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepSpeed, StepWindow } from '../../www/lib/speed.js';

const MLP = 'mlp|adam|64|cpu';
const steps = (w, n, step) => {
  for (let i = 0; i < n; i++) w.add(step);
  return w;
};

test('a window counts only when its steps ran in one mode on one workload and none captured', () => {
  const eager = { mode: 'eager', workload: MLP, samples: 64, captured: false };
  const w = steps(new StepWindow(100), 10, eager);
  assert.deepEqual(w.clean(), { mode: 'eager', workload: MLP });
  assert.equal(w.steps, 10);
  assert.equal(w.samples, 640);
  assert.equal(w.start, 100);

  const switched = steps(steps(new StepWindow(0), 4, eager), 6, { ...eager, mode: 'compiled' });
  assert.equal(switched.clean(), null, 'the mode changed inside the window');
  const resized = steps(steps(new StepWindow(0), 4, eager), 6, { ...eager, workload: 'mlp|adam|32|cpu', samples: 32 });
  assert.equal(resized.clean(), null, 'the batch size changed inside the window');
  assert.equal(resized.samples, 4 * 64 + 6 * 32);
  const capturing = steps(new StepWindow(0), 9, { ...eager, mode: 'compiled' });
  capturing.add({ ...eager, mode: 'compiled', captured: true });
  assert.equal(capturing.clean(), null, 'a capture runs the step eagerly and records it');
});

test('the speed of a mode is the median ms per step of its last 5 windows, per workload', () => {
  const speed = new StepSpeed();
  assert.equal(speed.msPerStep(MLP, 'eager'), null, 'not measured');
  speed.record(MLP, 'eager', 40, 10); // 4 ms/step
  assert.equal(speed.msPerStep(MLP, 'eager'), 4);
  speed.record(MLP, 'eager', 20, 10); // 2
  assert.equal(speed.msPerStep(MLP, 'eager'), 3, 'the mean of the middle two');
  for (const ms of [100, 30, 50]) speed.record(MLP, 'eager', ms, 10); // 10, 3, 5
  assert.equal(speed.msPerStep(MLP, 'eager'), 4, 'median of 4, 2, 10, 3, 5');
  speed.record(MLP, 'eager', 10, 10); // 1: the 4 drops out -> 2, 10, 3, 5, 1
  assert.equal(speed.msPerStep(MLP, 'eager'), 3);
  assert.equal(speed.msPerStep(MLP, 'compiled'), null, 'the other mode is not measured yet');
  assert.equal(speed.msPerStep('cnn|adam|64|cpu', 'eager'), null, 'another workload is not compared');
  speed.record(MLP, 'compiled', 25, 10);
  assert.equal(speed.msPerStep(MLP, 'compiled'), 2.5);
  speed.record(MLP, 'compiled', 25, 0);
  speed.record(MLP, 'compiled', NaN, 10);
  assert.equal(speed.msPerStep(MLP, 'compiled'), 2.5, 'empty or unmeasured windows are ignored');
});
