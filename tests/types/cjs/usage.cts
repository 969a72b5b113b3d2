// The package's types as a CommonJS TypeScript file sees them (require()).
import skiff = require('skiff-ml');

async function main(): Promise<number[]> {
  const info: skiff.BackendInfo = await skiff.init({ device: 'cpu' });
  const device: 'cpu' | 'webgpu' = info.device;
  const model = new skiff.nn.Sequential(new skiff.nn.Linear(2, 4), new skiff.nn.ReLU(), new skiff.nn.Linear(4, 2));
  const opt = new skiff.optim.Adam(model.parameters(), { lr: 0.05 });
  const x: skiff.Tensor = skiff.tensor([[0, 1], [1, 0]]);
  const loss = skiff.tidy(() => {
    opt.zeroGrad();
    const l = model.forward(x).crossEntropy(skiff.tensor([1, 0], { dtype: 'int32' }));
    l.backward();
    opt.step();
    return l;
  });
  // @ts-expect-error: init takes an options object, not a device name
  await skiff.init('cpu');
  return [await loss.item(), device.length];
}

export = main;
