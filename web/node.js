// skiff for Node (ESM; scripts/build-wasm.sh bundles this file into
// pkg/node.cjs for require()). The .wasm is read from disk. Node has no
// WebGPU, so init({ device: 'auto' }) chooses the cpu fallback (and says why).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import initWasm from '../pkg/skiff.js';
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

_setLoader(async (source, relaxedSimd) =>
  initWasm({
    module_or_path: await (source === undefined
      ? readWasm(build(chooseRelaxedSimd(relaxedSimd)))
      : wasmSource(source, readWasm)),
  }),
);

export * from './api.js';
