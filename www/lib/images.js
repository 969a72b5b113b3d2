// Small renderers for the demo: a 28x28 digit, a grid of learned weights,
// and the ten class-probability bars. The canvases are drawn at their true
// pixel size; the page's CSS scales them up with image-rendering: pixelated.

const SIDE = 28;
const GAP = [204, 204, 204, 255]; // opaque light grey between weight images, so white (zero) tiles stay apart

/**
 * Renders a 28x28 digit (784 values: a Uint8Array/Uint8ClampedArray is 0..255
 * as in the MNIST files, anything else 0..1 as the model's input) into
 * `canvas`, resized to 28x28. invert (default): dark ink on white, like the
 * draw pad; otherwise MNIST's white on black.
 */
export function drawDigit(canvas, pixels, { invert = true } = {}) {
  if (pixels.length !== SIDE * SIDE) throw new Error(`drawDigit: expected 784 values, got ${pixels.length}`);
  const bytes = pixels instanceof Uint8Array || pixels instanceof Uint8ClampedArray;
  canvas.width = SIDE;
  canvas.height = SIDE;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(SIDE, SIDE);
  for (let i = 0; i < SIDE * SIDE; i++) {
    const v = bytes ? pixels[i] : Math.round(Math.min(1, Math.max(0, pixels[i] || 0)) * 255);
    const g = invert ? 255 - v : v;
    img.data.set([g, g, g, 255], 4 * i);
  }
  ctx.putImageData(img, 0, 0);
}

/**
 * Renders `count` weight images of rows x cols, stored one after another
 * (PyTorch's layouts: Linear weight [out, in] gives one row per unit,
 * Conv2d [out, 1, kh, kw] one kernel per filter), as a grid of about
 * sqrt(count) per row with 1-px gaps. Diverging colours: negative blue,
 * 0 white, positive red. scale 'symmetric': each image normalised by its own
 * max |w| (shows every unit's pattern); 'global': by the max over all images
 * (shows which units are strong).
 */
export function drawWeights(canvas, weights, { rows, cols, count, scale = 'symmetric' } = {}) {
  const size = rows * cols;
  if (!(size > 0 && count > 0) || weights.length < size * count) {
    throw new Error(`drawWeights: ${weights.length} weights for ${count} images of ${rows}x${cols}`);
  }
  if (scale !== 'symmetric' && scale !== 'global') throw new Error(`drawWeights: unknown scale '${scale}'`);
  const perRow = Math.ceil(Math.sqrt(count));
  const gridRows = Math.ceil(count / perRow);
  const width = perRow * cols + perRow - 1;
  const height = gridRows * rows + gridRows - 1;
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(width, height);
  for (let i = 0; i < width * height; i++) img.data.set(GAP, 4 * i); // then each tile paints over its part

  const maxAbs = (from, to) => {
    let m = 0;
    for (let i = from; i < to; i++) m = Math.max(m, Math.abs(weights[i]));
    return m;
  };
  const globalMax = scale === 'global' ? maxAbs(0, size * count) : 0;
  for (let k = 0; k < count; k++) {
    const base = k * size;
    const m = scale === 'global' ? globalMax : maxAbs(base, base + size);
    const left = (k % perRow) * (cols + 1);
    const top = Math.floor(k / perRow) * (rows + 1);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        // t in [-1, 1]; all-zero (or NaN) weights show as white
        const t = m > 0 ? weights[base + r * cols + c] / m || 0 : 0;
        const fade = Math.round(255 * (1 - Math.min(1, Math.abs(t)))); // towards white as |t| -> 0
        const o = 4 * ((top + r) * width + left + c);
        img.data[o] = t >= 0 ? 255 : fade;
        img.data[o + 1] = fade;
        img.data[o + 2] = t >= 0 ? fade : 255;
        img.data[o + 3] = 255;
      }
    }
  }
  ctx.putImageData(img, 0, 0);
}

// The bar nodes of each container, built once and updated in place: the bars
// change many times a second while training, and rebuilding would churn the DOM.
const barNodes = new WeakMap();

function buildBars(container) {
  container.replaceChildren();
  const rows = [];
  for (let d = 0; d < 10; d++) {
    const row = document.createElement('div');
    row.className = 'prob-row';
    row.dataset.digit = String(d);
    const digit = document.createElement('div');
    digit.className = 'prob-digit';
    digit.textContent = String(d);
    const bar = document.createElement('div');
    bar.className = 'prob-bar';
    const fill = document.createElement('div');
    fill.className = 'prob-fill';
    bar.append(fill);
    const pct = document.createElement('div');
    pct.className = 'prob-pct';
    row.append(digit, bar, pct);
    container.append(row);
    rows.push({ row, fill, pct, width: '', text: '' });
  }
  barNodes.set(container, rows);
  return rows;
}

/**
 * Shows ten rows "digit | bar | pct" for `probs` (10 probabilities), the most
 * likely digit's row marked with class 'top' and container.dataset.top set to
 * it; null shows empty bars and dataset.top = ''.
 */
export function probabilityBars(container, probs) {
  let rows = barNodes.get(container);
  if (!rows || rows[0].row.parentNode !== container) rows = buildBars(container);
  let top = -1;
  if (probs) {
    for (let d = 0; d < 10; d++) if (top < 0 || probs[d] > probs[top]) top = d;
  }
  for (let d = 0; d < 10; d++) {
    const p = probs ? Math.min(1, Math.max(0, probs[d] || 0)) : 0;
    const r = rows[d];
    // Only touch what changed (compared with what we last wrote: the DOM
    // normalises '0.0%' to '0%'), to spare style recalculation.
    const width = `${(p * 100).toFixed(1)}%`;
    if (r.width !== width) r.fill.style.width = r.width = width;
    const text = probs ? width : '';
    if (r.text !== text) r.pct.textContent = r.text = text;
    r.row.classList.toggle('top', d === top);
  }
  container.dataset.top = top >= 0 ? String(top) : '';
}
