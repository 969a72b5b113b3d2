//! Creation as kernel specs (`KernelSpec::{Fill, Sequence, Random}`), run by
//! `backend::create` on any device:
//!
//! - every creation function made on the GPU (`*_on`) gives the cpu's bits
//!   for the same seed (random draws included: element i depends only on
//!   the spec's seed and i), and dropout keeps the same elements on both;
//! - the spec alone determines the values: `backend::create` of a spec gives
//!   (through `dispatch::create::create`) the same bits on every call and device, and the dispatcher's seed is the
//!   next draw of the generator `manual_seed` set;
//! - re-seeding reproduces every draw, and consecutive draws differ;
//! - the draws have their distributions' moments (bounds derived from the
//!   analytic variances), randint covers its range, and f32 uniforms stay
//!   below their upper bound;
//! - arange, linspace and eye keep their formulas bit for bit;
//! - specs are values: equal, hashable, the seed visible.

use crate::common;

use crate::common::{expect_err, Kind};
use skiff::backend;
use skiff::dispatch::create::create;
use skiff::kernel::{Distribution, KernelSpec, Scalar, Sequence};
use skiff::random::Generator;
use skiff::{manual_seed, DType, Device, Tensor};
use std::collections::HashSet;

/// The elements' bit patterns, whatever the dtype.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits() as u64).collect(),
        DType::F64 => t.to_vec::<f64>().unwrap().iter().map(|v| v.to_bits()).collect(),
        DType::F16 => t.to_vec::<skiff::f16>().unwrap().iter().map(|v| v.to_bits() as u64).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().iter().map(|&v| v as u32 as u64).collect(),
        DType::Bool => t.to_vec::<u8>().unwrap().iter().map(|&v| v as u64).collect(),
    }
}

/// One creation call on a device (seeded by the caller).
type Make = fn(&Device) -> skiff::Result<Tensor>;

/// Every creation function, as made on a device; the random ones on shapes
/// large enough that an index mix-up between backends would show.
fn creations() -> Vec<(&'static str, Make)> {
    vec![
        ("rand f32", |d| Tensor::rand_on(&[64, 33], DType::F32, d)),
        ("uniform f32", |d| Tensor::uniform_on(&[1000], -2.0, 3.0, DType::F32, d)),
        ("randn f32", |d| Tensor::randn_on(&[3, 700], DType::F32, d)),
        ("randint", |d| Tensor::randint_on(-5, 17, &[900], d)),
        ("bernoulli", |d| Tensor::bernoulli_on(&[31, 29], 0.3, d)),
        ("rand empty", |d| Tensor::rand_on(&[0, 3], DType::F32, d)),
        ("arange f32", |d| Tensor::arange_on(0.1, 7.3, 0.1, DType::F32, d)),
        ("arange i32", |d| Tensor::arange_on(-7.0, 40.0, 3.0, DType::I32, d)),
        ("linspace f32", |d| Tensor::linspace_on(-1.0, 2.5, 97, DType::F32, d)),
        ("eye f32", |d| Tensor::eye_on(9, DType::F32, d)),
        ("eye i32", |d| Tensor::eye_on(5, DType::I32, d)),
        ("eye bool", |d| Tensor::eye_on(4, DType::Bool, d)),
        ("full f32", |d| Tensor::full_on(&[3, 4], -2.5, DType::F32, d)),
        ("zeros i32", |d| Tensor::zeros_on(&[7], DType::I32, d)),
        ("ones bool", |d| Tensor::ones_on(&[2, 2], DType::Bool, d)),
        // f16: made in f32 and rounded once, on either device (lavapipe has shader-f16).
        ("randn f16", |d| Tensor::randn_on(&[3, 700], DType::F16, d)),
        ("arange f16", |d| Tensor::arange_on(0.1, 7.3, 0.1, DType::F16, d)),
        ("full f16", |d| Tensor::full_on(&[3, 4], 0.1, DType::F16, d)),
    ]
}

#[cfg(feature = "gpu")]
#[test]
fn every_creation_on_the_gpu_matches_the_cpu_bit_for_bit() {
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    let Device::Gpu(g) = &gpu else { unreachable!() };
    for (name, make) in creations() {
        if name.ends_with("f16") && !g.shader_f16() {
            continue;
        }
        manual_seed(2024);
        let cpu = make(&Device::Cpu).unwrap();
        manual_seed(2024);
        let on_gpu = make(&gpu).unwrap();
        assert_eq!(on_gpu.device(), gpu, "{name}");
        assert_eq!((on_gpu.shape(), on_gpu.dtype()), (cpu.shape(), cpu.dtype()), "{name}");
        assert_eq!(bits(&on_gpu), bits(&cpu), "{name}: the GPU's values differ from the cpu's");
    }
    // dropout draws its mask on the tensor's device: the same elements survive.
    let x = Tensor::randn(&[40, 50], DType::F32).unwrap();
    manual_seed(5);
    let cpu = x.dropout(0.4, true).unwrap();
    manual_seed(5);
    let on_gpu = x.to(&gpu).unwrap().dropout(0.4, true).unwrap();
    assert_eq!(bits(&on_gpu), bits(&cpu), "dropout keeps the same elements on both devices");
    // The plain forms are the cpu forms.
    for (name, make) in creations() {
        manual_seed(9);
        let a = make(&Device::Cpu).unwrap();
        assert_eq!(a.device(), Device::Cpu, "{name}");
    }
}

