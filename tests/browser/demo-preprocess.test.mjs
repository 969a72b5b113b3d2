// The demo's MNIST-style preprocessing (www/lib/preprocess.js), in Node: no
// browser needed, the module is pure JS. Each check compares against a truth
// computed here from the shape that was drawn, not from the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toMnist, alphaFromRGBA, centreOfMass } from '../../www/lib/preprocess.js';

const W = 280; // the draw pad's backing store
const H = 280;

function blank() {
  return new Float32Array(W * H);
}
function fillRect(img, x, y, w, h, v = 1) {
  for (let j = y; j < y + h; j++) for (let i = x; i < x + w; i++) img[j * W + i] = v;
  return img;
}
const sum = (a) => a.reduce((s, v) => s + v, 0);

// Independent of the module: centre of mass with pixel (x, y) spanning [x, x+1).
function com28(img) {
  let m = 0;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < 784; i++) {
    m += img[i];
    mx += img[i] * ((i % 28) + 0.5);
    my += img[i] * (Math.floor(i / 28) + 0.5);
  }
  return [mx / m, my / m];
}
// Columns and rows holding any ink (> 0) in a 28x28 image.
function extent(img) {
  const cols = new Set();
  const rows = new Set();
  for (let i = 0; i < 784; i++) {
    if (img[i] > 0) {
      cols.add(i % 28);
      rows.add(Math.floor(i / 28));
    }
  }
  return { w: cols.size, h: rows.size, x0: Math.min(...cols), y0: Math.min(...rows) };
}
function assertRange(out) {
  assert.equal(out.length, 784);
  for (const v of out) assert.ok(v >= 0 && v <= 1, `value ${v} outside [0, 1]`);
}

test('an empty drawing gives null', () => {
  assert.equal(toMnist(blank(), W, H), null);
  // faint antialiasing dust under the ink threshold is not a digit either
  assert.equal(toMnist(fillRect(blank(), 10, 10, 30, 30, 0.03), W, H), null);
  assert.equal(centreOfMass(new Float32Array(784), 28, 28), null);
});

for (const [name, x, y, w, h] of [
  ['wide, top left', 0, 0, 150, 60],
  ['tall, bottom right', 200, 100, 80, 180],
  ['square, middle', 90, 90, 100, 100],
  ['odd sizes', 31, 47, 123, 77],
  ['small (scaled up)', 140, 20, 5, 3],
]) {
  test(`a filled rectangle (${name}) is scaled to 20 px and centred by mass`, () => {
    const out = toMnist(fillRect(blank(), x, y, w, h), W, H);
    assertRange(out);
    const s = 20 / Math.max(w, h);
    const e = extent(out);
    const [longer, shorter] = w >= h ? [e.w, e.h] : [e.h, e.w];
    assert.equal(longer, 20, 'the longer side is 20 px');
    assert.ok(Math.abs(shorter - Math.min(w, h) * s) <= 1, `shorter side ${shorter} vs ${Math.min(w, h) * s}`);
    const [cx, cy] = com28(out);
    assert.ok(Math.abs(cx - 14) <= 0.5 && Math.abs(cy - 14) <= 0.5, `centre of mass (${cx}, ${cy})`);
    const ink = sum(out);
    const expected = w * h * s * s;
    assert.ok(Math.abs(ink - expected) <= 0.02 * expected, `total ink ${ink}, expected ${expected}`);
  });
}

test('a 1-px outline survives the 10x reduction (area averaging, no aliasing)', () => {
  const img = blank();
  // the outline of a 200x200 square, 1 px thick
  fillRect(img, 40, 40, 200, 1);
  fillRect(img, 40, 239, 200, 1);
  fillRect(img, 40, 40, 1, 200);
  fillRect(img, 239, 40, 1, 200);
  const out = toMnist(img, W, H);
  assertRange(out);
  const e = extent(out);
  assert.deepEqual([e.w, e.h], [20, 20]);
  // every pixel on the border of the 20x20 box has some ink: the mean of a
  // 10x10 source area with one line of 10 inked pixels (corners: 19) in it
  for (let k = 0; k < 20; k++) {
    for (const [i, j] of [[k, 0], [k, 19], [0, k], [19, k]]) {
      const v = out[(e.y0 + j) * 28 + e.x0 + i];
      assert.ok(v >= 0.099, `border pixel (${i}, ${j}) = ${v}`);
    }
  }
  const ink = sum(out);
  const expected = (4 * 200 - 4) * 0.01;
  assert.ok(Math.abs(ink - expected) <= 0.02 * expected, `total ink ${ink}, expected ${expected}`);
});

