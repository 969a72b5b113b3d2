//! Small standard models built from [`nn`](crate::nn) layers, with PyTorch's
//! parameter names, so one definition serves the tests, the benchmarks and
//! the examples (and a PyTorch state dict of the same model loads strictly).

use crate::error::Result;
use crate::nn::{Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential};

/// The small MNIST CNN that skiff's benchmarks, tests and examples train
/// (`benches/peers/torch_steps.py` builds the same in PyTorch): conv 1->8
/// k3, ReLU, max-pool 2, conv 8->16 k3, ReLU, max-pool 2, flatten, linear
/// 400->10. Input `[N, 1, 28, 28]`, output `[N, 10]` logits; parameters
/// `0.weight`, `0.bias`, `3.weight`, `3.bias`, `7.weight`, `7.bias`, as
/// PyTorch's `nn.Sequential` of the same layers names them.
///
/// ```
/// use skiff::{models, nn::Layer, DType, Tensor};
/// # fn main() -> skiff::Result<()> {
/// let cnn = models::mnist_cnn()?;
/// let logits = cnn.forward(&Tensor::zeros(&[2, 1, 28, 28], DType::F32)?)?;
/// assert_eq!(logits.shape(), &[2, 10]);
/// # Ok(())
/// # }
/// ```
pub fn mnist_cnn() -> Result<Sequential> {
    Ok(Sequential::new()
        .push(Conv2d::new(1, 8, [3, 3])?) // 28 -> 26
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2])?) // -> 13
        .push(Conv2d::new(8, 16, [3, 3])?) // -> 11
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2])?) // -> 5
        .push(Flatten::new())
        .push(Linear::new(16 * 5 * 5, 10)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Layer;

    #[test]
    fn the_mnist_cnn_has_pytorchs_names_and_shapes() {
        let cnn = mnist_cnn().unwrap();
        let shapes: Vec<(String, Vec<usize>)> =
            cnn.named_parameters().into_iter().map(|(n, p)| (n, p.shape().to_vec())).collect();
        let want = [
            ("0.weight", vec![8, 1, 3, 3]),
            ("0.bias", vec![8]),
            ("3.weight", vec![16, 8, 3, 3]),
            ("3.bias", vec![16]),
            ("7.weight", vec![10, 400]),
            ("7.bias", vec![10]),
        ];
        assert_eq!(shapes, want.map(|(n, s)| (n.to_string(), s)).to_vec());
    }
}
