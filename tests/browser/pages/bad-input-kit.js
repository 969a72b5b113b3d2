// How the bad-input corpus (bad-input.js) writes its entries.

/** A call that must throw an Error whose message starts with "`op`: " and matches every pattern. */
export const T = (label, call, op, ...patterns) => ({ kind: 'throws', label, call, op, patterns });

/**
 * A legal call and PyTorch's documented result: `want` lists what must hold
 * of the plain result (a tensor as { shape, dtype, values }; NaN equals NaN).
 */
export const G = (label, call, want) => ({ kind: 'gives', label, call, want });
