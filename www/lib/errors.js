// Turns an error from training into a title and advice the page shows.

/**
 * { title, advice, gpuProblem } for `error` (`error.kind` 'file': a model
 * file the user picked could not be read); `checkpointStep` is the step of
 * the last checkpoint, where a move to the cpu would continue from.
 */
export function explain(error, checkpointStep) {
  const msg = String(error?.message ?? error);
  if (error?.kind === 'file') {
    return {
      title: 'That file could not be loaded',
      advice: 'Pick a .safetensors file downloaded from this page (an MLP or a CNN).',
      gpuProblem: false,
    };
  }
  const from = checkpointStep == null ? 'from the start' : `from the last checkpoint (step ${checkpointStep})`;
  if (/device was lost|device lost/i.test(msg)) {
    return {
      title: 'The GPU device was lost',
      advice: `This happens when the graphics driver restarts or the GPU runs out of memory. Continue on the cpu ${from}, or reload the page to try the GPU again.`,
      gpuProblem: true,
    };
  }
  // skiff's size checks ("more than one tensor may hold here", "a GPU buffer
  // of N bytes exceeds the adapter's limit") and WebGPU's own out-of-memory error.
  if (/out of memory|one tensor may hold|exceeds|too large|allocat/i.test(msg)) {
    return {
      title: 'Out of memory',
      advice: `Pick a smaller batch size or the MLP and press Train, or continue on the cpu ${from}.`,
      gpuProblem: true,
    };
  }
  if (/loss became/i.test(msg)) {
    return { title: 'Training diverged', advice: 'Lower the learning rate, then press Reset.', gpuProblem: false };
  }
  if (/GPU|WebGPU|shader/i.test(msg)) {
    return {
      title: 'The GPU reported an error',
      advice: `Continue on the cpu ${from}, or reload the page to try again.`,
      gpuProblem: true,
    };
  }
  return { title: 'Something went wrong', advice: 'Press Reset to start over; reload the page if it happens again.', gpuProblem: false };
}
