// The bad-input corpus's page half for the Chromium passes
// (bad-input.test.mjs): the package imported as a user would, then the
// shared corpus (bad-input.js), the same one the Node test runs.
import * as skiff from '/web/index.js';
import { hugeAllocations, runBadInput } from './bad-input.js';

/** init() as the pass needs it; resolves to the chosen device. */
export async function setup(passName) {
  const info = await skiff.init({ device: passName === 'webgpu' ? 'webgpu' : 'auto' });
  return { device: info.device };
}

/** The whole corpus: { count, failures, ops, messages }. */
export function corpus() {
  return runBadInput(skiff);
}

/** Four live 1 GiB cpu tensors (bad-input.js). */
export function huge() {
  return hugeAllocations(skiff);
}
