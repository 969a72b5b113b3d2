// skiff for bundlers' development servers (the "development" export
// condition: Vite's dev server, webpack in development mode). Vite's dev
// server pre-bundles dependencies into node_modules/.vite/deps/ without the
// files they reference through `new URL(..., import.meta.url)`, so the .wasm
// cannot be fetched from next to this module there; this entry carries it
// inlined (base64, written by scripts/build-wasm.sh) and needs no bundler
// configuration. Production builds resolve web/index.js, which fetches the
// .wasm as a separate, cacheable asset.
import initWasm from '../pkg/skiff.js';
import { _setLoader } from './api.js';
import { chooseRelaxedSimd, decodeBase64, wasmSource } from './load.js';

// Imported when needed: a page downloads one of the two inlined builds.
const inlined = async (relaxed) =>
  (relaxed ? await import('../pkg/skiff_relaxed_bg.wasm.base64.js') : await import('../pkg/skiff_bg.wasm.base64.js')).default;

_setLoader(async (source, relaxedSimd) =>
  initWasm({
    module_or_path: source === undefined ? decodeBase64(await inlined(chooseRelaxedSimd(relaxedSimd))) : await wasmSource(source),
  }),
);

export * from './api.js';
