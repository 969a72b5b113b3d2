// skiff for Node: the wasm is read from disk. Node has no WebGPU, so
// init({ device: 'auto' }) chooses the cpu fallback (and says why).
import { readFile } from 'node:fs/promises';
import initWasm from '../pkg/skiff.js';
import { _setLoader } from './api.js';

_setLoader(async () => initWasm({ module_or_path: await readFile(new URL('../pkg/skiff_bg.wasm', import.meta.url)) }));

export * from './api.js';
