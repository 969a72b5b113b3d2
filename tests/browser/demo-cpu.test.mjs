// The live-training demo page (www/) on the cpu fallback (WebGPU hidden).
import { defineDemoPass } from './lib/demo.mjs';

defineDemoPass('cpu');
