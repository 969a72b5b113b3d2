// The live-training demo page (www/) on WebGPU (SwiftShader in headless Chromium).
import { defineDemoPass } from './lib/demo.mjs';

defineDemoPass('webgpu');