test('a diagonal 1-px line keeps its ink', () => {
  const img = blank();
  for (let k = 0; k < 250; k++) img[(10 + k) * W + 20 + k] = 1;
  const out = toMnist(img, W, H);
  assertRange(out);
  const expected = 250 * (20 / 250) ** 2;
  assert.ok(Math.abs(sum(out) - expected) <= 0.02 * expected, `total ink ${sum(out)}, expected ${expected}`);
  const lit = out.filter((v) => v > 0).length;
  assert.ok(lit >= 20, `${lit} pixels lit along the diagonal`);
});

// An asymmetric "7": a bar on top and a slanted stem, antialiased edges.
function seven(img, dx, dy) {
  fillRect(img, dx, dy, 120, 18);
  for (let j = 18; j < 170; j++) {
    const x = dx + 100 - Math.floor(j * 0.45);
    fillRect(img, x, dy + j, 16, 1);
    img[(dy + j) * W + x - 1] = 0.5;
  }
  return img;
}

test('the same shape in the corner and in the middle gives the same output', () => {
  const a = toMnist(seven(blank(), 0, 0), W, H);
  const b = toMnist(seven(blank(), 80, 60), W, H);
  const c = toMnist(seven(blank(), W - 121, H - 170), W, H);
  assertRange(a);
  for (let i = 0; i < 784; i++) {
    assert.ok(Math.abs(a[i] - b[i]) < 1e-6 && Math.abs(a[i] - c[i]) < 1e-6, `pixel ${i}: ${a[i]} ${b[i]} ${c[i]}`);
  }
  const [cx, cy] = com28(a);
  assert.ok(Math.abs(cx - 14) <= 0.5 && Math.abs(cy - 14) <= 0.5, `centre of mass (${cx}, ${cy})`);
});

test('centring is by centre of mass, not by bounding box', () => {
  // a right triangle: its mass sits a third of the way from the right-angle corner
  const img = blank();
  for (let j = 0; j < 150; j++) fillRect(img, 60, 70 + j, 150 - j, 1);
  const out = toMnist(img, W, H);
  assertRange(out);
  const [cx, cy] = com28(out);
  assert.ok(Math.abs(cx - 14) <= 0.5 && Math.abs(cy - 14) <= 0.5, `centre of mass (${cx}, ${cy})`);
  const e = extent(out);
  assert.deepEqual([e.x0, e.y0], [7, 7], 'the box is shifted towards the far corner, not centred');
});

test('a lopsided shape is shifted only as far as keeps it inside the image', () => {
  // a heavy block at the left end of a long thin bar: centring its mass at
  // x = 14 would push the bar's right end out of the image
  const img = blank();
  fillRect(img, 10, 100, 40, 40);
  fillRect(img, 50, 118, 200, 4);
  const out = toMnist(img, W, H);
  assertRange(out);
  const s = 20 / 240;
  const expected = (40 * 40 + 200 * 4) * s * s;
  assert.ok(Math.abs(sum(out) - expected) <= 0.02 * expected, 'no ink was cut off');
  const e = extent(out);
  assert.equal(e.x0 + e.w, 28, 'clamped against the right edge');
});

test('outputs stay in [0, 1] for antialiased (fractional) input', () => {
  const img = blank();
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let j = 60; j < 200; j++) for (let i = 90; i < 170; i++) img[j * W + i] = rand();
  assertRange(toMnist(img, W, H));
});

test('alphaFromRGBA reads the alpha channel; centreOfMass uses pixel centres', () => {
  const rgba = new Uint8ClampedArray([17, 17, 17, 255, 0, 0, 0, 0, 17, 17, 17, 51, 255, 255, 255, 0]);
  const a = alphaFromRGBA(rgba, 2, 2);
  assert.deepEqual(Array.from(a, (v) => +v.toFixed(3)), [1, 0, 0.2, 0]);
  assert.deepEqual(centreOfMass(new Float32Array(784).fill(1), 28, 28), [14, 14]);
  assert.deepEqual(centreOfMass(Float32Array.of(0, 0, 0, 1), 2, 2), [1.5, 1.5]);
});
