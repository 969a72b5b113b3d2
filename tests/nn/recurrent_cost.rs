//! What a recurrent layer's training step costs, counted with the profiler:
//! the backward through time runs one product per step (for the previous
//! state) and one for the hidden weights over all steps, not two per step
//! (each step's own weight gradient, summed into the last).
//!
//! A profile records every kernel any thread runs, so the test has a process
//! of its own (`common::own_process`).

use crate::common;
use skiff::nn::{Layer, Recurrent, RecurrentConfig, RecurrentKind};
use skiff::{DType, Tensor};

#[test]
fn a_recurrent_backward_runs_one_product_per_step_and_one_for_the_weights() {
    if !common::own_process() {
        return;
    }
    const STEPS: u64 = 8;
    for kind in [RecurrentKind::Lstm, RecurrentKind::Gru, RecurrentKind::RnnTanh] {
        let layer = Recurrent::new(kind, 3, 4, RecurrentConfig::default()).unwrap();
        let x = Tensor::randn(&[STEPS as usize, 2, 3], DType::F32).unwrap().requires_grad_(true).unwrap();
        let y = layer.forward(&x).unwrap().sum_all().unwrap();
        let (_, p) = skiff::profile(|| y.backward()).unwrap();
        let products = p.op("matmul").map_or(0, |s| s.calls);
        // The steps, the hidden weights, the input projection's two (its
        // input and its weights: one product each, the steps folded in).
        assert_eq!(products, STEPS + 1 + 2, "{kind:?}\n{p}");
        assert!(x.grad().is_some() && layer.parameters().iter().all(|w| w.grad().is_some()), "{kind:?}");
    }
}
