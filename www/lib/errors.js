// Turns an error from training into a title and advice the page shows.
//
// Classified by what the error says about itself, never by its message:
// skiff's errors are SkiffErrors with a `kind` (web/index.d.ts: ErrorKind);
// the page's own errors carry a `kind` of their own ('file', 'diverged').

/** The page's error for a model file that could not be read. */
export function fileError(message) {
  return Object.assign(new Error(message), { kind: 'file' });
}

/** The page's error for a training loss that is no longer finite. */
export function divergedError(loss, lr) {
  return Object.assign(new Error(`the training loss became ${loss}: the learning rate (${lr}) is too high; press Reset`), {
    kind: 'diverged',
  });
}

/**
 * The page's error for a test accuracy at chance (`result` of an
 * evaluation; `best`: the best accuracy so far): a model that learned and
 * fell back collapsed (a rate too high; SGD at lr 9 ends up predicting one
 * class), one that never left chance in 300 steps has a rate too high or
 * too low, told apart by the rate itself.
 */
export function collapsedError(result, lr, best) {
  const pctOf = (v) => `${(100 * v).toFixed(1)}%`;
  const high = best >= 0.5 || lr > 0.01;
  const what = best >= 0.5 ? `fell from ${pctOf(best)} to ${pctOf(result.acc)}` : `is still ${pctOf(result.acc)}`;
  const message = `the test accuracy ${what} at step ${result.step}, chance level for 10 digits: the model ${
    high ? 'predicts the same few classes for every digit' : 'has not started learning'
  }`;
  return Object.assign(new Error(message), {
    kind: 'diverged',
    title: high ? 'Training diverged' : 'Training is not learning',
    advice: high
      ? `The learning rate (${lr}) is too high: lower it (Adam works at 0.001, SGD at 0.01-0.1), then press Reset.`
      : `The learning rate (${lr}) is too low to move in this many steps: raise it, then press Reset.`,
  });
}

/**
 * { title, advice, gpuProblem } for `error`; `checkpointStep` is the step of
 * the last checkpoint, where a move to the cpu would continue from.
 */
export function explain(error, checkpointStep) {
  const from = checkpointStep == null ? 'from the start' : `from the last checkpoint (step ${checkpointStep})`;
  const skiffKind = error?.name === 'SkiffError' ? error.kind : null;
  if (error?.kind === 'file' && !skiffKind) {
    return {
      title: 'That file could not be loaded',
      advice: 'Pick a .safetensors file downloaded from this page (an MLP or a CNN).',
      gpuProblem: false,
    };
  }
  if (error?.kind === 'diverged' && !skiffKind) {
    return {
      title: error.title ?? 'Training diverged',
      advice: error.advice ?? 'Lower the learning rate, then press Reset.',
      gpuProblem: false,
    };
  }
  switch (skiffKind) {
    case 'device-lost':
      return {
        title: 'The GPU device was lost',
        advice: `This happens when the graphics driver restarts or the GPU runs out of memory. Continue on the cpu ${from}, or reload the page to try the GPU again.`,
        gpuProblem: true,
      };
    // An allocation the host or the GPU refused, or a size beyond what one
    // tensor or GPU buffer may hold.
    case 'memory':
      return {
        title: 'Out of memory',
        advice: `Pick a smaller batch size or the MLP and press Train, or continue on the cpu ${from}.`,
        gpuProblem: true,
      };
    // A GPU command that failed (a kernel that does not compile, discarded work).
    case 'device':
      return {
        title: 'The GPU reported an error',
        advice: `Continue on the cpu ${from}, or reload the page to try again.`,
        gpuProblem: true,
      };
    default:
      return { title: 'Something went wrong', advice: 'Press Reset to start over; reload the page if it happens again.', gpuProblem: false };
  }
}
