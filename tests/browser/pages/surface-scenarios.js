// The JS-surface scenarios (each returns { count, failures }, see checks.js),
// run by the browser passes through suite.js and by the Node test.
import { nnScenarios } from './surface-nn.js';
import { moduleScenarios } from './surface-modules.js';
import { lossInitScenarios } from './surface-loss-init.js';
import { optimScenarios } from './surface-optim.js';
import { apiScenarios } from './surface-api.js';
import { errorScenarios } from './surface-errors.js';
import { customScenarios } from './surface-custom.js';
import { toolScenarios } from './surface-tools.js';
import { determinismScenarios } from './surface-determinism.js';
import { torchScenarios } from './surface-torch.js';

export const surfaceScenarios = {
  ...nnScenarios,
  ...moduleScenarios,
  ...lossInitScenarios,
  ...optimScenarios,
  ...apiScenarios,
  ...errorScenarios,
  ...customScenarios,
  ...toolScenarios,
  ...determinismScenarios,
  ...torchScenarios,
};
