// A model trained and exported natively (examples/export_model.rs, through
// `cargo run`, built already by `cargo test --all-targets` in `npm test`):
// the browser suites load it with skiff.loadInferenceModel and compare its
// predictions with the native ones. `npm test` builds with the features in
// SKIFF_CARGO_FEATURES (scripts/test.sh); `cargo run` asks for the same, or
// it would compile the crate again without them (about two minutes).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './browser.mjs';

let cached = null;

/** `{ bytes: number[], expected: { shape, input, logits, logitsShape } }`. */
export function nativeModel() {
  if (cached) return cached;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-export-'));
  try {
    const features = process.env.SKIFF_CARGO_FEATURES ? ['--features', process.env.SKIFF_CARGO_FEATURES] : [];
    execFileSync('cargo', ['run', '--quiet', ...features, '--example', 'export_model', '--', dir], {
      cwd: REPO,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 900_000,
    });
    const bytes = Array.from(fs.readFileSync(path.join(dir, 'model.safetensors')));
    const expected = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
    cached = { bytes, expected };
    return cached;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
