// scripts/lib/toolchain.sh, what `npm start` and `npm test` run first on a
// fresh machine: with fake `rustup`, `cargo`, `cc` and `id` on PATH (they log
// their arguments), each check must install what it can, announcing it, and
// otherwise stop with the exact command to run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './lib/browser.mjs';

/**
 * Runs `fn` (a toolchain.sh function) in bash with the given fake commands
 * (name -> shell body) first on PATH. Returns { status, stderr, calls }:
 * calls lists "name args..." for every fake invoked.
 */
function run(fn, fakes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-toolchain-'));
  const log = path.join(dir, 'calls.log');
  fs.writeFileSync(log, '');
  for (const [name, body] of Object.entries(fakes)) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!/usr/bin/env bash\necho "${name} $*" >> ${JSON.stringify(log)}\n${body}\n`);
    fs.chmodSync(file, 0o755);
  }
  try {
    const r = spawnSync('bash', ['-c', `. scripts/lib/toolchain.sh && ${fn}`], {
      cwd: REPO,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, SKIFF_CHROMIUM: '' },
    });
    const calls = fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
    return { status: r.status, stderr: r.stderr, calls };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('a missing wasm32 target is added through rustup, announced', () => {
  const r = run('rustup_add target wasm32-unknown-unknown', {
    rustup: 'if [ "$2" = list ]; then echo x86_64-unknown-linux-gnu; fi',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.calls, ['rustup target list --installed', 'rustup target add wasm32-unknown-unknown']);
  assert.match(r.stderr, /setup: installing the Rust target wasm32-unknown-unknown/);
});

test('an installed target is left alone', () => {
  const r = run('rustup_add target wasm32-unknown-unknown', {
    rustup: 'if [ "$2" = list ]; then echo wasm32-unknown-unknown; fi',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.calls, ['rustup target list --installed']);
  assert.equal(r.stderr, '');
});

test('wasm-bindgen-cli of another version: the pinned one is installed into .tools/, announced', () => {
  // A checkout of its own: this one's .tools/ may already hold the pinned
  // wasm-bindgen (npm test installs it there on a fresh machine).
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-checkout-'));
  try {
    const r = run(`TOOLCHAIN_ROOT=${JSON.stringify(root)} ensure_wasm_bindgen`, {
      'wasm-bindgen': 'echo "wasm-bindgen 0.2.100"',
      cargo: 'exit 0',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(
      r.calls.includes(`cargo install wasm-bindgen-cli --version 0.2.130 --root ${path.join(root, '.tools')}`),
      r.calls.join('\n'),
    );
    assert.match(r.stderr, /setup: installing wasm-bindgen-cli 0\.2\.130 into \.tools\//);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('the pinned wasm-bindgen-cli on PATH is used as it is', () => {
  const r = run('ensure_wasm_bindgen', { 'wasm-bindgen': 'echo "wasm-bindgen 0.2.130"', cargo: 'exit 0' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!r.calls.some((c) => c.startsWith('cargo')), r.calls.join('\n'));
});

test('no C linker, not root: stops with the apt-get line to run', () => {
  const r = run('ensure_rust', { cc: 'exit 1', id: 'echo 1000', 'apt-get': 'exit 0' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /setup: missing system packages \(a C linker for rustc\); run:\n\s+sudo apt-get install gcc libc6-dev/);
  assert.ok(!r.calls.some((c) => c.startsWith('apt-get')), 'nothing is installed without root');
});

test('no C linker, as root: apt-get installs it', () => {
  const r = run('ensure_rust', { cc: 'exit 1', id: 'echo 0', 'apt-get': 'exit 0' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.calls.includes('apt-get install -y --no-install-recommends gcc libc6-dev'), r.calls.join('\n'));
});

test('no Rust at all: the rustup line', () => {
  // Only the shell builtins and coreutils: no cargo anywhere on PATH.
  const r = spawnSync('bash', ['-c', '. scripts/lib/toolchain.sh && HOME=/nonexistent PATH=/nonexistent ensure_rust'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /Rust is not installed; install it with rustup[\s\S]*sh\.rustup\.rs/);
});

test('an installed Vulkan driver is found under set -o pipefail (no reinstall)', () => {
  // ldconfig -p piped into grep -q used to fail under pipefail (SIGPIPE), so
  // npm test reinstalled lavapipe on every run. Needs a real driver here.
  const probe = spawnSync('bash', ['-c', 'ls /usr/share/vulkan/icd.d/*.json'], { encoding: 'utf8' });
  if (probe.status !== 0) return; // no driver on this machine: nothing to find
  const r = spawnSync('bash', ['-c', 'set -euo pipefail; . scripts/lib/toolchain.sh; has_vulkan_icd'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `has_vulkan_icd failed: ${r.stderr}`);
});
