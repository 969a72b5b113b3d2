//! The GPU matmul kernel against the cpu one: odd and tile-sized shapes,
//! broadcast batches, strided operands (transposed, sliced, expanded views:
//! the kernel reads them in place), 1-D operands and empty dims. Skips, loudly,
//! where no GPU adapter exists; the WGSL validation runs everywhere.

#![cfg(feature = "gpu")]

use crate::common;
use skiff::backend::gpu::matmul as gm;
use skiff::device::{GpuDevice, GpuOptions};
use skiff::{manual_seed, DType, Device, Result, Tensor};

use crate::common::{expect_err, gpu, Kind};

/// Builds the operands on the cpu, applies `view` to them on both devices,
/// and compares the products elementwise (relative to the result's scale).
fn check(
    dev: &Device,
    what: &str,
    shapes: (&[usize], &[usize]),
    view: impl Fn(&Tensor, &Tensor) -> Result<(Tensor, Tensor)>,
) {
    let a = Tensor::randn(shapes.0, DType::F32).unwrap();
    let b = Tensor::randn(shapes.1, DType::F32).unwrap();
    let (ca, cb) = view(&a, &b).expect("cpu views");
    let want = ca.matmul(&cb).expect("cpu matmul");
    let (ga, gb) = view(&a.to(dev).expect("upload"), &b.to(dev).expect("upload")).expect("gpu views");
    let got = ga.matmul(&gb).expect("gpu matmul");
    assert!(got.device().is_gpu(), "{what}: result left the GPU");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (w, g) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
    let scale = w.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (i, (x, y)) in w.iter().zip(&g).enumerate() {
        assert!((x - y).abs() <= 1e-4 * scale, "{what}: element {i}: cpu {x} vs gpu {y} (scale {scale})");
    }
}

fn plain(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((a.clone(), b.clone()))
}

#[test]
fn wgsl_validates_and_fits_webgpu_workgroup_storage() {
    let shared = workgroup_bytes(&gm::source(DType::F32));
    assert_eq!(shared as usize, gm::Tiles::SMALL.workgroup_bytes(), "64x64 tiles");
    assert!(shared <= 16384, "64x64 tiles: workgroup storage {shared} bytes exceeds WebGPU's default 16 KiB");
    let shared = workgroup_bytes(&gm::wide_source(DType::F32));
    assert_eq!(shared as usize, gm::Tiles::WIDE.workgroup_bytes(), "128x128 tiles");
    assert!(shared <= 16384, "128x128 tiles: workgroup storage {shared} bytes exceeds WebGPU's default 16 KiB");
}

/// The bytes of workgroup storage `src` declares, after validating it.
fn workgroup_bytes(src: &str) -> u32 {
    let module = naga::front::wgsl::parse_str(src).expect("matmul.wgsl parses");
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .expect("matmul.wgsl validates");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
        .map(|(_, v)| layouter[v.ty].size)
        .sum()
}

#[test]
fn square_odd_and_tile_sized_shapes() {
    let Some(dev) = gpu() else { return };
    manual_seed(1);
    let mnk: &[(usize, usize, usize)] = &[
        (1, 1, 1),
        (65, 33, 17),
        (128, 128, 128),
        (64, 64, 64),
        (63, 65, 1),
        (1, 300, 1),
        (3, 1, 70),
        (130, 7, 129),
        (17, 200, 5),
    ];
    for &(m, k, n) in mnk {
        check(&dev, &format!("{m}x{k}x{n}"), (&[m, k], &[k, n]), plain);
    }
}

/// Software adapters pick the blocked kernel's block per product
/// (`gm::Block::for_product`): every row class (4, 8, 16), column class
/// (4, 16, 32, with 16 columns up to 64 or 127 wide by adapter) and lane
/// count (1, 2, 4, 8), at and past their edges.
#[test]
fn every_block_shape_of_the_blocked_kernel() {
    let Some(dev) = gpu() else { return };
    manual_seed(2);
    for m in [3, 8, 17] {
        for n in [5, 16, 17, 33, 64, 65, 100, 127, 128, 129, 300] {
            let lavapipe = gm::Block::for_product(m, n, 127);
            check(&dev, &format!("{m}x7x{n} (block {lavapipe:?} on lavapipe)"), (&[m, 7], &[7, n]), plain);
        }
    }
}