#[test]
fn gpu_creation_errors_name_the_op() {
    if !common::own_process() {
        return;
    }
    let Some(gpu) = common::gpu() else { return };
    // f64 lives on the cpu: the error names the creation, not a transfer.
    expect_err(Tensor::randn_on(&[2], DType::F64, &gpu), Kind::DType, "randn", &["f64", "cpu only"]);
    expect_err(Tensor::arange_on(0.0, 3.0, 1.0, DType::F64, &gpu), Kind::DType, "arange", &["f64"]);
    // The argument checks run first, the same on every device.
    expect_err(Tensor::rand_on(&[2], DType::I32, &gpu), Kind::DType, "rand", &["float dtype", "i32"]);
    expect_err(Tensor::randint_on(3, 3, &[2], &gpu), Kind::Value, "randint", &["empty range [3, 3)"]);
    // Past the device's buffer limit: the allocation's error, before anything is computed.
    expect_err(Tensor::eye_on(1 << 15, DType::F32, &gpu), Kind::Memory, "eye", &["4294967296 bytes", "limit"]);
    expect_err(Tensor::bernoulli_on(&[2], 1.5, &gpu), Kind::Value, "bernoulli", &["1.5"]);
}

/// `manual_seed(s)` then one random call makes the spec whose seed is the
/// first draw of `Generator::new(s)`.
#[test]
fn the_spec_alone_determines_the_values_and_its_seed_comes_from_manual_seed() {
    if !common::own_process() {
        return;
    }
    let shape = [4, 250];
    let seed = Generator::new(77).next_u64();
    let spec = KernelSpec::Random { dist: Distribution::Normal, dtype: DType::F32, seed };
    let run = |d: &Device| create("randn", &spec, &shape, d).unwrap();
    manual_seed(77);
    let via_api = Tensor::randn(&shape, DType::F32).unwrap();
    assert_eq!(bits(&run(&Device::Cpu)), bits(&via_api), "randn after manual_seed(77) is this spec");
    // No global state: other draws in between change nothing.
    manual_seed(1);
    let _ = Tensor::rand(&[10], DType::F32).unwrap();
    assert_eq!(bits(&run(&Device::Cpu)), bits(&via_api));
    // The second call of a seeded run uses the generator's second draw.
    let mut g = Generator::new(77);
    let _ = g.next_u64();
    let second = KernelSpec::Random {
        dist: Distribution::Uniform { lo: Scalar(0.0), hi: Scalar(1.0) },
        dtype: DType::F64,
        seed: g.next_u64(),
    };
    manual_seed(77);
    let _ = Tensor::randn(&shape, DType::F32).unwrap();
    let via_api = Tensor::rand(&[100], DType::F64).unwrap();
    let direct = create("rand", &second, &[100], &Device::Cpu).unwrap();
    assert_eq!(bits(&direct), bits(&via_api));
    if let Some(gpu) = common::gpu() {
        assert_eq!(bits(&run(&gpu)), bits(&run(&Device::Cpu)), "the same spec on the GPU");
    }
}

#[test]
fn reseeding_reproduces_every_draw_and_consecutive_draws_differ() {
    if !common::own_process() {
        return;
    }
    let draws: Vec<(&str, Make)> = creations().into_iter().take(5).collect();
    for (name, make) in draws {
        manual_seed(31);
        let first = bits(&make(&Device::Cpu).unwrap());
        let second = bits(&make(&Device::Cpu).unwrap());
        manual_seed(31);
        let again = bits(&make(&Device::Cpu).unwrap());
        assert_eq!(first, again, "{name}: manual_seed(31) reproduces the draw");
        assert_ne!(first, second, "{name}: the next draw is a new one");
        manual_seed(32);
        assert_ne!(first, bits(&make(&Device::Cpu).unwrap()), "{name}: another seed, other values");
    }
}

fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

