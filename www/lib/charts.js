// Training-curve line charts for the live demo, on uPlot (canvas; cheap
// enough to redraw a few times a second with thousands of points).
//
// Class names (style them in www/style.css):
//   .chart (or options.className)  the wrapper this module creates inside the
//                                  container; `element` of the returned chart
//   .uplot .u-title .u-legend ...  uPlot's own (the page links uPlot.min.css)
// The wrapper carries `data-points` = the number of points drawn. The chart
// takes the container's width and never widens it: give the container its
// width from the layout (a block, a grid cell, a `flex: 1` item).
import uPlot from 'uplot';

const HEIGHT = 220; // plot + axes, in CSS px (uPlot adds title and legend)
const HEIGHT_NARROW = 180;
const NARROW = 420; // container widths below this get the smaller height
const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed'];
const AXIS = { stroke: '#374151', grid: { stroke: '#e5e7eb', width: 1 }, ticks: { stroke: '#d1d5db', width: 1 } };

/** Last y of `data[key]` (an Array<[x, y]>), or null when there is none. */
export function latest(data, key) {
  const s = data?.[key];
  return s && s.length ? s[s.length - 1][1] : null;
}

// 12.5% style: enough digits for the tick step, none of the float noise.
const pct = (v) => `${+(v * 100).toFixed(1)}%`;
const num = (v) => String(+v.toPrecision(4));

/**
 * Merges per-series samples onto the sorted union of their x values (uPlot
 * wants one shared x array), with null where a series has no sample.
 * Samples are logged in step order, so this is a k-way merge, O(n * k);
 * an out-of-order series is sorted first. Non-finite y become gaps (a NaN
 * would break the auto range). Returns [aligned, pointsDrawn].
 */
function align(data, keys) {
  const cols = keys.map((k) => {
    const s = Array.isArray(data?.[k]) ? data[k] : [];
    return s.every((p, i) => i === 0 || s[i - 1][0] <= p[0]) ? s : [...s].sort((a, b) => a[0] - b[0]);
  });
  const xs = [];
  const ys = keys.map(() => []);
  const at = keys.map(() => 0);
  let points = 0;
  for (;;) {
    let x = Infinity;
    cols.forEach((s, j) => at[j] < s.length && s[at[j]][0] < x && (x = s[at[j]][0]));
    if (x === Infinity) break;
    xs.push(x);
    cols.forEach((s, j) => {
      let y = null;
      while (at[j] < s.length && s[at[j]][0] === x) y = s[at[j]++][1]; // duplicate x: last wins
      if (y != null && !Number.isFinite(y)) y = null;
      if (y != null) points++;
      ys[j].push(y);
    });
  }
  return [[xs, ...ys], points];
}

/**
 * createChart(container, { title, yLabel, xLabel = 'step', series: [{ key, label, color, dash? }],
 *   yRange?: [min, max] | null, percent?: boolean, className = 'chart' })
 * -> { update(data), clear(), resize(), destroy(), element }
 * data: { [key]: Array<[x, y]> }; each series has its own x samples (train loss
 * every 10 steps, test loss every 50): they are merged onto the sorted union of
 * x values with nulls, and spanGaps keeps the lines continuous.
 * `dash` is true (a default dash) or a canvas dash array. A null end of
 * `yRange` is automatic. `percent` formats y (fractions) as % and fixes it to
 * [0, 1] unless yRange says otherwise; otherwise y starts at 0.
 * update(data) redraws with the full data so far (setData, no rebuild);
 * clear() empties it; resize() re-measures now (the observer does it on the
 * next frame); destroy() disconnects the observer and removes the chart.
 */
