// skiff for bundlers' development servers (the "development" export
// condition: Vite's dev server, webpack in development mode). Vite's dev
// server pre-bundles dependencies into node_modules/.vite/deps/ without the
// files they reference through `new URL(..., import.meta.url)`, so the .wasm
// cannot be fetched from next to this module there; this entry carries it
// inlined (base64, written by scripts/build-wasm.sh) and needs no bundler
// configuration. Production builds resolve web/index.js, which fetches the
// .wasm as a separate, cacheable asset.
import initWasm from '../pkg/skiff.js';
import wasmBase64 from '../pkg/skiff_bg.wasm.base64.js';
import { _setLoader } from './api.js';
import { decodeBase64, wasmSource } from './load.js';

_setLoader(async (source) =>
  initWasm({ module_or_path: source === undefined ? decodeBase64(wasmBase64) : await wasmSource(source) }),
);

export * from './api.js';
