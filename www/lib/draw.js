// The demo's drawing pad: the user draws a digit with a mouse, pen or finger
// and the page classifies it live. Pointer Events cover all three input kinds
// with one code path.
import { alphaFromRGBA, toMnist } from './preprocess.js';

// The backing store is fixed at 280x280 (10x MNIST) whatever the CSS size, so
// the stroke width, and so the digit's look after preprocessing, does not
// depend on the screen. High-DPI would only sharpen what is downsampled anyway.
const SIZE = 280;
const INK_COLOUR = '#111';

export class DrawPad {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{ lineWidth?: number, onChange?: (pad: DrawPad) => void, onClear?: (pad: DrawPad) => void }} options
   *   lineWidth in canvas units (of 280). onChange fires at most once per
   *   animation frame while drawing, and once when a stroke ends.
   */
  constructor(canvas, { lineWidth = 22, onChange = null, onClear = null } = {}) {
    this.canvas = canvas;
    this.onChange = onChange;
    this.onClear = onClear;
    canvas.width = SIZE;
    canvas.height = SIZE;
    // Without this a touch drag scrolls or zooms the page instead of drawing.
    canvas.style.touchAction = 'none';
    canvas.style.userSelect = 'none';
    // toMnist() reads the pixels back on every change: keep them on the cpu.
    this.ctx = canvas.getContext('2d', { willReadFrequently: true });
    this.lineWidth = lineWidth;
    this._empty = true;
    this._pointerId = null; // the pointer drawing now; others (a second finger) are ignored
    this._last = null; // last input point
    this._mid = null; // where the drawn curve currently ends (a midpoint)
    this._frame = 0; // pending requestAnimationFrame id

    this._down = (e) => this._onDown(e);
    this._move = (e) => this._onMove(e);
    this._up = (e) => this._onUp(e);
    canvas.addEventListener('pointerdown', this._down);
    canvas.addEventListener('pointermove', this._move);
    canvas.addEventListener('pointerup', this._up);
    canvas.addEventListener('pointercancel', this._up);
    canvas.addEventListener('lostpointercapture', this._up);
  }

  /** Erases the drawing and calls onClear. */
  clear() {
    this._cancelFrame();
    this._pointerId = null;
    this._last = this._mid = null;
    this.ctx.clearRect(0, 0, SIZE, SIZE);
    this._empty = true;
    this.onClear?.(this);
  }

  /** True when nothing has been drawn since construction or the last clear(). */
  isEmpty() {
    return this._empty;
  }

  /** The drawing preprocessed like MNIST: Float32Array(784) in [0, 1], or null when empty. */
  toMnist() {
    if (this._empty) return null;
    const { data } = this.ctx.getImageData(0, 0, SIZE, SIZE);
    // Strokes are opaque on a transparent canvas: alpha is the ink coverage.
    return toMnist(alphaFromRGBA(data, SIZE, SIZE), SIZE, SIZE);
  }

  /** Draws one stroke through `points` ([x, y] in canvas units), then calls onChange. */
  strokeTo(points) {
    if (!points.length) return;
    this._begin(points[0]);
    for (const p of points.slice(1)) this._extend(p);
    this._end();
    this._cancelFrame();
    this.onChange?.(this);
  }

  /** Removes the listeners; the canvas keeps its pixels. */
  destroy() {
    this._cancelFrame();
    const c = this.canvas;
    c.removeEventListener('pointerdown', this._down);
    c.removeEventListener('pointermove', this._move);
    c.removeEventListener('pointerup', this._up);
    c.removeEventListener('pointercancel', this._up);
    c.removeEventListener('lostpointercapture', this._up);
  }

  // --- pointer input ---

  _onDown(e) {
    if (this._pointerId !== null) return; // already drawing with another pointer
    if (e.pointerType === 'mouse' && e.button !== 0) return; // left button only
    e.preventDefault(); // no text selection, no emulated mouse events
    this._pointerId = e.pointerId;
    // Capture keeps the stroke going when the pointer leaves the canvas and
    // guarantees the pointerup. It throws for pointers the browser does not
    // know as active (synthetic events), which can still draw.
    try {
      this.canvas.setPointerCapture(e.pointerId);
    } catch {
      /* not an active pointer: draw without capture */
    }
    this._begin(this._toCanvas(e));
    this._scheduleChange();
  }

  _onMove(e) {
    if (e.pointerId !== this._pointerId) return;
    e.preventDefault();
    // Fast strokes deliver several samples per event: use them all so the
    // curve follows the hand instead of cutting corners.
    const samples = e.getCoalescedEvents?.() ?? [];
    for (const s of samples.length ? samples : [e]) this._extend(this._toCanvas(s));
    this._scheduleChange();
  }

  _onUp(e) {
    if (e.pointerId !== this._pointerId) return;
    this._pointerId = null;
    this._end();
    // The final state is reported right away, not a frame later.
    this._cancelFrame();
    this.onChange?.(this);
  }

  /** Client coordinates -> canvas units, whatever the canvas's CSS size and border. */
  _toCanvas(e) {
    const r = this.canvas.getBoundingClientRect();
    const left = r.left + this.canvas.clientLeft;
    const top = r.top + this.canvas.clientTop;
    const w = this.canvas.clientWidth || r.width;
    const h = this.canvas.clientHeight || r.height;
    return [((e.clientX - left) * SIZE) / w, ((e.clientY - top) * SIZE) / h];
  }

  _scheduleChange() {
    if (this._frame || !this.onChange) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this.onChange?.(this);
    });
  }

  _cancelFrame() {
    if (this._frame) cancelAnimationFrame(this._frame);
    this._frame = 0;
  }

  // --- stroke rendering ---
  // Quadratic smoothing: the curve runs from midpoint to midpoint of
  // successive input points, with each input point as the control point, so
  // corners between samples become smooth arcs. Each piece is stroked as it
  // arrives; with round caps and opaque ink the pieces join seamlessly.

  _style() {
    const c = this.ctx;
    c.strokeStyle = INK_COLOUR;
    c.fillStyle = INK_COLOUR;
    c.lineWidth = this.lineWidth;
    c.lineCap = 'round';
    c.lineJoin = 'round';
  }

  _begin(p) {
    this._style();
    // A dot, so a tap without movement leaves a mark.
    const c = this.ctx;
    c.beginPath();
    c.arc(p[0], p[1], this.lineWidth / 2, 0, 2 * Math.PI);
    c.fill();
    this._last = p;
    this._mid = p;
    this._empty = false;
  }

  _extend(p) {
    if (!this._last) return this._begin(p);
    const [lx, ly] = this._last;
    if (p[0] === lx && p[1] === ly) return;
    const mid = [(lx + p[0]) / 2, (ly + p[1]) / 2];
    const c = this.ctx;
    this._style();
    c.beginPath();
    c.moveTo(this._mid[0], this._mid[1]);
    c.quadraticCurveTo(lx, ly, mid[0], mid[1]);
    c.stroke();
    this._last = p;
    this._mid = mid;
  }

  _end() {
    // Finish the last half-segment, from the last midpoint to the last point.
    if (this._last && this._mid) {
      const c = this.ctx;
      this._style();
      c.beginPath();
      c.moveTo(this._mid[0], this._mid[1]);
      c.lineTo(this._last[0], this._last[1]);
      c.stroke();
    }
    this._last = this._mid = null;
  }
}
