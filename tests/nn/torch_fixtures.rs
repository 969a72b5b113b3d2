//! The layers and ops of "The layers and ops that real models need" against
//! PyTorch: `tests/fixtures/torch/layers48.safetensors` holds PyTorch's
//! inputs, outputs and gradients (written by scripts/torch-fixtures/, which
//! CI never runs). Each entry runs here in f64 on the cpu (to 1e-12) and in
//! f32 on the GPU when there is one (to 1e-5), layers with PyTorch's
//! parameter names loaded strictly.

use crate::common::{assert_close, gpu};
use skiff::io::safetensors as st;
use skiff::nn::{
    Conv1d, Conv1dConfig, ConvTranspose2d, ConvTranspose2dConfig, GroupNorm, Hardsigmoid, Hardswish, InstanceNorm,
    Interpolation, Layer, Mish, PReLU, PixelShuffle, PixelUnshuffle, RMSNorm, Unflatten, Upsample, ZeroPad2d, ELU,
    SELU,
};
use skiff::{DType, Device, Result, ScatterReduce, Tensor};

const FIXTURE: &[u8] = include_bytes!("../fixtures/torch/layers48.safetensors");

/// The fixture's tensors, handed out on `device` with floats in `dtype`.
pub(super) struct Fixture {
    tensors: Vec<(String, Tensor)>,
    dtype: DType,
    device: Device,
}

impl Fixture {
    pub(super) fn load(device: &Device, dtype: DType) -> Fixture {
        // Read on the cpu: the f64 values become f32 before they move to a GPU.
        let tensors = st::from_bytes(FIXTURE, &Device::Cpu).expect("the fixture parses");
        Fixture { tensors, dtype, device: device.clone() }
    }
    pub(super) fn get(&self, name: &str) -> Tensor {
        let t =
            self.tensors.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("fixture lacks {name}")).1.clone();
        let t = if t.dtype().is_float() { t.to_dtype(self.dtype).unwrap() } else { t };
        t.to(&self.device).unwrap()
    }
    /// Entry `e`'s input `x` as a fresh leaf that requires grad.
    pub(super) fn leaf(&self, e: &str, part: &str) -> Tensor {
        let t = self.get(&format!("{e}.{part}")).detach();
        t.requires_grad_(true).unwrap();
        t
    }
}