/// The blocked kernel with K unrolled 4x (SwiftShader's choice,
/// `GpuContext::matmul_unroll`) computes the same bits as one step at a
/// time: row classes 4, 8, 16, column classes 8, 16, 32 with 1 and 8 lanes,
/// K under 4 (only the remainder loop) and 9 (two unrolled steps and one
/// more). On an adapter that runs the tiled kernel the setting changes nothing.
#[test]
fn unrolled_k_gives_the_same_bits() {
    // A private context: this test changes its matmul settings and reads which kernels it compiled.
    let Some((dev, _)) = common::private_gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!("a GPU test") };
    manual_seed(3);
    for (m, n) in [(3, 5), (8, 16), (17, 300), (17, 9), (3, 300)] {
        for k in [3, 9] {
            let a = Tensor::randn(&[m, k], DType::F32).unwrap().to(&dev).unwrap();
            let b = Tensor::randn(&[k, n], DType::F32).unwrap().to(&dev).unwrap();
            let product = |steps| {
                common::set_gpu_options(&dev, GpuOptions { matmul_unroll: Some(steps), ..Default::default() });
                a.matmul(&b).unwrap().to_vec::<f32>().unwrap()
            };
            let (one, four) = (product(1), product(4));
            let same = one.iter().zip(&four).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{m}x{k}x{n}: K unrolled 4x differs from one step at a time");
            check(&dev, &format!("{m}x{k}x{n} unrolled"), (&[m, k], &[k, n]), plain);
        }
    }
    let kernels = g.compiled_kernels();
    if kernels.iter().any(|k| k.starts_with("matmul:f32:blocked:")) {
        for steps in ["u1", "u4"] {
            assert!(kernels.iter().any(|k| k.starts_with("matmul:f32:blocked:") && k.contains(steps)), "{kernels:?}");
        }
    }
}

/// The blocked kernel's vec4 loads (`gm::Loads`, on by default, for the
/// largest block: M over 8, N over 127) read the same elements as one load per
/// element, so they give the same bits, with K unrolled or not: row-major
/// operands (A along K, B across N), a transposed A (across M), edges that end
/// inside a vec4 (M = 17 of a 20-row view, N = 158 of 160 columns, K = 9 of 12:
/// the unrolled loop, then one step), and a broadcast batch; a transposed B,
/// offsets and strides off the vec4 grid read one element per load. On an
/// adapter that runs the tiled kernel the setting changes nothing.
#[test]
fn vec4_loads_give_the_same_bits() {
    // A private context: this test changes its matmul settings and reads which kernels it compiled.
    let Some((dev, _)) = common::private_gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!("a GPU test") };
    manual_seed(4);
    let t = |x: &Tensor| x.transpose(-1, -2).unwrap();
    let r = |shape: &[usize]| Tensor::randn(shape, DType::F32).unwrap().to(&dev).unwrap();
    // N over 127 everywhere: narrower products take 16-column blocks.
    let cases: Vec<(&str, Tensor, Tensor)> = vec![
        ("row-major", r(&[17, 12]), r(&[12, 160])),
        (
            "row-major, K = 9 of 12, N = 158 of 160",
            r(&[17, 12]).narrow(1, 0, 9).unwrap(),
            r(&[12, 160]).narrow(0, 0, 9).unwrap().narrow(1, 0, 158).unwrap(),
        ),
        ("transposed A, M = 17 of 20", t(&r(&[12, 20])).narrow(0, 0, 17).unwrap(), r(&[12, 148])),
        ("transposed B", r(&[12, 12]).narrow(1, 0, 9).unwrap(), t(&r(&[168, 12])).narrow(0, 0, 9).unwrap()),
        ("both transposed", t(&r(&[16, 24])), t(&r(&[164, 16]))),
        ("offsets off the grid", r(&[16, 16]).narrow(1, 1, 12).unwrap(), r(&[12, 152]).narrow(1, 1, 148).unwrap()),
        ("strides off the grid", r(&[16, 10]), r(&[10, 146])),
        ("broadcast batch", r(&[1, 12, 12]).expand(&[3, 12, 12]).unwrap(), r(&[3, 12, 148])),
    ];
    for (what, a, b) in &cases {
        for steps in [1, 4] {
            let product = |on| {
                common::set_gpu_options(
                    &dev,
                    GpuOptions { matmul_unroll: Some(steps), matmul_vec4: Some(on), ..Default::default() },
                );
                a.matmul(b).unwrap().to_vec::<f32>().unwrap()
            };
            let (scalar, vector) = (product(false), product(true));
            let same =
                scalar.len() == vector.len() && scalar.iter().zip(&vector).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{what}, K unrolled {steps}x: vec4 loads differ from scalar ones");
        }
        let want = a.to(&Device::Cpu).unwrap().matmul(&b.to(&Device::Cpu).unwrap()).unwrap().to_vec::<f32>().unwrap();
        let got = a.matmul(b).unwrap().to_vec::<f32>().unwrap();
        let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        assert!(want.iter().zip(&got).all(|(x, y)| (x - y).abs() <= 1e-4 * scale), "{what}: against the cpu");
    }
    // Every load mode ran, where the blocked kernel runs.
    let kernels = g.compiled_kernels();
    if kernels.iter().any(|k| k.starts_with("matmul:f32:blocked:")) {
        for modes in ["u4kx", "u1sx", "u1xx", "u4xx", "u4ks", "u4xs", "u1xs", "u4ss", "u1ss"] {
            assert!(
                kernels.iter().any(|k| k.starts_with("matmul:f32:blocked:") && k.ends_with(modes)),
                "{modes}: {kernels:?}"
            );
        }
    }
}

