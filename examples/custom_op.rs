//! A custom op: x * sigmoid(x) (SiLU) as one WGSL kernel with a cpu twin and
//! a backward in skiff ops, checked against the op written with skiff's own
//! ops, differentiated twice, and run on the GPU when there is one.
//!
//! `cargo run --example custom_op`

use skiff::custom::{BackwardCall, CpuCall, CustomOp};
use skiff::{grad, Device, GradOptions, Result, Tensor};

fn main() -> Result<()> {
    let silu = CustomOp::builder("silu", 1)
        .wgsl(
            "fn compute(i: u32) -> f32 {
    let x = X0[i];
    return x / (1.0 + exp(-x));
}",
        )
        .cpu(|c: &CpuCall| Ok(c.inputs[0].data.iter().map(|x| x / (1.0 + (-x).exp())).collect()))
        .backward(|b: &BackwardCall| {
            // d/dx x s(x) = s (1 + x (1 - s)), in skiff ops: differentiable again.
            let (x, s) = (&b.inputs[0], b.inputs[0].sigmoid()?);
            Ok(vec![Some(b.grad.mul(&s.mul(&x.mul(&s.neg()?.add_scalar(1.0)?)?.add_scalar(1.0)?)?)?)])
        })
        .register()?;

    let x = Tensor::from_vec(vec![-2.0f32, -0.5, 0.0, 1.0, 3.0], &[5])?.requires_grad_(true)?;
    let y = silu.call(&[&x])?;
    let d1 = grad(
        &[y.sum_all()?],
        std::slice::from_ref(&x),
        None,
        GradOptions { create_graph: true, ..Default::default() },
    )?;
    let d1 = d1[0].clone().expect("x is used");
    let d2 =
        grad(&[d1.sum_all()?], std::slice::from_ref(&x), None, GradOptions::default())?[0].clone().expect("x is used");
    println!("silu(x)   {:?}", y.to_vec::<f32>()?);
    println!("silu'(x)  {:?}", d1.to_vec::<f32>()?);
    println!("silu''(x) {:?}", d2.to_vec::<f32>()?);
    // The same values as the op written with skiff's own ops.
    let reference = x.mul(&x.sigmoid()?)?.to_vec::<f32>()?;
    let off = y.to_vec::<f32>()?.iter().zip(&reference).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    println!("largest difference from x * sigmoid(x) in skiff ops: {off:e}");

    // On a GPU (a software one too), the WGSL kernel runs.
    if let Ok(gpu) = Device::gpu() {
        let on_gpu = silu.call(&[&x.detach().to(&gpu)?])?;
        println!("on {}: {:?}", gpu.describe(), on_gpu.to_vec::<f32>()?);
    }
    Ok(())
}
