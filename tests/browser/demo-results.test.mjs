// The demo page's test results (www/lib/results.js) in Node: the confusion
// matrix and per-class accuracy against counts made by hand, and the worst
// mistakes (wrong guesses by falling confidence, ties in test-set order).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { confusion, worstMistakes } from '../../www/lib/results.js';

test('confusion matrix: rows are true digits, columns guesses; per-class accuracy on the diagonal', () => {
  const labels = Int32Array.from([0, 0, 0, 1, 1, 2, 9]);
  const guesses = Int32Array.from([0, 0, 7, 1, 2, 2, 4]);
  const { matrix, perClass } = confusion(guesses, labels);
  assert.deepEqual(matrix[0], [2, 0, 0, 0, 0, 0, 0, 1, 0, 0]);
  assert.deepEqual(matrix[1], [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
  assert.equal(matrix[9][4], 1);
  assert.equal(matrix.flat().reduce((a, b) => a + b, 0), labels.length);
  assert.deepEqual(perClass.slice(0, 3), [2 / 3, 1 / 2, 1]);
  assert.equal(perClass[3], null, 'no 3 in the set');
  assert.equal(perClass[9], 0);
  assert.throws(() => confusion([1, 2], [1]), /2 predictions for 1 labels/);
});

test('worst mistakes: wrong guesses only, surest first, ties in test-set order', () => {
  const labels = [3, 3, 5, 7, 1, 8];
  const guesses = [3, 8, 6, 1, 1, 0];
  const confidence = [0.99, 0.7, 0.95, 0.7, 0.5, 0.2];
  assert.deepEqual(worstMistakes(guesses, confidence, labels, 3), [
    { index: 2, guess: 6, label: 5, confidence: 0.95 },
    { index: 1, guess: 8, label: 3, confidence: 0.7 },
    { index: 3, guess: 1, label: 7, confidence: 0.7 },
  ]);
  assert.equal(worstMistakes(guesses, confidence, labels, 10).length, 4);
  assert.deepEqual(worstMistakes(labels, confidence, labels, 5), [], 'nothing wrong, nothing shown');
});