/// Shared loads of B (`Block::broadcast`: a subgroup's lanes stacked along M,
/// each loading part of B's row and receiving the rest by
/// `subgroupBroadcast`) give the same bits as the blocked kernel without
/// them, at the edges too: M off the 64-row tile (lanes whose rows start past
/// C's edge), N ending inside a vec4, K not a multiple of 4 (the unrolled
/// loop, then single steps), a transposed A or B (B read as vec4s across N,
/// or one element per load through its strides), a broadcast batch, five
/// products in a batch, and f16 where the device has it. Where the device
/// cannot share (no subgroups of a size the kernel takes, or a real GPU
/// running the tiled kernel), both settings run the same kernel.
#[test]
fn shared_loads_of_b_give_the_same_bits() {
    // A private context: this test changes its matmul settings and reads which kernels it compiled.
    let Some((dev, _)) = common::private_gpu() else { return };
    let Device::Gpu(g) = &dev else { unreachable!("a GPU test") };
    let size = g.context().shared_loads_size();
    manual_seed(5);
    let t = |x: &Tensor| x.transpose(-1, -2).unwrap();
    let r = |shape: &[usize]| Tensor::randn(shape, DType::F32).unwrap().to(&dev).unwrap();
    let cases: Vec<(&str, Tensor, Tensor)> = vec![
        ("256^3", r(&[256, 256]), r(&[256, 256])),
        (
            "M = 70, N = 158 of 160, K = 9 of 12",
            r(&[70, 9]),
            r(&[12, 160]).narrow(0, 0, 9).unwrap().narrow(1, 0, 158).unwrap(),
        ),
        ("M = 64, K = 13", r(&[64, 13]), r(&[13, 136])),
        ("transposed A, M = 100", t(&r(&[20, 100])), r(&[20, 132])),
        ("transposed B (x @ w.T), N = 150", r(&[64, 20]), t(&r(&[150, 20]))),
        ("transposed B, K = 21", r(&[64, 21]), t(&r(&[150, 21]))),
        ("both transposed, M = 72", t(&r(&[20, 72])), t(&r(&[140, 20]))),
        ("broadcast batch", r(&[1, 80, 12]).expand(&[3, 80, 12]).unwrap(), r(&[3, 12, 144])),
        ("batch of 5", r(&[5, 65, 16]), r(&[5, 16, 200])),
    ];
    // lavapipe (CI's adapter) has subgroups of 8: the sharing must be on there.
    if g.name().contains("llvmpipe") {
        assert_eq!(size, 8, "lavapipe shares loads across its subgroups of 8");
        assert_eq!(g.context().default_options().matmul_shared_loads, Some(true));
    }
    let mut dtypes = vec![DType::F32];
    if g.shader_f16() {
        dtypes.push(DType::F16);
    }
    for dt in dtypes {
        for (what, a, b) in &cases {
            let (a, b) = (a.to_dtype(dt).unwrap(), b.to_dtype(dt).unwrap());
            let product = |on| {
                common::set_gpu_options(&dev, GpuOptions { matmul_shared_loads: Some(on), ..Default::default() });
                a.matmul(&b).unwrap().to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
            };
            let (alone, shared) = (product(false), product(true));
            let same =
                alone.len() == shared.len() && alone.iter().zip(&shared).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{what} ({}): shared loads of B differ from the lanes' own", dt.name());
        }
    }
    // Where the device shares, the broadcasting kernels ran (A along K or
    // across M; B as vec4s or one element per load).
    if size > 0 {
        let kernels = g.compiled_kernels();
        for mode in ["u4kx", "u4xx", "u4ks", "u4xs"] {
            let shared = format!("{mode}b{size}");
            assert!(
                kernels.iter().any(|k| k.starts_with("matmul:f32:blocked:") && k.ends_with(&shared)),
                "{shared}: {kernels:?}"
            );
        }
    }
}