pub(super) fn host(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// Runs `f` on entry `e`'s leaves `inputs` (x first), checks y, backpropagates
/// the fixture's gy, and checks each input's gradient (`gx`, `g_<name>`) and
/// each extra tensor's gradient in `params` (`g_<name>`).
pub(super) fn check(
    fx: &Fixture,
    tol: f64,
    e: &str,
    inputs: &[&str],
    params: &[(String, Tensor)],
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) {
    let leaves: Vec<Tensor> = inputs.iter().map(|p| fx.leaf(e, p)).collect();
    let y = f(&leaves).unwrap_or_else(|err| panic!("{e}: {err}"));
    let want = fx.get(&format!("{e}.y"));
    assert_eq!(y.shape(), want.shape(), "{e}: output shape");
    assert_close(&host(&y), &host(&want), tol);
    let gy = fx.get(&format!("{e}.gy"));
    y.mul(&gy).unwrap().sum_all().unwrap().backward().unwrap();
    for (name, leaf) in inputs.iter().zip(&leaves) {
        let key = if *name == "x" { format!("{e}.gx") } else { format!("{e}.g_{name}") };
        let g = leaf.grad().unwrap_or_else(|| panic!("{e}: no gradient for {name}"));
        assert_close(&host(&g), &host(&fx.get(&key)), tol);
    }
    for (name, p) in params {
        let g = p.grad().unwrap_or_else(|| panic!("{e}: no gradient for parameter {name}"));
        assert_close(&host(&g), &host(&fx.get(&format!("{e}.g_{name}"))), tol);
    }
}

/// Entry `e` through a layer (on the fixture's device and dtype), its
/// parameters loaded strictly from the fixture's `p_<name>` tensors.
fn check_layer(fx: &Fixture, tol: f64, e: &str, layer: &dyn Layer, device: &Device) {
    check_layer_with(fx, tol, e, layer, device, &["x"], |x| layer.forward(&x[0]));
}

/// `check_layer` for a layer called as `f` on the entry's `inputs`.
pub(super) fn check_layer_with(
    fx: &Fixture,
    tol: f64,
    e: &str,
    layer: &dyn Layer,
    device: &Device,
    inputs: &[&str],
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) {
    layer.to(device).unwrap();
    layer.to_dtype(fx.dtype).unwrap();
    let names: Vec<String> = layer.named_parameters().into_iter().map(|(n, _)| n).collect();
    let entries: Vec<(String, Tensor)> = names.iter().map(|n| (n.clone(), fx.get(&format!("{e}.p_{n}")))).collect();
    layer.load_state_dict(&entries, true).unwrap_or_else(|err| panic!("{e}: {err}"));
    check(fx, tol, e, inputs, &layer.named_parameters(), f);
}

/// A non-differentiable entry: `f` of the fixture's named inputs against `y` exactly.
fn check_exact(fx: &Fixture, e: &str, inputs: &[&str], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let ins: Vec<Tensor> = inputs.iter().map(|p| fx.get(&format!("{e}.{p}"))).collect();
    let y = f(&ins).unwrap_or_else(|err| panic!("{e}: {err}"));
    let want = fx.get(&format!("{e}.y"));
    assert_eq!((y.shape(), y.dtype()), (want.shape(), want.dtype()), "{e}: shape and dtype");
    assert_eq!(host(&y), host(&want), "{e}");
}

fn every_entry(device: &Device, dtype: DType, tol: f64) {
    let fx = Fixture::load(device, dtype);
    let fx = &fx;
    check_layer(fx, tol, "elu", &ELU::new(0.7), device);
    check_layer(fx, tol, "selu", &SELU::new(), device);
    check_layer(fx, tol, "mish", &Mish::new(), device);
    check_layer(fx, tol, "hardswish", &Hardswish::new(), device);
    // PyTorch's hardsigmoid backward multiplies by 1.0f / 6.0f, an f32
    // constant, in every dtype: its f64 gradient is 3e-8 (relative) off 1/6.
    // The gradient is checked against PyTorch to that, and against the exact
    // gy / 6 inside (-3, 3) to `tol`.
    check_layer(fx, tol.max(1e-7), "hardsigmoid", &Hardsigmoid::new(), device);
    hardsigmoid_gradient_is_exactly_a_sixth(fx, tol);
    check_layer(fx, tol, "prelu", &PReLU::new(3, 0.25).unwrap(), device);
    check_layer(fx, tol, "prelu1", &PReLU::new(1, 0.25).unwrap(), device);
    check_layer(fx, tol, "pixel_shuffle", &PixelShuffle::new(2), device);
    check_layer(fx, tol, "pixel_unshuffle", &PixelUnshuffle::new(2), device);
    check_layer(fx, tol, "zeropad2d", &ZeroPad2d::new([1, 2, 0, 3]), device);
    check_layer(fx, tol, "unflatten", &Unflatten::new(1, &[2, 3]).unwrap(), device);
    check(fx, tol, "tril", &["x"], &[], |x| x[0].tril(-1));
    check(fx, tol, "triu", &["x"], &[], |x| x[0].triu(1));
    check(fx, tol, "flip", &["x"], &[], |x| x[0].flip(&[0, 2]));
    check(fx, tol, "roll", &["x"], &[], |x| x[0].roll(&[1, -2], &[0, 2]));
    check(fx, tol, "roll_flat", &["x"], &[], |x| x[0].roll(&[3], &[]));
    check(fx, tol, "repeat", &["x"], &[], |x| x[0].repeat(&[2, 1, 3]));
    check(fx, tol, "tile", &["x"], &[], |x| x[0].tile(&[2]));
    check(fx, tol, "norm2", &["x"], &[], |x| x[0].norm(2.0, &[], false));
    check(fx, tol, "norm1_dim1", &["x"], &[], |x| x[0].norm(1.0, &[1], false));
    check(fx, tol, "norminf_dim0", &["x"], &[], |x| x[0].norm(f64::INFINITY, &[0], false));
    check(fx, tol, "norm3_keepdim", &["x"], &[], |x| x[0].norm(3.0, &[0, 1], true));
    check(fx, tol, "amax_ties", &["x"], &[], |x| x[0].amax(&[1], false));
    check(fx, tol, "amin_ties", &["x"], &[], |x| x[0].amin(&[1], true));
    check(fx, tol, "clamp_tensor", &["x", "lo", "hi"], &[], |x| x[0].clamp_tensor(Some(&x[1]), Some(&x[2])));
    let mask = fx.get("masked_fill.mask");
    check(fx, tol, "masked_fill", &["x"], &[], |x| x[0].masked_fill(&mask, -1.5));
    check_exact(fx, "one_hot", &["idx"], |x| x[0].one_hot(4));
    check_exact(fx, "isnan", &["x"], |x| x[0].isnan());
    check_exact(fx, "isinf", &["x"], |x| x[0].isinf());
    check_exact(fx, "isfinite", &["x"], |x| x[0].isfinite());
    check_exact(fx, "any_dim1", &["x"], |x| x[0].any(&[1], false));
    check_exact(fx, "all_dim0", &["x"], |x| x[0].all(&[0], false));
    normalisations_convolutions_and_resampling(fx, tol, device);
    super::torch_sequence::every_entry(fx, tol, device);
    scatters_and_einsum(fx, tol);
    scans_and_sorting(fx, tol);
}

/// scatter, scatter_reduce (every reduce, with and without the element
/// itself), index_put (accumulate, overwrite without repeats, negative
/// indices) and einsum.
fn scatters_and_einsum(fx: &Fixture, tol: f64) {
    let idx = fx.get("scatter.idx");
    check(fx, tol, "scatter", &["x", "src"], &[], |x| x[0].scatter(0, &idx, &x[1]));
    let reduces = [
        ("sum", ScatterReduce::Sum),
        ("prod", ScatterReduce::Prod),
        ("mean", ScatterReduce::Mean),
        ("amax", ScatterReduce::Amax),
        ("amin", ScatterReduce::Amin),
    ];
    for (name, reduce) in reduces {
        for include_self in [true, false] {
            let e = format!("scatter_reduce_{name}_{}", if include_self { "self" } else { "noself" });
            let idx = fx.get(&format!("{e}.idx"));
            check(fx, tol, &e, &["x", "src"], &[], |x| x[0].scatter_reduce(0, &idx, &x[1], reduce, include_self));
        }
    }
    for (e, accumulate) in [("index_put_acc", true), ("index_put_set", false), ("index_put_neg", true)] {
        let indices = [fx.get(&format!("{e}.i0")), fx.get(&format!("{e}.i1"))];
        check(fx, tol, e, &["x", "v"], &[], |x| x[0].index_put(&indices, &x[1], accumulate));
    }
    for (e, equation) in [
        ("einsum_mm", "ij,jk->ik"),
        ("einsum_bmm", "bij,bjk->bik"),
        ("einsum_attention", "bhqd,bhkd->bhqk"),
        ("einsum_dot", "i,i->"),
        ("einsum_implicit", "ij,jk"),
        ("einsum_ellipsis", "...ij,...jk->...ik"),
        ("einsum_sum_one", "ijk,kl->li"),
    ] {
        check(fx, tol, e, &["x", "b"], &[], |x| Tensor::einsum(equation, x));
    }
    check(fx, tol, "einsum_diagonal", &["x"], &[], |x| Tensor::einsum("ii->i", x));
    check(fx, tol, "einsum_trace", &["x"], &[], |x| Tensor::einsum("ii", x));
    check(fx, tol, "einsum_three", &["x", "b", "c"], &[], |x| Tensor::einsum("ab,bc,cd->ad", x));
}

/// The values of `t` with NaN as one fixed value, so equal outputs compare equal.
fn exact(t: &Tensor) -> Vec<f64> {
    host(t).into_iter().map(|v| if v.is_nan() { f64::MAX } else { v }).collect()
}

/// cumsum, cumprod and prod (zeros in the inputs: the gradients are exact
/// there), and sort, argsort and topk: PyTorch's stable order with ties and
/// NaN, and the values' gradients.
fn scans_and_sorting(fx: &Fixture, tol: f64) {
    check(fx, tol, "cumsum", &["x"], &[], |x| x[0].cumsum(1));
    check(fx, tol, "cumsum_neg_dim", &["x"], &[], |x| x[0].cumsum(-3));
    check(fx, tol, "cumprod_zeros", &["x"], &[], |x| x[0].cumprod(1));
    check(fx, tol, "cumprod_dim0", &["x"], &[], |x| x[0].cumprod(0));
    check(fx, tol, "prod_zeros", &["x"], &[], |x| x[0].prod(&[1], false));
    check(fx, tol, "prod_zeros_keepdim", &["x"], &[], |x| x[0].prod(&[0], true));
    check(fx, tol, "prod_all", &["x"], &[], |x| x[0].prod(&[], false));
    check(fx, tol, "sort_descending", &["x"], &[], |x| Ok(x[0].sort(0, true, false)?.0));
    check(fx, tol, "topk", &["x"], &[], |x| Ok(x[0].topk(3, 1, true, true)?.0));
    check(fx, tol, "topk_smallest", &["x"], &[], |x| Ok(x[0].topk(2, 0, false, true)?.0));
    for (e, descending) in [("sort_ties_stable", false), ("sort_ties_descending", true)] {
        let (values, indices) = fx.get(&format!("{e}.x")).sort(1, descending, true).unwrap();
        assert_eq!(exact(&values), exact(&fx.get(&format!("{e}.y"))), "{e}: values");
        assert_eq!(host(&indices), host(&fx.get(&format!("{e}.indices"))), "{e}: indices");
    }
    check_exact(fx, "argsort_ties", &["x"], |x| x[0].argsort(0, true));
    // Among ties torch.topk picks its own positions: the values must agree,
    // and skiff's positions must hold those values.
    let x = fx.get("topk_ties.x");
    let (values, indices) = x.topk(4, 1, true, true).unwrap();
    assert_eq!(exact(&values), exact(&fx.get("topk_ties.y")), "topk_ties: values");
    assert_eq!(exact(&x.gather(1, &indices).unwrap()), exact(&values), "topk_ties: indices");
}

fn normalisations_convolutions_and_resampling(fx: &Fixture, tol: f64, device: &Device) {
    check_layer(fx, tol, "group_norm", &GroupNorm::new(2, 4).unwrap(), device);
    check_layer(fx, tol, "instance_norm2d", &InstanceNorm::new_2d(3, 1e-5, true).unwrap(), device);
    check_layer(fx, tol, "instance_norm1d", &InstanceNorm::new_1d(3, 1e-5, false).unwrap(), device);
    check_layer(fx, tol, "rms_norm", &RMSNorm::new(&[4]).unwrap(), device);
    let conv1d = Conv1dConfig { stride: 2, padding: 1, groups: 2, ..Default::default() };
    check_layer(fx, tol, "conv1d", &Conv1d::with_config(4, 2, 3, conv1d).unwrap(), device);
    let up = ConvTranspose2dConfig { stride: [2, 2], padding: [1, 1], output_padding: [1, 1], ..Default::default() };
    check_layer(fx, tol, "conv_transpose2d", &ConvTranspose2d::with_config(3, 2, [3, 3], up).unwrap(), device);
    let grouped = ConvTranspose2dConfig {
        stride: [1, 2],
        output_padding: [0, 1],
        groups: 2,
        dilation: [2, 1],
        bias: false,
        ..Default::default()
    };
    check_layer(
        fx,
        tol,
        "conv_transpose2d_groups",
        &ConvTranspose2d::with_config(4, 2, [2, 3], grouped).unwrap(),
        device,
    );
    let (nearest, corners) = (Interpolation::Nearest, Interpolation::Bilinear { align_corners: true });
    let bilinear = Interpolation::Bilinear { align_corners: false };
    check_layer(fx, tol, "upsample_nearest", &Upsample::with_size(&[5, 6], nearest).unwrap(), device);
    check_layer(fx, tol, "upsample_nearest_scale", &Upsample::with_scale(1.5, nearest).unwrap(), device);
    check_layer(fx, tol, "upsample_bilinear", &Upsample::with_size(&[5, 7], bilinear).unwrap(), device);
    check_layer(fx, tol, "upsample_bilinear_corners", &Upsample::with_scale(2.0, corners).unwrap(), device);
    check_layer(fx, tol, "upsample_bilinear_scale", &Upsample::with_scale(1.7, bilinear).unwrap(), device);
    let linear = Interpolation::Linear { align_corners: false };
    check_layer(fx, tol, "upsample_linear", &Upsample::with_size(&[3], linear).unwrap(), device);
}

fn hardsigmoid_gradient_is_exactly_a_sixth(fx: &Fixture, tol: f64) {
    let x = fx.leaf("hardsigmoid", "x");
    let gy = fx.get("hardsigmoid.gy");
    x.hardsigmoid().unwrap().mul(&gy).unwrap().sum_all().unwrap().backward().unwrap();
    let want: Vec<f64> =
        host(&x).iter().zip(host(&gy)).map(|(&v, g)| if v > -3.0 && v < 3.0 { g / 6.0 } else { 0.0 }).collect();
    assert_close(&host(&x.grad().unwrap()), &want, tol);
}

#[test]
fn every_entry_matches_pytorch_in_f64_on_the_cpu() {
    every_entry(&Device::Cpu, DType::F64, 1e-12);
}

#[test]
fn every_entry_matches_pytorch_in_f32_on_the_gpu() {
    let Some(dev) = gpu() else { return };
    every_entry(&dev, DType::F32, 1e-5);
}

#[test]
fn prelu_loads_pytorch_state_dicts_strictly() {
    // A state dict with the wrong parameter count or name is an error naming it.
    let layer = PReLU::new(3, 0.25).unwrap();
    let wrong = [("weight".to_string(), Tensor::ones(&[4], DType::F32).unwrap())];
    assert!(layer.load_state_dict(&wrong, true).is_err());
    let renamed = [("slope".to_string(), Tensor::ones(&[3], DType::F32).unwrap())];
    assert!(layer.load_state_dict(&renamed, true).is_err());
    assert_eq!(layer.state_dict()[0].0, "weight");
    assert_eq!(layer.repr(), "PReLU(num_parameters=3)");
}

#[test]
fn new_layers_print_as_pytorch_does() {
    // The strings PyTorch 2.15 prints for the same constructions.
    let cases: Vec<(Box<dyn Layer>, &str)> = vec![
        (Box::new(ELU::new(0.7)), "ELU(alpha=0.7)"),
        (Box::new(ELU::default()), "ELU(alpha=1.0)"),
        (Box::new(SELU::new()), "SELU()"),
        (Box::new(Mish::new()), "Mish()"),
        (Box::new(Hardswish::new()), "Hardswish()"),
        (Box::new(Hardsigmoid::new()), "Hardsigmoid()"),
        (Box::new(PReLU::new(3, 0.25).unwrap()), "PReLU(num_parameters=3)"),
        (Box::new(skiff::nn::Identity::new()), "Identity()"),
        (Box::new(Unflatten::new(1, &[2, 3]).unwrap()), "Unflatten(dim=1, unflattened_size=(2, 3))"),
        (Box::new(Unflatten::new(1, &[-1]).unwrap()), "Unflatten(dim=1, unflattened_size=(-1,))"),
        (Box::new(PixelShuffle::new(2)), "PixelShuffle(upscale_factor=2)"),
        (Box::new(PixelUnshuffle::new(2)), "PixelUnshuffle(downscale_factor=2)"),
        (Box::new(ZeroPad2d::new([1, 2, 0, 3])), "ZeroPad2d((1, 2, 0, 3))"),
        (Box::new(ZeroPad2d::uniform(2)), "ZeroPad2d((2, 2, 2, 2))"),
        (Box::new(Conv1d::new(3, 4, 3).unwrap()), "Conv1d(3, 4, kernel_size=(3,), stride=(1,))"),
        (
            Box::new(
                Conv1d::with_config(
                    4,
                    2,
                    2,
                    Conv1dConfig { stride: 2, padding: 1, dilation: 2, groups: 2, bias: false },
                )
                .unwrap(),
            ),
            "Conv1d(4, 2, kernel_size=(2,), stride=(2,), padding=(1,), dilation=(2,), groups=2, bias=False)",
        ),
        (
            Box::new(
                ConvTranspose2d::with_config(
                    3,
                    2,
                    [3, 3],
                    ConvTranspose2dConfig {
                        stride: [2, 2],
                        padding: [1, 1],
                        output_padding: [1, 1],
                        ..Default::default()
                    },
                )
                .unwrap(),
            ),
            "ConvTranspose2d(3, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))",
        ),
        (
            Box::new(
                ConvTranspose2d::with_config(
                    4,
                    2,
                    [2, 3],
                    ConvTranspose2dConfig { groups: 2, dilation: [2, 1], bias: false, ..Default::default() },
                )
                .unwrap(),
            ),
            "ConvTranspose2d(4, 2, kernel_size=(2, 3), stride=(1, 1), dilation=(2, 1), groups=2, bias=False)",
        ),
        (Box::new(GroupNorm::new(2, 6).unwrap()), "GroupNorm(2, 6, eps=1e-05, affine=True, bias=True)"),
        (
            Box::new(InstanceNorm::new_2d(3, 1e-5, false).unwrap()),
            "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)",
        ),
        (
            Box::new(InstanceNorm::new_1d(3, 1e-5, true).unwrap()),
            "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False)",
        ),
        (Box::new(RMSNorm::new(&[4]).unwrap()), "RMSNorm((4,), eps=None, elementwise_affine=True)"),
        (
            Box::new(RMSNorm::with_options(&[3, 4], Some(1e-6), false).unwrap()),
            "RMSNorm((3, 4), eps=1e-06, elementwise_affine=False)",
        ),
        (
            Box::new(Upsample::with_scale(2.0, Interpolation::Nearest).unwrap()),
            "Upsample(scale_factor=2.0, mode='nearest')",
        ),
        (
            Box::new(Upsample::with_size(&[4, 6], Interpolation::Bilinear { align_corners: true }).unwrap()),
            "Upsample(size=(4, 6), mode='bilinear')",
        ),
        (
            Box::new(Upsample::with_size(&[5], Interpolation::Linear { align_corners: false }).unwrap()),
            "Upsample(size=5, mode='linear')",
        ),
    ];
    for (layer, want) in cases {
        assert_eq!(layer.repr(), want);
    }
}

#[test]
fn new_layers_reject_bad_arguments_by_name() {
    use crate::common::{expect_err, Kind};
    expect_err(PReLU::new(0, 0.25), Kind::Value, "PReLU", &["num_parameters"]);
    expect_err(PReLU::new(2, f64::NAN), Kind::Value, "PReLU", &["init", "NaN"]);
    expect_err(Unflatten::new(1, &[-1, -1]), Kind::Value, "Unflatten", &["-1"]);
    let x = Tensor::zeros(&[2, 6], DType::F32).unwrap();
    expect_err(Unflatten::new(1, &[4, 2]).unwrap().forward(&x), Kind::Shape, "Unflatten", &["[2, 6]", "[4, 2]"]);
    expect_err(
        PReLU::new(4, 0.25).unwrap().forward(&Tensor::zeros(&[2, 3], DType::F32).unwrap()),
        Kind::Shape,
        "prelu",
        &["[4]", "3"],
    );
    expect_err(
        PixelShuffle::new(2).forward(&Tensor::zeros(&[1, 6, 2, 2], DType::F32).unwrap()),
        Kind::Shape,
        "pixel_shuffle",
        &["6 channels"],
    );
    expect_err(
        PixelUnshuffle::new(2).forward(&Tensor::zeros(&[1, 1, 3, 4], DType::F32).unwrap()),
        Kind::Shape,
        "pixel_unshuffle",
        &["height 3"],
    );
    expect_err(
        ZeroPad2d::uniform(1).forward(&Tensor::zeros(&[3], DType::F32).unwrap()),
        Kind::Shape,
        "ZeroPad2d",
        &["[3]"],
    );
}
