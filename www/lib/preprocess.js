// Turns a drawing into an MNIST-like 28x28 input. A model trained on MNIST
// has only seen digits that were size-normalised into a 20x20 box and then
// centred by centre of mass in a 28x28 field (white on black), so a drawn
// digit must go through the same steps or the predictions are poor.
// Pure JS without the DOM: the same code runs in the page and in Node tests.

const SIZE = 28; // MNIST's image side
const BOX = 20; // MNIST's digits fit a 20x20 box inside the 28x28 image
const INK = 0.05; // coverage above this is ink (below: antialiasing dust)

/**
 * Centre of mass of a width x height image of non-negative values, in pixel
 * units where pixel (x, y) spans [x, x+1) x [y, y+1) (so a uniform 28x28
 * image has its centre at (14, 14)). Returns [cx, cy], or null when the
 * image has no mass.
 */
export function centreOfMass(img, width, height) {
  let m = 0;
  let mx = 0;
  let my = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const v = img[y * width + x];
      if (v > 0) {
        m += v;
        mx += v * (x + 0.5);
        my += v * (y + 0.5);
      }
    }
  }
  return m > 0 ? [mx / m, my / m] : null;
}

/**
 * Ink coverage in [0, 1] of an RGBA canvas (ImageData.data) on which dark,
 * opaque strokes were drawn over a transparent background: the alpha channel
 * is exactly the coverage (antialiased edges included), whatever the colour.
 */
export function alphaFromRGBA(rgba, width, height) {
  const n = width * height;
  if (rgba.length < 4 * n) throw new Error(`alphaFromRGBA: ${rgba.length} values for ${width}x${height} RGBA`);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = rgba[4 * i + 3] / 255;
  return out;
}

/**
 * Area-averaging weights for resampling `n` source pixels at `scale` output
 * pixels per source pixel: output pixel i covers source [i/scale, (i+1)/scale),
 * and its value is the mean over that span (source beyond n counts as empty).
 * Returns one list of [sourceIndex, weight] per output pixel.
 */
function areaWeights(n, scale, outN) {
  const lists = [];
  for (let i = 0; i < outN; i++) {
    const a = i / scale;
    const b = Math.min((i + 1) / scale, n);
    const list = [];
    for (let k = Math.floor(a); k < b; k++) {
      const overlap = Math.min(b, k + 1) - Math.max(a, k);
      if (overlap > 1e-9) list.push([k, overlap * scale]);
    }
    lists.push(list);
  }
  return lists;
}

/**
 * MNIST-style preprocessing of a drawn digit. `alpha` holds width x height ink
 * coverage values in [0, 1]. Returns a Float32Array(784) (row-major 28x28,
 * ink = 1, background = 0), or null when nothing was drawn.
 *
 * 1. bounding box of the ink (values > 0.05);
 * 2. scale it, keeping the aspect ratio, so its longer side is 20 px; each
 *    output pixel is the mean coverage of the source area it covers (area
 *    averaging keeps thin strokes visible and preserves the total ink up to
 *    the scale squared). The scale is exact, so the shorter side may end in a
 *    partly covered pixel instead of being rounded;
 * 3. paste it into 28x28 so the ink's centre of mass lands on (14, 14), the
 *    shift rounded to whole pixels and clamped to keep the digit inside.
 */
export function toMnist(alpha, width, height) {
  // 1. Bounding box.
  let x0 = width;
  let y0 = height;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (alpha[y * width + x] > INK) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  if (x1 < 0) return null;
  const bw = x1 - x0 + 1;
  const bh = y1 - y0 + 1;

  // 2. Area-averaged resampling, separably (the mean over a rectangle of a
  //    piecewise-constant image is a product of two 1-D box filters).
  const scale = BOX / Math.max(bw, bh);
  const ow = Math.min(BOX, Math.ceil(bw * scale - 1e-9));
  const oh = Math.min(BOX, Math.ceil(bh * scale - 1e-9));
  const wx = areaWeights(bw, scale, ow);
  const wy = areaWeights(bh, scale, oh);
  const rows = new Float32Array(bh * ow); // horizontal pass: bh rows of ow
  for (let y = 0; y < bh; y++) {
    const src = (y0 + y) * width + x0;
    for (let i = 0; i < ow; i++) {
      let s = 0;
      for (const [k, w] of wx[i]) s += alpha[src + k] * w;
      rows[y * ow + i] = s;
    }
  }
  const box = new Float32Array(oh * ow); // vertical pass
  for (let j = 0; j < oh; j++) {
    for (let i = 0; i < ow; i++) {
      let s = 0;
      for (const [k, w] of wy[j]) s += rows[k * ow + i] * w;
      box[j * ow + i] = Math.min(1, Math.max(0, s)); // guard against float drift
    }
  }

  // 3. Centre by centre of mass (the box has ink: its bounding box had some).
  const [cx, cy] = centreOfMass(box, ow, oh);
  const clamp = (v, hi) => Math.min(hi, Math.max(0, v));
  const ox = clamp(Math.round(SIZE / 2 - cx), SIZE - ow);
  const oy = clamp(Math.round(SIZE / 2 - cy), SIZE - oh);
  const out = new Float32Array(SIZE * SIZE);
  for (let j = 0; j < oh; j++) {
    out.set(box.subarray(j * ow, (j + 1) * ow), (oy + j) * SIZE + ox);
  }
  return out;
}
