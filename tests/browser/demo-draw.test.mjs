// The demo's draw pad (www/lib/draw.js) and renderers (www/lib/images.js) in
// Chromium, on tests/browser/pages/draw.html: a 280x280 pad shown at 200x200
// CSS px with a 3-px border. Real mouse drags (playwright's page.mouse),
// touch as synthetic pointer events and as real touch input (CDP), and the
// pixels read back with getImageData. No wasm is needed: these are plain JS.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSES, openSession } from './lib/browser.mjs';

const K = 280 / 200; // canvas units per CSS px

// Ink (alpha, 0..1) of the pad at canvas coordinates.
function inkAt(page, x, y) {
  return page.evaluate(([x, y]) => {
    const c = document.getElementById('pad');
    return c.getContext('2d').getImageData(x, y, 1, 1).data[3] / 255;
  }, [x, y]);
}
// Centre of mass of a 28x28 image, pixel (x, y) spanning [x, x+1).
function com28(img) {
  let m = 0;
  let mx = 0;
  let my = 0;
  img.forEach((v, i) => {
    m += v;
    mx += v * ((i % 28) + 0.5);
    my += v * (Math.floor(i / 28) + 0.5);
  });
  return [mx / m, my / m];
}
function assertCentred(img) {
  assert.equal(img.length, 784);
  assert.ok(img.every((v) => v >= 0 && v <= 1), 'values in [0, 1]');
  assert.ok(Math.max(...img) > 0.9, 'solid ink inside the strokes');
  const [cx, cy] = com28(img);
  assert.ok(Math.abs(cx - 14) <= 0.5 && Math.abs(cy - 14) <= 0.5, `centre of mass (${cx}, ${cy})`);
}
const padState = (page) =>
  page.evaluate(() => {
    const { pad, state } = window.__draw;
    const m = pad.toMnist();
    return { empty: pad.isEmpty(), changes: state.changes.slice(), clears: state.clears, mnist: m && Array.from(m) };
  });
const reset = (page) =>
  page.evaluate(() => {
    window.__draw.pad.clear();
    window.__draw.state.changes.length = 0;
  });

