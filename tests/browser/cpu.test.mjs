// The browser suites on the cpu fallback (WebGPU hidden from the page).
import { definePass } from './lib/passes.mjs';

definePass('cpu');
