// A user's app: imports skiff by its package name and lets Vite bundle it
// (the .wasm becomes an asset next to the bundle). tests/browser/vite.test.mjs
// builds this app with Vite's JS API and loads it in Chromium.
import { init, tensor, tidy, grad } from 'skiff-ml';

async function main() {
  const info = await init({ device: 'auto' });
  const result = await tidy(async () => {
    const a = tensor([
      [1, 2],
      [3, 4],
    ]);
    const x = tensor([1, -1], { requiresGrad: true });
    const y = a.matmul(x.reshape([2, 1])).reshape([2]); // [-1, -1]
    const [g] = grad([y.mul(y).sum()], [x]); // 2 A^T (A x) = [-8, -12]
    return { y: Array.from(await y.data()), g: Array.from(await g.data()) };
  });
  return { device: info.device, reason: info.reason, ...result };
}

const out = document.getElementById('out');
main().then(
  (r) => {
    window.__result = r;
    out.textContent = JSON.stringify(r);
  },
  (e) => {
    window.__result = { error: String((e && e.stack) || e) };
    out.textContent = window.__result.error;
  },
);
