// The browser suites on WebGPU (SwiftShader in headless Chromium).
import { definePass } from './lib/passes.mjs';

definePass('webgpu');
