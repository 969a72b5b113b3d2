// A small assertion collector for the JS-surface scenarios: each scenario
// compares what skiff computes with a truth computed here in plain JS (an
// update formula, a hand-worked value) and returns { count, failures }, which
// the Node side asserts on (lib/surface.mjs). Evaluating in the page keeps the
// data that crosses to Node small.
//
// No imports: the same file runs in Chromium and in Node.

const show = (v) =>
  JSON.stringify(v, (k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : ArrayBuffer.isView(x) ? Array.from(x) : x));

const flat = (v) => (Array.isArray(v) || ArrayBuffer.isView(v) ? Array.from(v).flat(Infinity) : [v]);

/** The values of a tensor, as a plain array. */
export const arr = async (t) => Array.from(await t.data());

export function checker() {
  const failures = [];
  let count = 0;
  const fail = (label, msg) => failures.push(`${label}: ${msg}`);
  return {
    /** |actual - expected| <= atol + rtol |expected| elementwise (numbers or nested arrays). */
    close(label, actual, expected, { atol = 1e-5, rtol = 1e-4 } = {}) {
      count++;
      const [a, e] = [flat(actual), flat(expected)];
      if (a.length !== e.length) return fail(label, `${a.length} values, expected ${e.length}: ${show(a)} vs ${show(e)}`);
      const i = a.findIndex((v, k) => !(typeof v === 'number' && Math.abs(v - e[k]) <= atol + rtol * Math.abs(e[k])));
      if (i >= 0) fail(label, `[${i}] = ${a[i]}, expected ${e[i]} (atol ${atol}, rtol ${rtol})\n    got      ${show(a)}\n    expected ${show(e)}`);
    },
    /** Deep equality through JSON (typed arrays compare as arrays). */
    equal(label, actual, expected) {
      count++;
      if (show(actual) !== show(expected)) fail(label, `got ${show(actual)}, expected ${show(expected)}`);
    },
    ok(label, cond, detail = '') {
      count++;
      if (!cond) fail(label, `not true${detail ? `: ${detail}` : ''}`);
    },
    /**
     * `fn` (sync or async) must throw an Error whose message matches every
     * pattern (the op's name, the bad value, ...).
     */
    async throws(label, fn, ...patterns) {
      count++;
      let err = null;
      try {
        await fn();
      } catch (e) {
        err = e;
      }
      if (err === null) return fail(label, 'expected an Error, nothing was thrown');
      if (!(err instanceof Error)) return fail(label, `expected an Error, got ${show(String(err))}`);
      const missed = patterns.filter((p) => !p.test(err.message));
      if (missed.length) fail(label, `the message ${show(err.message)} does not match ${missed.join(', ')}`);
    },
    report: () => ({ count, failures }),
  };
}
