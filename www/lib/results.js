// What the test set says beyond its accuracy: the confusion matrix (true
// digit by guess), each digit's accuracy, and the wrong guesses the model was
// surest of. Plain arrays in, plain arrays out (tested in Node:
// tests/browser/demo-results.test.mjs).

/** { matrix: 10x10 counts [true][guess], perClass: accuracy per true digit (null when absent) }. */
export function confusion(predictions, labels, classes = 10) {
  if (predictions.length !== labels.length) {
    throw new Error(`confusion: ${predictions.length} predictions for ${labels.length} labels`);
  }
  const matrix = Array.from({ length: classes }, () => new Array(classes).fill(0));
  for (let i = 0; i < labels.length; i++) matrix[labels[i]][predictions[i]] += 1;
  const perClass = matrix.map((row, t) => {
    const total = row.reduce((a, b) => a + b, 0);
    return total ? row[t] / total : null;
  });
  return { matrix, perClass };
}

/** The `count` wrong guesses with the highest probability: [{ index, guess, label, confidence }]. */
export function worstMistakes(predictions, confidence, labels, count) {
  const wrong = [];
  for (let i = 0; i < labels.length; i++) {
    if (predictions[i] !== labels[i]) wrong.push({ index: i, guess: predictions[i], label: labels[i], confidence: confidence[i] });
  }
  // Ties keep the test set's order, so the grid does not shuffle between equal evaluations.
  return wrong.sort((a, b) => b.confidence - a.confidence || a.index - b.index).slice(0, count);
}
