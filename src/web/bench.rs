//! Micro-benchmarks the browser benchmark page calls (`npm run bench:browser`):
//! GEMM throughput of the backend the tensors live on.

use super::args;
use super::{JsResult, Named};
use crate::tensor::Tensor;
use wasm_bindgen::prelude::*;

/// Runs an (n x n) by (n x n) matmul `reps` times on `device` and returns
/// GFLOP/s (timed with `performance.now()`-backed `js_sys::Date::now()`
/// granularity; a GPU result is awaited by reading one element back).
#[wasm_bindgen(js_name = benchMatmul, skip_typescript)]
pub async fn bench_matmul(n: JsValue, reps: JsValue, device: JsValue) -> JsResult<f64> {
    const OP: &str = "benchMatmul";
    let device = args::device(OP, &device)?;
    let (n, reps) = (args::usize_arg(OP, "n", &n)?, args::usize_arg(OP, "reps", &reps)?.max(1));
    args::fits(OP, "n x n", &[n, n])?;
    let run = async {
        let a = Tensor::randn(&[n, n], crate::DType::F32)?.to(&device)?;
        let b = Tensor::randn(&[n, n], crate::DType::F32)?.to(&device)?;
        // Warm-up (pipelines, pools).
        let _ = a.matmul(&b)?.sum_all()?.to_vec_async::<f32>().await?;
        let start = js_sys::Date::now();
        let mut acc = Tensor::scalar(0.0, crate::DType::F32).to(&device)?;
        for _ in 0..reps {
            acc = acc.add(&a.matmul(&b)?.sum_all()?)?;
        }
        let _ = acc.to_vec_async::<f32>().await?;
        let secs = (js_sys::Date::now() - start) / 1e3;
        Ok::<f64, crate::error::Error>(2.0 * (n as f64).powi(3) * reps as f64 / secs / 1e9)
    };
    run.await.within(OP)
}
