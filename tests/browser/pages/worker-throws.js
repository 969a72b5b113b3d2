// A worker script that throws while it starts (tests/browser/worker.test.mjs).
throw new Error('worker-throws.js: broken on purpose');
