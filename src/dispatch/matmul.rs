//! Dispatch for batched matrix products.

use crate::backend::{self, View};
use crate::error::Result;
use crate::kernel::KernelSpec;
use crate::tensor::Tensor;

/// `a` [..., m, k] times `b` [..., k, n], same rank, batch dims broadcast to `batch`.
pub fn matmul(a: &Tensor, b: &Tensor, batch: &[usize], out_shape: &[usize]) -> Result<Tensor> {
    super::room_for("matmul", a, out_shape, a.dtype())?;
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let views = [View::new(&ga, a.layout()), View::new(&gb, b.layout())];
    let spec = KernelSpec::Matmul { batch: batch.into() };
    let out = backend::run("matmul", &spec, &views, out_shape)?;
    drop((ga, gb));
    let out = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        super::record::run("matmul", &spec, &[a, b], &out);
    }
    Ok(out)
}
