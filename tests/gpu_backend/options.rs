//! `GpuOptions`: the environment variables fill a device's options, options
//! given in code win over them, and values they do not take are errors
//! naming the variable or the option. (That each option's two sides give the
//! same bits is checked where its kernels are: matmul.rs, conv_gemm.rs,
//! index_conv.rs, reduce.rs, matmul_tiled.rs.)

#![cfg(feature = "gpu")]

use crate::common::{self, expect_err, Kind};
use skiff::device::{GpuDevice, GpuOptions, MatmulKernel};

#[test]
fn the_environment_fills_the_options_and_code_overrides_it() {
    // It sets environment variables: in a process of its own.
    if !common::own_process() {
        return;
    }
    let Some(_) = common::gpu() else { return };
    let defaults = GpuDevice::open().unwrap().context().options();
    std::env::set_var("SKIFF_GPU_MATMUL", "blocked");
    std::env::set_var("SKIFF_GPU_MATMUL_UNROLL", "4");
    std::env::set_var("SKIFF_GPU_CONV", "rows");
    let from_env = GpuDevice::open().unwrap().context().options();
    assert_eq!(from_env.matmul_kernel, Some(MatmulKernel::Blocked));
    assert_eq!((from_env.matmul_unroll, from_env.row_kernels), (Some(4), Some(true)));
    // What the variables leave alone keeps the adapter's default.
    assert_eq!(from_env.implicit_gemm, defaults.implicit_gemm);
    let given = GpuOptions { matmul_unroll: Some(1), implicit_gemm: Some(false), ..Default::default() };
    let both = GpuDevice::open_with_options(given).unwrap().context().options();
    assert_eq!(both.matmul_kernel, Some(MatmulKernel::Blocked), "the environment fills what code leaves out");
    assert_eq!((both.matmul_unroll, both.implicit_gemm), (Some(1), Some(false)), "code wins");
    std::env::set_var("SKIFF_GPU_CONV", "sideways");
    let e = GpuDevice::open().map(|_| ());
    expect_err(e, Kind::Value, "GpuOptions::from_env", &["SKIFF_GPU_CONV=\"sideways\" is not one of elements, rows"]);
}

#[test]
fn options_set_on_a_device_apply_from_then_on_and_bad_ones_are_errors() {
    let Some((_, g)) = common::private_gpu() else { return };
    let ctx = g.context();
    assert_eq!(ctx.options(), ctx.default_options(), "a device opens with its adapter's defaults");
    ctx.set_options(&GpuOptions { matmul_vec4: Some(false), ..Default::default() }).unwrap();
    let now = ctx.options();
    assert_eq!(now.matmul_vec4, Some(false));
    assert_eq!(GpuOptions { matmul_vec4: None, ..now }, GpuOptions { matmul_vec4: None, ..ctx.default_options() });
    let bad = ctx.set_options(&GpuOptions { matmul_unroll: Some(3), ..Default::default() });
    expect_err(bad, Kind::Value, "GpuOptions", &["matmul_unroll must be 1 or 4, got 3"]);
    assert_eq!(ctx.options().matmul_unroll, ctx.default_options().matmul_unroll, "a refused set changes nothing");
    let refused = GpuDevice::open_with_options(GpuOptions { matmul_unroll: Some(0), ..Default::default() });
    expect_err(refused.map(|_| ()), Kind::Value, "GpuOptions", &["got 0"]);
}
