//! Dispatch for the elementwise families, casts and copies: each op's
//! kernel spec over its operands' views (`backend::run`).

use crate::backend::{self, View, ViewMut};
use crate::dtype::DType;
use crate::error::Result;
use crate::kernel::{BinaryKernel, CompareKernel, KernelSpec, Scalar, UnaryKernel};
use crate::tensor::Tensor;

/// Runs `spec` over `inputs` into a new tensor of `out_shape` (arrays, not
/// Vecs: this runs for every elementwise op).
fn run<const N: usize>(
    op: &'static str,
    spec: KernelSpec,
    inputs: [&Tensor; N],
    out_shape: &[usize],
) -> Result<Tensor> {
    let guards = inputs.map(|t| t.storage().read());
    let views: [View; N] = std::array::from_fn(|i| View::new(&guards[i], inputs[i].layout()));
    let out = backend::run(op, &spec, &views, out_shape)?;
    drop(guards);
    let out = Tensor::from_buffer(out, out_shape);
    if super::record::active() {
        super::record::run(op, &spec, &inputs, &out);
    }
    Ok(out)
}

pub fn unary(op: &'static str, x: &Tensor, kern: &'static UnaryKernel, p: [f64; 2]) -> Result<Tensor> {
    super::room_for(op, x, x.shape(), x.dtype())?;
    run(op, KernelSpec::Unary { row: kern, params: [Scalar(p[0]), Scalar(p[1])] }, [x], x.shape())
}

pub fn binary(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    out_shape: &[usize],
    kern: &'static BinaryKernel,
) -> Result<Tensor> {
    super::room_for(op, a, out_shape, a.dtype())?;
    run(op, KernelSpec::Binary { row: kern }, [a, b], out_shape)
}

pub fn compare(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    out_shape: &[usize],
    kern: &'static CompareKernel,
) -> Result<Tensor> {
    super::room_for(op, a, out_shape, DType::Bool)?;
    run(op, KernelSpec::Compare { row: kern }, [a, b], out_shape)
}

pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    super::room_for("where", a, out_shape, a.dtype())?;
    run("where", KernelSpec::Where, [cond, a, b], out_shape)
}

/// A contiguous copy in `dtype`.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    super::room_for("to_dtype", x, x.shape(), dtype)?;
    run("to_dtype", KernelSpec::Cast { to: dtype }, [x], x.shape())
}

/// A contiguous copy with the same dtype.
pub fn copy(x: &Tensor) -> Result<Tensor> {
    super::room_for("contiguous", x, x.shape(), x.dtype())?;
    let out = run("contiguous", KernelSpec::Copy, [x], x.shape())?;
    x.storage().carry_facts_to(x.layout(), out.storage());
    Ok(out)
}

/// Writes `src` (same shape and dtype, contiguous or not) into `dst`'s view of its storage.
pub fn write_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    // Reading and writing one storage at once would need both locks: copy first then.
    let src = if std::sync::Arc::ptr_eq(dst.storage(), src.storage()) || !src.is_contiguous() {
        copy(src)?
    } else {
        src.clone()
    };
    {
        let gs = src.storage().read();
        let mut gd = dst.storage().write();
        let mut out = [ViewMut::new(&mut gd, dst.layout())];
        backend::run_into("copy_", &KernelSpec::CopyInto, &[View::new(&gs, src.layout())], &mut out)?;
    }
    if super::record::active() {
        let (from, to) = ((src.storage(), src.layout()), (dst.storage(), dst.layout()));
        super::record::into("copy_", &KernelSpec::CopyInto, &[from], &[to]);
    }
    Ok(())
}
