// The demo page's training-curve charts (www/lib/charts.js, on uPlot) in
// headless Chromium, through their own page (pages/charts.html: an import map
// to the installed uPlot, its css, and window.__suite driving the charts).
// Needs no pkg/: only the cpu pass, since the charts never touch WebGPU.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, openSession } from './lib/browser.mjs';

const LOSS = {
  title: 'Loss',
  yLabel: 'cross-entropy',
  series: [
    { key: 'train', label: 'train', color: '#2563eb' },
    { key: 'test', label: 'test', color: '#dc2626', dash: true },
  ],
};

// Train loss every 10 steps, test loss every 50: different x samplings.
function curves(steps) {
  const train = [];
  const test = [];
  for (let s = 10; s <= steps; s += 10) train.push([s, 2.3 / (1 + s / 100)]);
  for (let s = 50; s <= steps; s += 50) test.push([s, 2.5 / (1 + s / 120)]);
  return { train, test };
}

describe('demo charts (www/lib/charts.js)', { timeout: 120_000 }, () => {
  let s;
  before(async () => {
    s = await openSession(PASSES.cpu, { pagePath: '/tests/browser/pages/charts.html' });
  });
  after(() => s?.close());

  test('a chart renders on a canvas with the wrapper class', async () => {
    const st = await s.call('create', 'loss', LOSS);
    assert.equal(st.className, 'chart');
    assert.equal(st.points, '0');
    assert.ok(st.canvas.width > 0 && st.canvas.height > 0, `canvas ${JSON.stringify(st.canvas)}`);
    // fills the container's content box (600px - 2 * 8px padding)
    assert.ok(Math.abs(st.canvas.cssWidth - 584) <= 1, `canvas css width ${st.canvas.cssWidth}`);
    assert.equal(Math.round(st.canvas.cssHeight), 220);
    s.checkErrors();
  });

  test('update merges two samplings and counts every point', async () => {
    const data = curves(500); // 50 train + 10 test samples, test x a subset of train x
    let st = await s.call('update', 'loss', data);
    assert.equal(st.points, '60');
    // disjoint x too: train every 10 from 5, test every 50 from 50 (union of 60 x values)
    const shifted = { train: data.train.map(([x, y]) => [x - 5, y]), test: data.test };
    st = await s.call('update', 'loss', shifted);
    assert.equal(st.points, '60');
    // the legend shows each series' latest value while the cursor is off the plot
    // (label + value: uPlot's ':' is css); 4 significant digits
    const last = (k) => String(+data[k].at(-1)[1].toPrecision(4));
    assert.deepEqual(st.legend, ['step--', `train${last('train')}`, `test${last('test')}`]);
    s.checkErrors();
  });

  test('hovering shows values at the cursor, nearest sample for the sparse series', async () => {
    const legend = await s.call('hover', 'loss', 0.5);
    assert.ok(!legend.some((t) => t.endsWith('--')), `no empty legend value: ${legend}`);
    const after = await s.call('leave', 'loss');
    assert.match(after[0], /--$/, 'the x entry is empty off the plot');
    assert.notDeepEqual(after, legend, 'back to the latest values');
    s.checkErrors();
  });

  test('a finger sliding over the plot moves the cursor', async () => {
    const t = await s.call('touch', 'loss', 0.1, 0.9);
    assert.equal(t.touchAction, 'pan-y', 'vertical swipes still scroll the page');
    const step = (legend) => Number(legend[0].replace(/^\D+/, ''));
    assert.ok(step(t.down) > 0 && step(t.moved) > step(t.down), `cursor steps ${t.down[0]} -> ${t.moved[0]}`);
    assert.match(t.up[0], /--$/, 'lifting the finger shows the latest values again');
    s.checkErrors();
  });

  test('a 360px container shrinks the canvas and the height', async () => {
    const wide = await s.call('resizeBox', 'loss', '600px');
    const narrow = await s.call('resizeBox', 'loss', '360px');
    assert.ok(narrow.canvas.cssWidth < wide.canvas.cssWidth, `${narrow.canvas.cssWidth} < ${wide.canvas.cssWidth}`);
    assert.ok(Math.abs(narrow.canvas.cssWidth - 344) <= 1, `canvas css width ${narrow.canvas.cssWidth}`);
    assert.ok(narrow.canvas.width < wide.canvas.width, 'the canvas backing store shrank');
    assert.equal(Math.round(narrow.canvas.cssHeight), 180);
    const back = await s.call('resizeBox', 'loss', '800px');
    assert.ok(Math.abs(back.canvas.cssWidth - 784) <= 1, `canvas css width ${back.canvas.cssWidth}`);
    assert.equal(Math.round(back.canvas.cssHeight), 220);
    s.checkErrors();
  });

  test('clear() empties the chart and it takes new data afterwards', async () => {
    let st = await s.call('clear', 'loss');
    assert.equal(st.points, '0');
    assert.match(st.legend[1], /--$/);
    const text = await s.call('drawnText', 'loss', null);
    assert.ok(!text.includes('500'), `no tick left from the previous run: ${JSON.stringify(text)}`);
    st = await s.call('update', 'loss', curves(100));
    assert.equal(st.points, '12');
    s.checkErrors();
  });

  test('percent charts format the y ticks as percentages', async () => {
    await s.call('create', 'acc', {
      title: 'Accuracy',
      yLabel: 'accuracy',
      percent: true,
      series: [{ key: 'test', label: 'test accuracy', color: '#059669' }],
    });
    const text = await s.call('drawnText', 'acc', { test: [[50, 0.42], [100, 0.715], [150, 0.9]] });
    for (const tick of ['0%', '100%']) assert.ok(text.includes(tick), `tick ${tick} drawn: ${JSON.stringify(text)}`);
    assert.ok(text.some((t) => /^(20|25|50)%$/.test(t)), `an inner tick: ${JSON.stringify(text)}`);
    const st = await s.call('update', 'acc', { test: [[50, 0.42], [100, 0.715], [150, 0.9]] });
    assert.match(st.legend[1], /90%$/, 'the legend shows the latest accuracy');
    s.checkErrors();
  });

  test('update before the container has a width does not throw, and draws once it has one', async () => {
    await s.call('create', 'hidden', LOSS, { hidden: true });
    let st = await s.call('update', 'hidden', curves(200));
    assert.equal(st.points, '24');
    st = await s.call('resizeBox', 'hidden', '360px');
    assert.ok(st.canvas.width > 0 && Math.abs(st.canvas.cssWidth - 344) <= 1, `canvas ${JSON.stringify(st.canvas)}`);
    s.checkErrors();
  });

  // Speed is a benchmark's business; this checks a long run's curves still draw.
  test('5,000 points per series draw', async () => {
    await s.call('create', 'big', LOSS);
    const r = await s.call('timeUpdate', 'big', 5000);
    assert.equal(r.points, String(5000 + 1000));
    s.checkErrors();
  });

  test('latest() and destroy()', async () => {
    assert.equal(await s.call('latest', curves(100), 'test'), 2.5 / (1 + 100 / 120));
    assert.equal(await s.call('latest', { train: [] }, 'train'), null);
    assert.equal(await s.call('latest', {}, 'train'), null);
    for (const id of ['loss', 'acc', 'hidden', 'big']) assert.equal(await s.call('destroy', id), 0, `${id} removed its element`);
    s.checkErrors();
  });
});