/// K past 65,535: lavapipe runs at most 65,535 loop iterations per
/// invocation and then moves on silently (this gave 65,533 and stale rows for
/// 70,000 before), so the blocked kernel unrolls K 4x there when it must, and
/// a K beyond even that is an error naming matmul and the adapter, never a
/// wrong product. Sums of ones are exact in f32 up to 2^24.
#[test]
fn inner_dimension_past_65535() {
    let Some(dev) = gpu() else { return };
    for k in [70_000, 140_001, 262_000] {
        let a = Tensor::ones(&[2, k], DType::F32).unwrap().to(&dev).unwrap();
        let b = Tensor::ones(&[k, 3], DType::F32).unwrap().to(&dev).unwrap();
        match a.matmul(&b) {
            Ok(c) => assert_eq!(c.to_vec::<f32>().unwrap(), vec![k as f32; 6], "[2, {k}] x [{k}, 3] of ones"),
            Err(e) => {
                let msg = e.to_string();
                assert!(k > 200_000 && msg.contains("matmul") && msg.contains("llvmpipe"), "K = {k}: {msg}");
            }
        }
    }
}

#[test]
fn batched_with_broadcast_batch_dims() {
    let Some(dev) = gpu() else { return };
    manual_seed(2);
    check(&dev, "batch 5", (&[5, 20, 30], &[5, 30, 10]), plain);
    check(&dev, "3-D x 2-D", (&[4, 9, 10], &[10, 6]), plain);
    check(&dev, "2-D x 3-D", (&[9, 10], &[4, 10, 66]), plain);
    check(&dev, "[2,1] x [3] batches", (&[2, 1, 5, 7], &[3, 7, 4]), plain);
    check(&dev, "[1,3] x [2,1] batches", (&[1, 3, 70, 8], &[2, 1, 8, 65]), plain);
    check(&dev, "rank 5", (&[2, 1, 3, 1, 6, 5], &[1, 2, 3, 4, 5, 3]), plain);
}

/// More products than one grid dimension holds: the kernel's grid is folded.
/// A private device that allows only 16 workgroups per dimension reaches that
/// path with 300 products instead of 65,536 (wgpu validates each dispatch
/// against the device's limits, so an unfolded grid would be an error), and
/// a batch past 16^3 workgroups is an error naming matmul.
#[test]
fn folded_grid_for_many_products() {
    if gpu().is_none() {
        return;
    }
    let small = GpuDevice::open_with_limits(|l| l.max_compute_workgroups_per_dimension = 16)
        .map(Device::Gpu)
        .expect("a device with lower limits than its adapter's");
    manual_seed(5);
    check(&small, "300 products on a 16-per-dimension grid", (&[300, 1, 2], &[300, 2, 1]), plain);
    check(&small, "130 x 70 tiles of products", (&[3, 130, 9], &[3, 9, 70]), plain);
    let a = Tensor::ones(&[5000, 1, 1], DType::F32).unwrap().to(&small).unwrap();
    expect_err(
        a.matmul(&a),
        Kind::Shape,
        "matmul",
        &["5000 products of [1, 1] x [1, 1] exceed the GPU's dispatch limits"],
    );
}