export function createChart(container, options) {
  const { title, yLabel, xLabel = 'step', series, yRange = null, percent = false, className = 'chart' } = options;
  const keys = series.map((s) => s.key);
  const fmt = percent ? pct : num;
  const [lo, hi] = yRange ?? (percent ? [0, 1] : [0, null]);
  let lastY = keys.map(() => null); // for the legend when the cursor is off the plot

  const element = document.createElement('div');
  element.className = className;
  // Its width comes from the container, never from the canvas inside, so a
  // grid or flex parent can still shrink it (phones, rotated screens).
  Object.assign(element.style, { contain: 'inline-size', width: '100%', boxSizing: 'border-box' });
  element.dataset.points = '0';
  container.appendChild(element);

  const size = () => {
    const pad = getComputedStyle(element);
    const width = Math.max(0, Math.floor(element.clientWidth - parseFloat(pad.paddingLeft) - parseFloat(pad.paddingRight)));
    return { width, height: width < NARROW ? HEIGHT_NARROW : HEIGHT };
  };

  const plot = new uPlot(
    {
      title,
      ...size(),
      scales: {
        // Steps, not timestamps; with no data (after clear) an empty axis
        // instead of the previous run's.
        x: { time: false, range: (u, min, max) => (min == null ? [0, 100] : [min, max]) },
        y: {
          range: (u, min, max) => {
            if (lo != null && hi != null) return [lo, hi];
            if (!Number.isFinite(min) || !Number.isFinite(max)) [min, max] = [lo ?? 0, (hi ?? lo ?? 0) + 1]; // no data yet
            // uPlot's own padding and rounding for the automatic end(s).
            const [a, b] = uPlot.rangeNum(lo ?? min, hi ?? max, 0.1, true);
            return [lo ?? a, hi ?? b];
          },
        },
      },
      axes: [
        { ...AXIS, label: xLabel },
        { ...AXIS, label: yLabel, size: 56, values: (u, ticks) => ticks.map((v) => (v == null ? '' : fmt(v))) },
      ],
      series: [
        { label: xLabel, value: (u, v) => (v == null ? '--' : String(v)) },
        ...series.map((s, i) => ({
          label: s.label ?? s.key,
          stroke: s.color ?? PALETTE[i % PALETTE.length],
          width: 2,
          dash: s.dash === true ? [6, 4] : s.dash || undefined,
          spanGaps: true,
          // Off the plot (idx null) the legend shows the series' latest value.
          value: (u, v, sidx, idx) => {
            const y = idx == null ? lastY[sidx - 1] : v;
            return y == null ? '--' : fmt(y);
          },
        })),
      ],
      cursor: {
        // Streaming data resets the scales on every update: no drag-to-zoom,
        // which would also fight with touch scrolling.
        drag: { x: false, y: false, setScale: false },
        // Hovering between samples of a sparse series shows its nearest one.
        hover: { skip: [null] },
      },
      legend: { live: true },
    },
    [[], ...keys.map(() => [])],
    element,
  );

  // uPlot's cursor follows mouse events only: let a finger sliding sideways
  // over the plot move it too (vertical swipes still scroll the page).
  plot.over.style.touchAction = 'pan-y';
  const onTouch = (e) => {
    if (e.pointerType === 'mouse') return;
    const r = plot.over.getBoundingClientRect();
    plot.setCursor({ left: e.clientX - r.left, top: e.clientY - r.top });
  };
  const offTouch = (e) => e.pointerType !== 'mouse' && plot.setCursor({ left: -10, top: -10 });
  for (const t of ['pointerdown', 'pointermove']) plot.over.addEventListener(t, onTouch);
  for (const t of ['pointerup', 'pointercancel']) plot.over.addEventListener(t, offTouch);

  function resize() {
    const s = size();
    if (s.width !== plot.width || s.height !== plot.height) plot.setSize(s);
  }
  // Resizing inside the observer callback can change the container's height
  // (plot height, legend wrap) and trip Chrome's "ResizeObserver loop" error:
  // apply it on the next frame instead.
  let frame = 0;
  const observer = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(resize);
  });
  observer.observe(container);

  function update(data) {
    const [aligned, points] = align(data, keys);
    lastY = keys.map((k, j) => {
      const col = aligned[j + 1];
      for (let i = col.length - 1; i >= 0; i--) if (col[i] != null) return col[i];
      return null;
    });
    plot.setData(aligned);
    element.dataset.points = String(points);
  }

  return {
    element,
    update,
    clear: () => update({}),
    resize,
    destroy() {
      observer.disconnect();
      cancelAnimationFrame(frame);
      plot.destroy();
      element.remove();
    },
  };
}
