// skiff for browsers and production bundles: the .wasm is fetched from the
// package's pkg/ folder. Bundlers (Vite build, webpack 5, Rollup, esbuild with
// a file loader) see the `new URL(..., import.meta.url)` below and emit the
// .wasm as an asset next to their output; a plain <script type="module">
// importing this file fetches it from node_modules.
import initWasm from '../pkg/skiff.js';
import { _setLoader } from './api.js';
import { chooseRelaxedSimd, fetchWasm, wasmSource } from './load.js';

// Both URLs are written out whole: bundlers emit only the assets they can see.
const build = (relaxed) =>
  relaxed ? new URL('../pkg/skiff_relaxed_bg.wasm', import.meta.url) : new URL('../pkg/skiff_bg.wasm', import.meta.url);

_setLoader(async (source, relaxedSimd) =>
  initWasm({
    module_or_path: await (source === undefined ? fetchWasm(build(chooseRelaxedSimd(relaxedSimd))) : wasmSource(source)),
  }),
);

export * from './api.js';
