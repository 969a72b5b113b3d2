//! Micro-benchmarks the browser benchmark page calls (`npm run bench:browser`):
//! GEMM throughput of the backend the tensors live on.

use super::args;
use super::JsResult;
use crate::tensor::Tensor;
use wasm_bindgen::prelude::*;

/// Runs an (n x n) by (n x n) matmul `reps` times on `device` and returns
/// GFLOP/s (timed with `performance.now()`-backed `js_sys::Date::now()`
/// granularity; a GPU result is awaited by reading one element back).
#[wasm_bindgen(js_name = benchMatmul, skip_typescript)]
pub async fn bench_matmul(n: usize, reps: usize, device: JsValue) -> JsResult<f64> {
    let device = args::device("benchMatmul", &device)?;
    let a = Tensor::randn(&[n, n], crate::DType::F32)?.to(&device)?;
    let b = Tensor::randn(&[n, n], crate::DType::F32)?.to(&device)?;
    // Warm-up (pipelines, pools).
    let _ = a.matmul(&b)?.sum_all()?.to_vec_async::<f32>().await?;
    let start = js_sys::Date::now();
    let mut acc = Tensor::scalar(0.0, crate::DType::F32).to(&device)?;
    for _ in 0..reps.max(1) {
        acc = acc.add(&a.matmul(&b)?.sum_all()?)?;
    }
    let _ = acc.to_vec_async::<f32>().await?;
    let secs = (js_sys::Date::now() - start) / 1e3;
    Ok(2.0 * (n * n * n * reps.max(1)) as f64 / secs / 1e9)
}
