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
    return { title: 'Training diverged', advice: 'Lower the learning rate, then press Reset.', gpuProblem: false };
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