describe('demo draw pad and renderers', { timeout: 60_000 }, () => {
  let s;
  let box; // the pad's border box in CSS px
  before(async () => {
    s = await openSession(PASSES.cpu, { pagePath: '/tests/browser/pages/draw.html' });
    await s.page.waitForFunction(() => window.__draw);
    box = await s.page.locator('#pad').boundingBox();
    s.checkErrors();
  });
  after(() => s?.close());
  // CSS px inside the pad's content box -> page coordinates
  const at = (x, y) => [box.x + 3 + x, box.y + 3 + y];

  test('the pad is 280x280 whatever its CSS size, and takes touch itself', async () => {
    const r = await s.page.evaluate(() => {
      const c = document.getElementById('pad');
      return { w: c.width, h: c.height, touch: c.style.touchAction, empty: window.__draw.pad.isEmpty() };
    });
    assert.deepEqual(r, { w: 280, h: 280, touch: 'none', empty: true });
    assert.equal(Math.round(box.width), 206, 'shown at 200 CSS px plus the border');
    assert.equal((await padState(s.page)).mnist, null);
    s.checkErrors();
  });

  test('a mouse drag draws where the pointer went and fires onChange', async () => {
    await reset(s.page);
    const { mouse } = s.page;
    // a "1": a vertical stroke at CSS x = 60, from y = 30 to 170
    await mouse.move(...at(60, 30));
    await mouse.down();
    for (let y = 40; y <= 170; y += 10) await mouse.move(...at(60, y), { steps: 2 });
    // let a frame pass with the button still down: the throttled onChange runs in it
    await s.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const during = (await padState(s.page)).changes.length;
    await mouse.up();
    const st = await padState(s.page);
    assert.ok(during >= 1, 'onChange fired while drawing');
    assert.equal(st.changes.length, during + 1, 'and once more on pointerup');
    assert.equal(st.empty, false);
    // client -> canvas mapping: CSS (60, 100) is canvas (84, 140)
    assert.ok((await inkAt(s.page, 60 * K, 100 * K)) > 0.9, 'ink under the stroke');
    assert.equal(await inkAt(s.page, 60 * K + 20, 100 * K), 0, 'none beyond the line width');
    assert.equal(await inkAt(s.page, 150 * K, 100 * K), 0, 'none elsewhere');
    assert.ok((await inkAt(s.page, 60 * K, 30 * K)) > 0.9, 'the stroke starts where the button went down');
    // the stroke's centre line, from one pixel row: x = 60 CSS px -> 84 (the
    // border and the 200 -> 280 scale both accounted for)
    const row = await s.page.evaluate(() =>
      Array.from(document.getElementById('pad').getContext('2d').getImageData(0, 140, 280, 1).data.filter((_, i) => i % 4 === 3)),
    );
    const centre = row.reduce((a, v, x) => a + v * (x + 0.5), 0) / row.reduce((a, v) => a + v, 0);
    assert.ok(Math.abs(centre - 60 * K) <= 1, `stroke centre at x = ${centre}, expected ${60 * K}`);
    const width = row.filter((v) => v > 127).length;
    assert.ok(Math.abs(width - 22) <= 2, `line width ${width}, expected 22`);
    assertCentred(st.mnist);
    s.checkErrors();
  });

  test('a stroke that leaves the pad ends when the button is released outside it', async () => {
    await reset(s.page);
    const { mouse } = s.page;
    await mouse.move(...at(100, 60));
    await mouse.down();
    await mouse.move(...at(100, 260), { steps: 8 }); // out through the bottom edge
    await mouse.up(); // released below the pad: pointer capture still delivers it
    const n = (await padState(s.page)).changes.length;
    assert.ok((await inkAt(s.page, 100 * K, 279)) > 0.9, 'the stroke ran to the edge');
    // hovering back over the pad with no button pressed must not draw
    await mouse.move(...at(20, 150));
    await mouse.move(...at(180, 150), { steps: 8 });
    assert.equal(await inkAt(s.page, 40 * K, 150 * K), 0, 'no drawing after the release');
    assert.equal((await padState(s.page)).changes.length, n, 'no onChange from hovering');
    s.checkErrors();
  });

  test('the right mouse button does not draw', async () => {
    await reset(s.page);
    await s.page.mouse.move(...at(100, 100));
    await s.page.mouse.down({ button: 'right' });
    await s.page.mouse.move(...at(150, 150), { steps: 4 });
    await s.page.mouse.up({ button: 'right' });
    assert.equal((await padState(s.page)).empty, true);
    s.checkErrors();
  });

  test('touch pointer events draw; a second finger is ignored; onChange is throttled to frames', async () => {
    await reset(s.page);
    const r = await s.page.evaluate(async ([left, top]) => {
      const c = document.getElementById('pad');
      const fire = (type, id, x, y) =>
        c.dispatchEvent(
          new PointerEvent(type, {
            pointerId: id, pointerType: 'touch', isPrimary: id === 7, clientX: left + x, clientY: top + y,
            button: type === 'pointermove' ? -1 : 0, buttons: type === 'pointerup' ? 0 : 1,
            bubbles: true, cancelable: true,
          }),
        );
      const frame = () => new Promise((res) => requestAnimationFrame(res));
      const { state } = window.__draw;
      await frame();
      // a horizontal stroke at y = 100, 60 moves in one task
      fire('pointerdown', 7, 30, 100);
      fire('pointerdown', 8, 150, 180); // a second finger, ignored
      for (let x = 32; x <= 150; x += 2) {
        fire('pointermove', 7, x, 100);
        fire('pointermove', 8, x, 180);
      }
      const sync = state.changes.length;
      await frame();
      await frame();
      const afterFrames = state.changes.length;
      fire('pointerup', 8, 150, 180);
      fire('pointerup', 7, 150, 100);
      return { sync, afterFrames, final: state.changes.length };
    }, at(0, 0));
    assert.equal(r.sync, 0, 'no onChange inside the event handlers');
    assert.equal(r.afterFrames, 1, 'one onChange for 60 moves in one frame');
    assert.equal(r.final, 2, 'and one on pointerup');
    assert.ok((await inkAt(s.page, 90 * K, 100 * K)) > 0.9, 'the touch stroke drew');
    assert.equal(await inkAt(s.page, 90 * K, 180 * K), 0, 'the second finger did not');
    assertCentred((await padState(s.page)).mnist);
    s.checkErrors();
  });

  test('a real touch drag draws and does not scroll the page', async () => {
    await reset(s.page);
    const cdp = await s.page.context().newCDPSession(s.page);
    await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 1 });
    const touch = (type, x, y) =>
      cdp.send('Input.dispatchTouchEvent', { type, touchPoints: type === 'touchEnd' ? [] : [{ x, y }] });
    // an upward drag, which would scroll the page down if the pad let it
    await touch('touchStart', ...at(120, 180));
    for (let y = 170; y >= 20; y -= 10) await touch('touchMove', ...at(120, y));
    await touch('touchEnd');
    await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: false });
    await cdp.detach();
    const st = await padState(s.page);
    assert.equal(st.empty, false);
    assert.ok((await inkAt(s.page, 120 * K, 100 * K)) > 0.9, 'the touch stroke drew');
    assert.equal(await s.page.evaluate(() => window.scrollY), 0, 'the page did not scroll');
    assert.ok(st.changes.length >= 1);
    s.checkErrors();
  });

  test('clear() empties the pad; strokeTo() draws in canvas units', async () => {
    await s.page.evaluate(() => window.__draw.pad.strokeTo([[10, 10], [270, 270]]));
    const clears = (await padState(s.page)).clears;
    await reset(s.page);
    const cleared = await s.page.evaluate(() => {
      const d = document.getElementById('pad').getContext('2d').getImageData(0, 0, 280, 280).data;
      return d.some((v) => v !== 0);
    });
    let st = await padState(s.page);
    assert.equal(cleared, false, 'every pixel is transparent again');
    assert.equal(st.empty, true);
    assert.equal(st.mnist, null);
    assert.equal(st.clears, clears + 1, 'onClear fired');

    // a "7" in the top-left corner, drawn programmatically
    const n = await s.page.evaluate(() => {
      window.__draw.pad.strokeTo([[20, 20], [60, 20], [100, 20], [80, 60], [60, 100], [40, 140]]);
      return window.__draw.state.changes.length;
    });
    assert.equal(n, 1, 'strokeTo fires onChange right away');
    st = await padState(s.page);
    assert.equal(st.empty, false);
    assert.ok((await inkAt(s.page, 60, 20)) > 0.9);
    assert.ok((await inkAt(s.page, 60, 100)) > 0.9);
    assertCentred(st.mnist);
    s.checkErrors();
  });

  test('drawDigit renders 28x28, dark on white by default', async () => {
    const r = await s.page.evaluate(() => {
      const c = document.getElementById('digit');
      const px = (x, y) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
      const f = new Float32Array(784);
      f[0] = 1;
      f[28 + 1] = 0.5;
      window.__draw.drawDigit(c, f);
      const float = { size: [c.width, c.height], ink: px(0, 0), half: px(1, 1), bg: px(5, 5) };
      const u = new Uint8Array(784);
      u[27] = 255;
      window.__draw.drawDigit(c, u, { invert: false });
      const bytes = { size: [c.width, c.height], ink: px(27, 0), bg: px(0, 0) };
      return { float, bytes };
    });
    assert.deepEqual(r.float.size, [28, 28]);
    assert.deepEqual(r.float.ink, [0, 0, 0, 255]);
    assert.ok(Math.abs(r.float.half[0] - 127.5) <= 1, `half ink is mid grey: ${r.float.half}`);
    assert.deepEqual(r.float.bg, [255, 255, 255, 255]);
    assert.deepEqual(r.bytes.size, [28, 28]);
    assert.deepEqual(r.bytes.ink, [255, 255, 255, 255], 'invert: false is white on black');
    assert.deepEqual(r.bytes.bg, [0, 0, 0, 255]);
    s.checkErrors();
  });

  test('drawWeights lays the images out in a grid with a diverging colormap', async () => {
    const r = await s.page.evaluate(() => {
      const c = document.getElementById('weights');
      const px = (x, y) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3));
      const { drawWeights } = window.__draw;
      drawWeights(c, new Float32Array(16 * 784).fill(0.1), { rows: 28, cols: 28, count: 16 });
      const mlp = [c.width, c.height];
      drawWeights(c, new Float32Array(8 * 25).fill(-1), { rows: 5, cols: 5, count: 8 });
      const cnn = [c.width, c.height];
      // three 2x2 images: each normalised by its own max |w|
      const w = Float32Array.of(2, -2, 0, 1, /**/ 0.01, 0, 0, 0, /**/ -4, -2, 0, 0);
      drawWeights(c, w, { rows: 2, cols: 2, count: 3 });
      return {
        mlp, cnn, small: [c.width, c.height],
        pos: px(0, 0), neg: px(1, 0), zero: px(0, 1), halfPos: px(1, 1), gap: px(2, 0),
        tiny: px(3, 0), // image 1 at x 3: its max is its only value, so full red
        img2: px(0, 3), img2half: px(1, 3), // image 2 on the second grid row
      };
    });
    assert.deepEqual(r.mlp, [4 * 28 + 3, 4 * 28 + 3], '16 units: 4x4 grid, 1-px gaps');
    assert.deepEqual(r.cnn, [3 * 5 + 2, 3 * 5 + 2], '8 filters: 3 per row, 3 rows');
    assert.deepEqual(r.small, [5, 5]);
    assert.deepEqual(r.pos, [255, 0, 0], 'max positive: red');
    assert.deepEqual(r.neg, [0, 0, 255], 'max negative: blue');
    assert.deepEqual(r.zero, [255, 255, 255], 'zero: white');
    assert.ok(r.halfPos[0] === 255 && Math.abs(r.halfPos[1] - 128) <= 1 && r.halfPos[1] === r.halfPos[2], `half: ${r.halfPos}`);
    assert.notDeepEqual(r.gap, [255, 255, 255], 'gaps differ from a zero weight');
    assert.deepEqual(r.tiny, [255, 0, 0], 'normalised per image');
    assert.deepEqual(r.img2, [0, 0, 255]);
    assert.ok(r.img2half[2] === 255 && Math.abs(r.img2half[0] - 128) <= 1, `half negative: ${r.img2half}`);
    s.checkErrors();
  });

  test('probabilityBars marks the top digit and reuses its nodes', async () => {
    const r = await s.page.evaluate(() => {
      const el = document.getElementById('bars');
      const { probabilityBars } = window.__draw;
      const snap = () => ({
        top: el.dataset.top,
        rows: el.querySelectorAll('.prob-row').length,
        marked: Array.from(el.querySelectorAll('.prob-row.top'), (n) => n.querySelector('.prob-digit').textContent),
        widths: Array.from(el.querySelectorAll('.prob-fill'), (n) => n.style.width),
        pcts: Array.from(el.querySelectorAll('.prob-pct'), (n) => n.textContent),
      });
      const p = new Float32Array(10).fill(0.04);
      p[7] = 0.64;
      probabilityBars(el, p);
      const first = snap();
      const node = el.querySelector('.prob-fill');
      const q = new Float32Array(10);
      q[2] = 1;
      probabilityBars(el, q);
      const second = { ...snap(), reused: el.querySelector('.prob-fill') === node };
      probabilityBars(el, null);
      return { first, second, none: snap() };
    });
    assert.equal(r.first.rows, 10);
    assert.equal(r.first.top, '7');
    assert.deepEqual(r.first.marked, ['7']);
    assert.equal(r.first.widths[7], '64%');
    assert.equal(r.first.widths[0], '4%');
    assert.equal(r.first.pcts[7], '64.0%');
    assert.equal(r.second.rows, 10);
    assert.equal(r.second.reused, true, 'updated in place');
    assert.equal(r.second.top, '2');
    assert.deepEqual(r.second.marked, ['2']);
    assert.equal(r.second.widths[2], '100%');
    assert.equal(r.none.top, '');
    assert.deepEqual(r.none.marked, []);
    assert.ok(r.none.widths.every((w) => w === '0%'), `empty bars: ${r.none.widths}`);
    s.checkErrors();
  });
});
