//! `Layer::type_name`, `extra_repr` and the printed layer tree, against the
//! text PyTorch prints for the same model (`print(model)`: `Module.__repr__`,
//! each layer's `extra_repr`, children indented by two spaces per level).

use skiff::nn::*;
use skiff::{DType, Result, Tensor};
use std::sync::Arc;

fn shown(layer: &dyn Layer) -> String {
    format!("{layer}")
}

/// ```python
/// model = nn.Sequential(
///     nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
///     nn.Linear(8 * 4 * 4, 10), nn.GELU(approximate='tanh'),
///     nn.ModuleDict({'norm': nn.LayerNorm(10), 'act': nn.LeakyReLU(0.2)}),
///     nn.Sequential(nn.ModuleList([nn.Linear(10, 3, bias=False)]), nn.Softmax(dim=1)),
///     nn.Sequential(),
/// )
/// print(model)
/// ```
const PYTORCH_PRINTS: &str = "\
Sequential(
  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU()
  (3): Flatten(start_dim=1, end_dim=-1)
  (4): Linear(in_features=128, out_features=10, bias=True)
  (5): GELU(approximate='tanh')
  (6): ModuleDict(
    (norm): LayerNorm((10,), eps=1e-05, elementwise_affine=True)
    (act): LeakyReLU(negative_slope=0.2)
  )
  (7): Sequential(
    (0): ModuleList(
      (0): Linear(in_features=10, out_features=3, bias=False)
    )
    (1): Softmax(dim=1)
  )
  (8): Sequential()
)";

#[test]
fn a_model_prints_as_pytorch_prints_it() -> Result<()> {
    let same = Conv2dConfig { padding: [1, 1], ..Default::default() };
    let mut dict = LayerDict::new();
    dict.insert("norm", LayerNorm::new(&[10])?)?;
    dict.insert("act", LeakyReLU::new(0.2))?;
    let mut list = LayerList::new();
    list.push(Linear::with_bias(10, 3, false)?);
    let model = Sequential::new()
        .push(Conv2d::with_config(1, 8, [3, 3], same)?)
        .push(BatchNorm2d::new(8)?)
        .push(ReLU::new())
        .push(Flatten::new())
        .push(Linear::new(8 * 4 * 4, 10)?)
        .push(GELU::with_approximate(GeluApproximate::Tanh))
        .push(dict)
        .push(Sequential::new().push(list).push(Softmax::new(1)))
        .push(Sequential::new());
    assert_eq!(model.repr(), PYTORCH_PRINTS);
    assert_eq!(shown(&model), PYTORCH_PRINTS, "Display prints the repr");
    Ok(())
}

#[test]
fn type_names_are_pytorchs_class_names() -> Result<()> {
    let layers: Vec<Box<dyn Layer>> = vec![
        Box::new(Linear::new(2, 3)?),
        Box::new(Conv2d::new(1, 2, [3, 3])?),
        Box::new(MaxPool2d::new([2, 2])?),
        Box::new(AvgPool2d::new([2, 2])?),
        Box::new(AdaptiveAvgPool2d::new([1, 1])?),
        Box::new(BatchNorm1d::new(3)?),
        Box::new(BatchNorm2d::new(3)?),
        Box::new(LayerNorm::new(&[3])?),
        Box::new(Dropout::new(0.5)?),
        Box::new(Embedding::new(5, 2)?),
        Box::new(Flatten::new()),
        Box::new(ReLU::new()),
        Box::new(LeakyReLU::default()),
        Box::new(GELU::new()),
        Box::new(Sigmoid::new()),
        Box::new(Tanh::new()),
        Box::new(SiLU::new()),
        Box::new(Softmax::new(-1)),
        Box::new(MultiHeadAttention::new(4, 2)?),
        Box::new(Sequential::new()),
        Box::new(LayerList::new()),
        Box::new(LayerDict::new()),
    ];
    let names: Vec<&str> = layers.iter().map(|l| l.type_name()).collect();
    assert_eq!(
        names,
        [
            "Linear",
            "Conv2d",
            "MaxPool2d",
            "AvgPool2d",
            "AdaptiveAvgPool2d",
            "BatchNorm1d",
            "BatchNorm2d",
            "LayerNorm",
            "Dropout",
            "Embedding",
            "Flatten",
            "ReLU",
            "LeakyReLU",
            "GELU",
            "Sigmoid",
            "Tanh",
            "SiLU",
            "Softmax",
            "MultiheadAttention",
            "Sequential",
            "ModuleList",
            "ModuleDict",
        ]
    );
    Ok(())
}

