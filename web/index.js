// skiff for browsers and production bundles: the .wasm is fetched from the
// package's pkg/ folder. Bundlers (Vite build, webpack 5, Rollup, esbuild with
// a file loader) see the `new URL(..., import.meta.url)` below and emit the
// .wasm as an asset next to their output; a plain <script type="module">
// importing this file fetches it from node_modules.
import initWasm from '../pkg/skiff.js';
import { _setLoader } from './api.js';
import { fetchWasm, wasmSource } from './load.js';

_setLoader(async (source) =>
  initWasm({
    module_or_path: await (source === undefined
      ? fetchWasm(new URL('../pkg/skiff_bg.wasm', import.meta.url))
      : wasmSource(source)),
  }),
);

export * from './api.js';
