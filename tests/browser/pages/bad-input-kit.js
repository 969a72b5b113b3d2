// How the bad-input corpus (bad-input.js) writes its entries.

/** The kinds a SkiffError may have (web/index.d.ts: ErrorKind). */
export const ERROR_KINDS = ['shape', 'axis', 'dtype', 'device', 'value', 'autograd', 'memory', 'device-lost', 'argument'];

/**
 * A call that must throw a SkiffError whose `op` is `op`, whose message starts
 * with "`op`: " and matches every pattern (RegExps), and whose `kind` is one
 * of ERROR_KINDS: the one given among the patterns as a string, if any.
 */
export const T = (label, call, op, ...patterns) => {
  const kinds = patterns.filter((p) => typeof p === 'string');
  for (const k of kinds) if (!ERROR_KINDS.includes(k)) throw new Error(`bad-input entry ${label}: ${k} is no error kind`);
  return { kind: 'throws', label, call, op, patterns: patterns.filter((p) => p instanceof RegExp), errorKind: kinds[0] };
};

/**
 * A legal call and PyTorch's documented result: `want` lists what must hold
 * of the plain result (a tensor as { shape, dtype, values }; NaN equals NaN).
 */
export const G = (label, call, want) => ({ kind: 'gives', label, call, want });
