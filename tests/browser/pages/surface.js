// Runs every registry case through its camelCase JS call (op-table.js) and
// compares the result with the Rust closure's output (testing.caseData).
// Used by the browser passes (suite.js) and the Node test.
//
// No skiff import: the module under test is passed in, so the same file
// runs in Chromium and in Node.

import { OP_TABLE } from './op-table.js';

const key = (op, caseName) => `${op} / ${caseName}`;

/**
 * Registry cases without a table entry (`missing`) and table entries naming
 * no registry case (`stale`). A case with a `sample` other than
 * 'contiguous' is a variant of the base case of the same name: it runs
 * through the same entry, so it needs no entry of its own.
 */
export function tableProblems(cases, table = OP_TABLE) {
  const known = new Set(cases.map((c) => key(c.op, c.caseName)));
  const missing = [...new Set(cases.filter((c) => typeof table[c.op]?.[c.caseName] !== 'function').map((c) => key(c.op, c.caseName)))];
  const stale = Object.entries(table).flatMap(([op, entries]) =>
    Object.keys(entries)
      .map((name) => key(op, name))
      .filter((k) => !known.has(k)),
  );
  return { missing, stale };
}

/** The first element of `got` off `want` by more than atol + rtol |want|, as a message, or null. */
function firstMismatch(got, want, atol, rtol) {
  if (got.length !== want.length) return `${got.length} elements, expected ${want.length}`;
  let bad = 0;
  let first = -1;
  for (let i = 0; i < want.length; i++) {
    // Equal infinities are equal (their difference is NaN).
    const ok = Number.isNaN(want[i]) ? Number.isNaN(got[i]) : got[i] === want[i] || Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i]);
    if (!ok) {
      bad++;
      if (first < 0) first = i;
    }
  }
  if (!bad) return null;
  return `${bad} of ${want.length} elements differ (atol ${atol}, rtol ${rtol}); first at flat index ${first}: JS ${got[first]} vs Rust ${want[first]}`;
}

/**
 * Runs registry case `c` ({ op, caseIndex, caseName, sample? }) through its
 * table entry on `device`; resolves to null when the JS call gives the Rust
 * output (shape, dtype, values), else to a message saying how it differs.
 * (`table`: another table, for the runner's own tests.)
 * Float values match within `cpuTolerance` on the cpu (the same kernels run
 * either way) and within the case's parity tolerance on WebGPU (the Rust
 * output is computed on the cpu); int32 and bool values exactly.
 */
export async function checkSurfaceCase(skiff, tracer, c, { device, cpuTolerance = [0, 0], table = OP_TABLE }) {
  const entry = table[c.op]?.[c.caseName];
  if (typeof entry !== 'function') return 'no entry in op-table.js';
  return tracer.untraced(() =>
    skiff.tidy(async () => {
      const opts = c.sample === undefined ? undefined : { sample: c.sample };
      const data = skiff.testing.caseData(c.op, c.caseIndex, opts);
      if (data.caseName !== c.caseName) return `caseData gave case ${JSON.stringify(data.caseName)}`;
      // On the cpu the inputs stay as caseData made them (views included).
      const inputs = data.inputs.map((t) => (t.device === device ? t : t.to(device)));
      let out;
      let error = null;
      try {
        out = tracer.traced(() => entry(tracer.api, inputs));
      } catch (e) {
        error = e;
      }
      if (device !== 'cpu' && data.gpuDtypeError) {
        // float64 does not exist on WebGPU: the JS call must say so.
        if (!error) return 'expected an Error (no float64 on WebGPU), got a result';
        const ok = error instanceof Error && /^toDtype: /.test(error.message) && /float64/.test(error.message);
        return ok ? null : `expected a toDtype error about float64, got: ${error.message}`;
      }
      if (error) return `the JS call threw: ${error instanceof Error ? error.message : String(error)}`;
      if (!(out instanceof skiff.Tensor)) return `the JS call returned ${typeof out}, not a Tensor`;
      const want = data.output;
      const [gs, ws] = [Array.from(out.shape), Array.from(want.shape)];
      if (JSON.stringify(gs) !== JSON.stringify(ws)) return `shape [${gs}], Rust gives [${ws}]`;
      if (out.dtype !== want.dtype) return `dtype ${out.dtype}, Rust gives ${want.dtype}`;
      if (out.device !== device) return `the result lives on ${out.device}, expected ${device}`;
      const float = want.dtype === 'float32' || want.dtype === 'float64';
      const [atol, rtol] = !float ? [0, 0] : device === 'cpu' ? cpuTolerance : data.gpuTolerance;
      return firstMismatch(Array.from(await out.data()), Array.from(await want.data()), atol, rtol);
    }),
  );
}

/**
 * Every case of `cases` (testing.registryCases()) through checkSurfaceCase:
 * { missing, stale, failures: { op: ['caseName: message', ...] }, ran }.
 */
export async function checkSurface(skiff, tracer, cases, options) {
  const { missing, stale } = tableProblems(cases, options.table);
  const failures = {};
  let ran = 0;
  for (const c of cases) {
    const msg = await checkSurfaceCase(skiff, tracer, c, options);
    ran++;
    if (msg !== null) {
      const sample = c.sample && c.sample !== 'contiguous' ? ` [${c.sample} sample]` : '';
      (failures[c.op] ??= []).push(`${c.caseName}${sample} (#${c.caseIndex}): ${msg}`);
    }
  }
  return { missing, stale, failures, ran };
}