/// PyTorch's `extra_repr`s, where skiff's settings exist in PyTorch.
#[test]
fn extra_reprs_follow_pytorch() -> Result<()> {
    let conv = Conv2dConfig { stride: [2, 1], dilation: [2, 2], groups: 2, bias: false, ..Default::default() };
    let bn = BatchNormConfig { eps: 1e-3, momentum: 0.01, affine: false, track_running_stats: false };
    let cases: Vec<(Box<dyn Layer>, &str)> = vec![
        // nn.Conv2d(4, 6, (3, 5), stride=(2, 1), dilation=2, groups=2, bias=False)
        (
            Box::new(Conv2d::with_config(4, 6, [3, 5], conv)?),
            "4, 6, kernel_size=(3, 5), stride=(2, 1), dilation=(2, 2), groups=2, bias=False",
        ),
        // nn.BatchNorm1d(5, eps=1e-3, momentum=0.01, affine=False, track_running_stats=False)
        (
            Box::new(BatchNorm1d::with_config(5, bn)?),
            "5, eps=0.001, momentum=0.01, affine=False, track_running_stats=False",
        ),
        // nn.LayerNorm([2, 3], eps=1e-6, elementwise_affine=False)
        (Box::new(LayerNorm::with_options(&[2, 3], 1e-6, false)?), "(2, 3), eps=1e-06, elementwise_affine=False"),
        (Box::new(Embedding::new(100, 16)?), "100, 16"),
        (Box::new(AdaptiveAvgPool2d::new([7, 7])?), "output_size=(7, 7)"),
        (Box::new(Flatten::with_axes(0, 2)), "start_dim=0, end_dim=2"),
        (Box::new(GELU::new()), "approximate='none'"),
        (Box::new(Sigmoid::new()), ""),
    ];
    for (layer, want) in cases {
        assert_eq!(layer.extra_repr(), want, "{}", layer.type_name());
    }
    Ok(())
}

/// Where skiff's layers differ from PyTorch's, the repr says what skiff has:
/// pools print pairs and no dilation/ceil_mode, dropout has no `inplace`,
/// attention prints its sizes (PyTorch prints none) and skiff's `causal`.
#[test]
fn skiffs_own_settings_print_as_documented() -> Result<()> {
    assert_eq!(
        MaxPool2d::with_options([3, 3], [2, 2], [1, 1])?.repr(),
        "MaxPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    );
    assert_eq!(AvgPool2d::new([2, 2])?.repr(), "AvgPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
    assert_eq!(Dropout::new(0.25)?.repr(), "Dropout(p=0.25)");
    let mha = MultiHeadAttention::with_options(8, 2, false, 0.1)?.with_causal(true);
    assert_eq!(
        mha.repr(),
        "MultiheadAttention(\n  embed_dim=8, num_heads=2, dropout=0.1, bias=False, causal=True\n  \
         (out_proj): Linear(in_features=8, out_features=8, bias=False)\n)"
    );
    Ok(())
}

/// Boxed and shared (`Arc`) layers print as the layer they hold; the sizes
/// come from the weights, so a converted layer prints the same.
#[test]
fn shared_and_boxed_layers_print_their_layer() -> Result<()> {
    let shared = Arc::new(Linear::new(3, 3)?);
    let model = Sequential::new().push(shared.clone()).push(Box::new(Tanh::new()) as Box<dyn Layer>).push(shared);
    assert_eq!(
        model.repr(),
        "Sequential(\n  (0): Linear(in_features=3, out_features=3, bias=True)\n  (1): Tanh()\n  \
         (2): Linear(in_features=3, out_features=3, bias=True)\n)"
    );
    model.to_dtype(DType::F64)?;
    assert!(model.repr().starts_with("Sequential(\n  (0): Linear(in_features=3"));
    Ok(())
}

/// A layer written outside skiff gets its Rust type's name, PyTorch's rule
/// for a user's class, and PyTorch's multi-line extra_repr layout.
#[test]
fn a_users_layer_prints_with_its_type_name() -> Result<()> {
    struct Scale<T> {
        core: Core,
        inner: Linear,
        _t: std::marker::PhantomData<T>,
    }
    impl<T: Send + Sync> Layer for Scale<T> {
        fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
            self.inner.forward(x)
        }
        fn core(&self) -> &Core {
            &self.core
        }
        fn children(&self) -> Vec<(String, &dyn Layer)> {
            vec![("inner".into(), &self.inner)]
        }
    }
    struct TwoLines(Core);
    impl Layer for TwoLines {
        fn forward_impl(&self, x: &Tensor) -> Result<Tensor> {
            Ok(x.clone())
        }
        fn core(&self) -> &Core {
            &self.0
        }
        fn extra_repr(&self) -> String {
            "a=1\nb=2".into()
        }
    }
    let s = Scale::<f32> { core: Core::new(), inner: Linear::new(2, 2)?, _t: std::marker::PhantomData };
    assert_eq!(s.type_name(), "Scale");
    assert_eq!(s.repr(), "Scale(\n  (inner): Linear(in_features=2, out_features=2, bias=True)\n)");
    // PyTorch: a multi-line extra_repr goes on lines of its own even without children.
    assert_eq!(TwoLines(Core::new()).repr(), "TwoLines(\n  a=1\n  b=2\n)");
    Ok(())
}
