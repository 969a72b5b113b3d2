//! User-defined differentiable functions (Paddle's PyLayer, PyTorch's
//! autograd.Function): user forward and backward, usable mid-graph.

use super::node::{Node, NodeKind, SavedTensor};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

/// A function with a hand-written backward. `forward` runs without recording;
/// `backward` receives one gradient per output and returns one per input
/// (`None` for inputs that get no gradient). Backward runs with recording on
/// when the caller asked for `create_graph`, so it may be differentiated again.
/// Call it through [`apply_function`].
///
/// ```
/// use skiff::autograd::apply_function;
/// use skiff::{Function, FunctionCtx, Result, Tensor};
/// use std::sync::Arc;
///
/// /// exp(x), whose backward reuses the saved output: d exp(x)/dx = exp(x).
/// struct Exp;
/// impl Function for Exp {
///     fn name(&self) -> String {
///         "Exp".into()
///     }
///     fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
///         let y = inputs[0].exp()?;
///         ctx.save_for_backward(&[&y]);
///         Ok(vec![y])
///     }
///     fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
///         Ok(vec![Some(grads[0].mul(&ctx.saved_tensors()[0])?)])
///     }
/// }
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::from_vec(vec![0.0f32, 1.0], &[2])?.requires_grad_(true)?;
/// let y = apply_function(Arc::new(Exp), &[x.clone()])?.remove(0);
/// assert_eq!(y.grad_fn_name().as_deref(), Some("Exp"));
/// y.sum_all()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, x.exp()?.to_vec::<f32>()?);
/// # Ok(())
/// # }
/// ```
pub trait Function: Send + Sync + 'static {
    fn name(&self) -> String {
        "CustomFunction".to_string()
    }
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>>;
    fn backward(&self, ctx: &FunctionCtx, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>>;
}

/// Per-call context: tensors saved in forward, read back in backward.
#[derive(Default)]
pub struct FunctionCtx {
    saved: Vec<Tensor>,
    needs_input_grad: Vec<bool>,
}

impl FunctionCtx {
    /// Saves tensors (inputs, outputs or others) for backward.
    pub fn save_for_backward(&mut self, tensors: &[&Tensor]) {
        self.saved.extend(tensors.iter().map(|t| (*t).clone()));
    }
    /// The saved tensors, in the order they were saved.
    pub fn saved_tensors(&self) -> &[Tensor] {
        &self.saved
    }
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
    pub(crate) fn for_backward(saved: Vec<Tensor>, node: &Node) -> FunctionCtx {
        FunctionCtx { saved, needs_input_grad: node.next.iter().map(|e| e.is_some()).collect() }
    }
}

/// Calls `func` on `inputs`, recording it in the graph when any input requires grad.
pub fn apply_function(func: Arc<dyn Function>, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let name = func.name();
    if let Some(first) = inputs.first() {
        if let Some(bad) = inputs.iter().find(|t| t.device() != first.device()) {
            return Err(Error::Device {
                op: "custom function",
                found: format!("{} and {} in {name}", first.device(), bad.device()),
            });
        }
    }
    let mut ctx =
        FunctionCtx { saved: Vec::new(), needs_input_grad: inputs.iter().map(|t| t.requires_grad()).collect() };
    let raw = super::no_grad(|| func.forward(&mut ctx, inputs))?;
    let refs: Vec<&Tensor> = inputs.iter().collect();
    // Fresh handles, so recording history never touches a tensor the user passed in.
    let outputs: Vec<Tensor> = raw.iter().map(|t| t.detach()).collect();
    if !super::needs_record(&refs) {
        return Ok(outputs);
    }
    let saved = ctx
        .saved
        .iter()
        .map(|s| match raw.iter().position(|o| o.same_tensor(s)) {
            Some(j) => SavedTensor::own_output(&outputs[j], j),
            None => SavedTensor::new(s),
        })
        .collect();
    super::check_fresh("Function", &refs)?;
    let out_refs: Vec<&Tensor> = outputs.iter().collect();
    let node = Node::new(NodeKind::Custom { func, name }, &refs, &out_refs, saved);
    for (i, o) in outputs.iter().enumerate() {
        if o.dtype().is_float() {
            o.set_history(node.clone(), i);
        }
    }
    Ok(outputs)
}
