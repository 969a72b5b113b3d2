// skiff for browsers and bundlers: the wasm is fetched from next to the
// wasm-bindgen glue (bundlers such as Vite copy it as an asset).
import initWasm from '../pkg/skiff.js';
import { _setLoader } from './api.js';

_setLoader(() => initWasm());

export * from './api.js';