/// Sample mean and variance within 6 standard errors of the analytic values:
/// SE(mean) = sqrt(var / n), SE(var) = sqrt((mu4 - var^2) / n), mu4 the
/// fourth central moment.
fn assert_moments(name: &str, v: &[f64], mean: f64, var: f64, mu4: f64) {
    let n = v.len() as f64;
    let (m, s2) = moments(v);
    let (se_m, se_v) = ((var / n).sqrt(), ((mu4 - var * var) / n).sqrt());
    assert!((m - mean).abs() < 6.0 * se_m, "{name}: mean {m}, want {mean} +- {}", 6.0 * se_m);
    assert!((s2 - var).abs() < 6.0 * se_v, "{name}: variance {s2}, want {var} +- {}", 6.0 * se_v);
}

#[test]
fn draws_have_their_distributions_moments() {
    if !common::own_process() {
        return;
    }
    manual_seed(404);
    let n = 1 << 20;
    let (lo, hi) = (-2.0, 3.0);
    let w: f64 = hi - lo;
    for dtype in [DType::F32, DType::F64] {
        let u = Tensor::uniform(&[n], lo, hi, dtype).unwrap().to_f64_vec().unwrap();
        assert!(u.iter().all(|&x| (lo..hi).contains(&x)), "uniform {dtype} in [lo, hi)");
        assert_moments("uniform", &u, (lo + hi) / 2.0, w * w / 12.0, w.powi(4) / 80.0);
        let r = Tensor::rand(&[n], dtype).unwrap().to_f64_vec().unwrap();
        assert!(r.iter().all(|&x| (0.0..1.0).contains(&x)), "rand {dtype} in [0, 1)");
        let (min, max) = r.iter().fold((1.0f64, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        assert!(min < 1e-4 && max > 1.0 - 1e-4, "rand {dtype} reaches both ends: {min} {max}");
        let z = Tensor::randn(&[n], dtype).unwrap().to_f64_vec().unwrap();
        assert!(z.iter().all(|x| x.is_finite()));
        assert_moments("randn", &z, 0.0, 1.0, 3.0);
        // Tails: P(|z| > 3) = 0.0026998 for a standard normal.
        let tail = z.iter().filter(|x| x.abs() > 3.0).count() as f64 / n as f64;
        let se = (0.0027 * (1.0 - 0.0027) / n as f64).sqrt();
        assert!((tail - 0.0026998).abs() < 6.0 * se, "randn {dtype} tail mass {tail}");
    }
    // randint covers [lo, hi), each value with frequency 1/k (binomial bounds).
    let (a, b) = (-3, 9);
    let k = (b - a) as usize;
    let v = Tensor::randint(a, b, &[n]).unwrap().to_vec::<i32>().unwrap();
    let mut counts = vec![0usize; k];
    for x in v {
        assert!((a..b).contains(&x), "randint value {x}");
        counts[(x - a) as usize] += 1;
    }
    let (p, nf) = (1.0 / k as f64, n as f64);
    for (i, &c) in counts.iter().enumerate() {
        assert!((c as f64 - nf * p).abs() < 6.0 * (nf * p * (1.0 - p)).sqrt(), "value {}: {c} draws", a + i as i32);
    }
    // bernoulli(p): the fraction of trues.
    let m = Tensor::bernoulli_on(&[n], 0.3, &Device::Cpu).unwrap().to_vec::<u8>().unwrap();
    let frac = m.iter().map(|&x| x as f64).sum::<f64>() / nf;
    assert!((frac - 0.3).abs() < 6.0 * (0.21 / nf).sqrt(), "bernoulli(0.3) fraction {frac}");
    let all = Tensor::bernoulli_on(&[100], 1.0, &Device::Cpu).unwrap().to_vec::<u8>().unwrap();
    assert!(all.iter().all(|&x| x == 1), "bernoulli(1) is all true");
    let none = Tensor::bernoulli_on(&[100], 0.0, &Device::Cpu).unwrap().to_vec::<u8>().unwrap();
    assert!(none.iter().all(|&x| x == 0), "bernoulli(0) is all false");
}

#[test]
fn sequences_keep_their_formulas_bit_for_bit() {
    // arange: start + i * step in f64, then converted.
    let a = Tensor::arange(0.1, 1.0, 0.1, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let n = ((1.0f64 - 0.1) / 0.1).ceil() as usize;
    let want: Vec<f32> = (0..n).map(|i| (0.1 + i as f64 * 0.1) as f32).collect();
    assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let a = Tensor::arange(5.0, -3.0, -1.5, DType::F64).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(a, vec![5.0, 3.5, 2.0, 0.5, -1.0, -2.5]);
    assert_eq!(Tensor::arange(-2.0, 3.0, 2.0, DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![-2, 0, 2]);
    // linspace: start + (end - start) * i / (n - 1), both ends exact.
    let l = Tensor::linspace(-1.0, 2.5, 8, DType::F64).unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = (0..8).map(|i| -1.0 + 3.5 * i as f64 / 7.0).collect();
    assert_eq!(l, want);
    assert_eq!((l[0], l[7]), (-1.0, 2.5));
    assert_eq!(Tensor::linspace(3.0, 9.0, 1, DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![3.0]);
    // eye: ones on the diagonal only.
    let e = Tensor::eye(3, DType::I32).unwrap().to_vec::<i32>().unwrap();
    assert_eq!(e, vec![1, 0, 0, 0, 1, 0, 0, 0, 1]);
    assert_eq!(Tensor::eye(0, DType::F32).unwrap().shape(), &[0, 0]);
}

#[test]
fn specs_are_values_with_the_seed_visible() {
    let uniform = Distribution::Uniform { lo: Scalar(-1.0), hi: Scalar(1.0) };
    let a = KernelSpec::Random { dist: uniform, dtype: DType::F32, seed: 7 };
    let b = KernelSpec::Random { dist: uniform, dtype: DType::F32, seed: 7 };
    let c = KernelSpec::Random { dist: uniform, dtype: DType::F32, seed: 8 };
    let d = KernelSpec::Random { dist: Distribution::Normal, dtype: DType::F32, seed: 7 };
    assert_eq!(a, b);
    assert_ne!(a, c, "the seed is part of the spec");
    assert_ne!(a, d);
    let KernelSpec::Random { seed, .. } = &c else { unreachable!() };
    assert_eq!(*seed, 8);
    assert!(format!("{c:?}").contains("seed: 8"), "{c:?}");
    let seq = |s: f64| KernelSpec::Sequence {
        seq: Sequence::Arange { start: Scalar(s), step: Scalar(1.0) },
        dtype: DType::F32,
    };
    let set: HashSet<KernelSpec> =
        [a.clone(), b, c.clone(), d.clone(), seq(0.0), seq(0.0), seq(-0.0)].into_iter().collect();
    assert_eq!(set.len(), 5, "equal specs hash alike; -0.0 and 0.0 are different kernels");
    assert_eq!((a.name(), a.arity()), ("random:uniform:f32".to_string(), 0));
    assert_eq!(seq(1.0).name(), "sequence:arange:f32");
    // Equal specs give equal bits; another seed other bits.
    let run = |s: &KernelSpec| bits(&create("rand", s, &[64], &Device::Cpu).unwrap());
    assert_eq!(run(&a), run(&a));
    assert_ne!(run(&a), run(&c));
    // A spec a backend cannot make is an error, not a panic.
    let bad = KernelSpec::Random { dist: Distribution::Normal, dtype: DType::I32, seed: 1 };
    assert!(backend::create("randn", &bad, &Device::Cpu, &[2]).is_err());
    let eye = KernelSpec::Sequence { seq: Sequence::Eye, dtype: DType::F32 };
    expect_err(backend::create("eye", &eye, &Device::Cpu, &[2, 2, 2]), Kind::Shape, "eye", &["[2, 2, 2]"]);
}

/// FNV-1a over 64-bit words: a fingerprint of a draw's exact bits.
fn fingerprint(words: impl Iterator<Item = u64>) -> u64 {
    words.fold(0xcbf2_9ce4_8422_2325, |h, w| (h ^ w).wrapping_mul(0x0000_0100_0000_01B3))
}

/// Known answers: the fingerprints of four seeded draws of 65536 values.
/// `tests/browser/random.test.mjs` asserts the same numbers from the wasm
/// build, so the two together show the cpu natively and in wasm draw the same
/// bits (the GPU tests above compare the GPU with the cpu). A deliberate
/// change of the generator or the samplers updates both.
const KNOWN_ANSWERS: [(&str, u64); 4] = [
    ("randn f64", 0x6695_3ccb_be4e_ae84),
    ("rand f32", 0x034a_0885_5b1c_a875),
    ("randint", 0xc5ff_9431_3bda_d23b),
    ("randn f32", 0x0334_8b41_0d22_d1a8),
];

#[test]
fn seeded_draws_have_their_known_fingerprints() {
    if !common::own_process() {
        return;
    }
    manual_seed(2025);
    let n = [1 << 16];
    let z = Tensor::randn(&n, DType::F64).unwrap().to_vec::<f64>().unwrap();
    let r = Tensor::rand(&n, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let i = Tensor::randint(-1000, 1000, &n).unwrap().to_vec::<i32>().unwrap();
    let u = Tensor::randn(&n, DType::F32).unwrap().to_vec::<f32>().unwrap();
    let got = [
        fingerprint(z.iter().map(|v| v.to_bits())),
        fingerprint(r.iter().map(|v| v.to_bits() as u64)),
        fingerprint(i.iter().map(|&v| v as u32 as u64)),
        fingerprint(u.iter().map(|v| v.to_bits() as u64)),
    ];
    for ((name, want), got) in KNOWN_ANSWERS.iter().zip(got) {
        assert_eq!(got, *want, "{name}: fingerprint {got:#x}");
    }
}