#[test]
fn strided_operands() {
    let Some(dev) = gpu() else { return };
    manual_seed(3);
    let t = |x: &Tensor| x.transpose(-1, -2);
    check(&dev, "a^T b", (&[33, 65], &[33, 17]), |a, b| Ok((t(a)?, b.clone())));
    check(&dev, "a b^T", (&[65, 33], &[17, 33]), |a, b| Ok((a.clone(), t(b)?)));
    check(&dev, "a^T b^T", (&[70, 90], &[80, 70]), |a, b| Ok((t(a)?, t(b)?)));
    check(&dev, "batched a^T b^T", (&[3, 12, 9], &[3, 5, 12]), |a, b| Ok((t(a)?, t(b)?)));
    check(&dev, "permuted batch", (&[9, 4, 12], &[4, 12, 7]), |a, b| Ok((a.permute(&[1, 0, 2])?, b.clone())));
    check(&dev, "step-2 slices", (&[20, 30], &[15, 40]), |a, b| Ok((a.slice(1, 0, 30, 2)?, b.slice(1, 1, 40, 3)?)));
    check(&dev, "offset views", (&[40, 30], &[50, 20]), |a, b| Ok((a.narrow(0, 7, 20)?, b.narrow(0, 11, 30)?)));
    check(&dev, "expanded batch", (&[1, 6, 8], &[3, 8, 5]), |a, b| Ok((a.expand(&[3, 6, 8])?, b.clone())));
    check(&dev, "expanded matrix", (&[6, 1], &[4, 5]), |a, b| Ok((a.expand(&[6, 4])?, b.clone())));
}

/// Backward runs matmuls on transposed views of the saved operands.
#[test]
fn gradients_match_the_cpu() {
    let Some(dev) = gpu() else { return };
    manual_seed(6);
    let (a, b, w) = (
        Tensor::randn(&[3, 65, 17], DType::F32).unwrap(),
        Tensor::randn(&[17, 33], DType::F32).unwrap(),
        Tensor::randn(&[3, 65, 33], DType::F32).unwrap(),
    );
    let grads = |d: &Device| -> Result<Vec<Vec<f32>>> {
        let (a, b) = (a.detach().to(d)?.requires_grad_(true)?, b.detach().to(d)?.requires_grad_(true)?);
        a.matmul(&b)?.mul(&w.to(d)?)?.sum_all()?.backward()?;
        Ok(vec![a.grad().expect("grad a").to_vec::<f32>()?, b.grad().expect("grad b").to_vec::<f32>()?])
    };
    let (want, got) = (grads(&Device::Cpu).unwrap(), grads(&dev).expect("gpu backward"));
    for (w, g) in want.iter().zip(&got) {
        let scale = w.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        assert!(w.iter().zip(g).all(|(x, y)| (x - y).abs() <= 1e-4 * scale), "gradients differ");
    }
}

#[test]
fn vectors_and_empty_dims() {
    let Some(dev) = gpu() else { return };
    manual_seed(4);
    check(&dev, "vec @ mat", (&[33], &[33, 70]), plain);
    check(&dev, "mat @ vec", (&[70, 33], &[33]), plain);
    check(&dev, "vec @ vec", (&[129], &[129]), plain);
    check(&dev, "vec @ batched mat", (&[5], &[3, 5, 4]), plain);
    check(&dev, "k = 0", (&[3, 0], &[0, 4]), plain);
    check(&dev, "batched k = 0", (&[2, 70, 0], &[2, 0, 65]), plain);
    check(&dev, "m = 0", (&[0, 5], &[5, 4]), plain);
    check(&dev, "batch 0", (&[0, 3, 5], &[5, 4]), plain);
    // Pooled buffers come back dirty: k = 0 must still write its zeros.
    let a = Tensor::ones(&[64, 64], DType::F32).unwrap().to(&dev).unwrap();
    drop(a.matmul(&a).unwrap());
    let z = Tensor::zeros(&[64, 0], DType::F32).unwrap().to(&dev).unwrap();
    let got = z.matmul(&z.transpose(0, 1).unwrap()).unwrap().to_vec::<f32>().unwrap();
    assert!(got.iter().all(|&v| v == 0.0), "k = 0 product is not all zeros");
}

#[test]
fn errors_not_panics() {
    let Some(dev) = gpu() else { return };
    let i = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap().to(&dev).unwrap();
    expect_err(i.matmul(&i), Kind::DType, "matmul", &["expected a float tensor, got i32 of shape [2, 2]"]);
    let a = Tensor::ones(&[2, 3], DType::F32).unwrap().to(&dev).unwrap();
    expect_err(a.matmul(&a), Kind::Shape, "matmul", &["inner dims differ: [2, 3] x [2, 3]"]);
    expect_err(a.matmul(&Tensor::ones(&[3, 2], DType::F32).unwrap()), Kind::Device, "matmul", &["found gpu and cpu"]);
}
