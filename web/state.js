// What init() chose, shared by the wrapper's modules.

import { fail } from './checks.js';

let chosen = null;

/** Records init()'s result; returns it. */
export function setBackend(info) {
  chosen = info;
  return chosen;
}

/** What init() chose ({ device, adapter, reason }), or null before init. */
export function backend() {
  return chosen;
}

/** Throws, naming `op`, until init() has run. */
export function ready(op) {
  if (!chosen) throw fail(op, 'value', 'skiff is not initialised yet: call await init() first');
}
