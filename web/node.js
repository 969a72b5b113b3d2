// skiff for Node (ESM; scripts/build-wasm.sh bundles this file into
// pkg/node.cjs for require()). The .wasm is read from disk. Node has no
// WebGPU, so init({ device: 'auto' }) chooses the cpu fallback (and says why).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import initWasm, { setDeterministic } from '../pkg/skiff.js';
import { _setLoader } from './api.js';
import { checkWasmBytes, chooseRelaxedSimd, fetchWasm, loadError, wasmSource } from './load.js';

/** A path or file: URL is read from disk; http(s) is fetched. */
async function readWasm(where) {
  const url = String(where);
  if (/^https?:/.test(url)) return fetchWasm(url);
  const file = url.startsWith('file:') ? fileURLToPath(url) : url;
  let bytes;
  try {
    bytes = await readFile(file);
  } catch (e) {
    throw loadError(`reading ${file} failed: ${e.message}`);
  }
  return checkWasmBytes(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), file);
}

/** One of the package's two builds (see web/index.js). */
const build = (relaxed) => new URL(relaxed ? '../pkg/skiff_relaxed_bg.wasm' : '../pkg/skiff_bg.wasm', import.meta.url);

/**
 * SKIFF_DETERMINISTIC, read as the native build reads it: 1/true/on/yes or
 * 0/false/off/no (unset or empty: off). Another value fails init(), naming it.
 */
function deterministicFromEnv() {
  const value = process.env.SKIFF_DETERMINISTIC ?? '';
  const v = value.trim().toLowerCase();
  if (['', '0', 'false', 'off', 'no'].includes(v)) return false;
  if (['1', 'true', 'on', 'yes'].includes(v)) return true;
  throw loadError(`SKIFF_DETERMINISTIC=${JSON.stringify(value)} is not one of 1, 0, true, false, on, off, yes, no`);
}

_setLoader(async (source, relaxedSimd) => {
  const deterministic = deterministicFromEnv();
  const instance = await initWasm({
    module_or_path: await (source === undefined
      ? readWasm(build(chooseRelaxedSimd(relaxedSimd)))
      : wasmSource(source, readWasm)),
  });
  if (deterministic) setDeterministic(true);
  return instance;
});

export * from './api.js';
