// Milliseconds per training step, kept per mode (eager or compiled) and per
// workload, so the page can compare the two modes on the same work: a speed
// measured on the MLP at batch 64 says nothing about the CNN at batch 256.
//
// The trainer times windows of LOG_EVERY steps (the readback at the end of
// each included, as the loop really waits for it). A window counts only when
// all its steps ran in one mode and none of them captured a program: a capture
// runs the step eagerly and records it, which is neither mode's steady speed.

const KEEP = 5; // windows per mode and workload; the median of these is shown

export class StepSpeed {
  constructor() {
    this.samples = new Map(); // workload key -> { eager: [ms], compiled: [ms] }
  }

  /** Records one clean window of `steps` steps that took `ms` in `mode` on `workload`. */
  record(workload, mode, ms, steps) {
    if (!(steps > 0) || !Number.isFinite(ms)) return;
    let entry = this.samples.get(workload);
    if (!entry) this.samples.set(workload, (entry = { eager: [], compiled: [] }));
    const list = entry[mode];
    list.push(ms / steps);
    if (list.length > KEEP) list.shift();
  }

  /** The median ms per step of the recent windows of `mode` on `workload`, or null when not measured. */
  msPerStep(workload, mode) {
    const list = this.samples.get(workload)?.[mode];
    if (!list?.length) return null;
    const sorted = [...list].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }
}

/** One window of steps being timed: which mode and workload its steps ran, and whether any captured. */
export class StepWindow {
  constructor(start) {
    this.start = start;
    this.steps = 0;
    this.samples = 0;
    this.kinds = new Map(); // 'mode workload' -> { mode, workload }
    this.captured = false;
  }

  add({ mode, workload, samples, captured }) {
    this.steps += 1;
    this.samples += samples;
    this.kinds.set(`${mode} ${workload}`, { mode, workload });
    if (captured) this.captured = true;
  }

  /** { mode, workload } when every step ran the same and none captured, else null (not a steady speed). */
  clean() {
    return this.kinds.size === 1 && !this.captured ? [...this.kinds.values()][0] : null;
  }
}
