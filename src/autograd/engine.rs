//! The backward engine. Deterministic and iterative (never recursive, so a
//! 10,000-op chain runs within wasm's small stack):
//! 1. discover every node reachable from the roots and count, for each, the
//!    edges that lead into it (its dependencies);
//! 2. for `grad()`, mark the nodes that lie on a path to a requested input;
//! 3. run nodes from a ready queue ordered by creation sequence (latest
//!    first) once all their dependencies have delivered, summing gradients
//!    in a fixed order.

use super::hooks::run_hooks;
use super::node::{BackwardCtx, Edge, Node, NodeKind};
use super::{set_grad_enabled, FunctionCtx};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

/// Options for `Tensor::backward_with`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardOptions {
    /// Keep saved tensors so the graph can be walked again.
    pub retain_graph: bool,
    /// Record the backward computation itself (for higher-order gradients).
    pub create_graph: bool,
}

/// Options for `grad`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    pub create_graph: bool,
    /// Defaults to `create_graph` when None (as in PyTorch).
    pub retain_graph: Option<bool>,
    /// Return None for inputs the outputs do not depend on, instead of an error.
    pub allow_unused: bool,
}

type NodeId = *const Node;

struct Ready(u64, Arc<Node>);
impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

struct Graph {
    deps: HashMap<NodeId, usize>,
    /// Nodes in discovery order (roots first); used to mark "needed" nodes.
    order: Vec<Arc<Node>>,
}

fn discover(roots: &[Arc<Node>]) -> Graph {
    let mut deps: HashMap<NodeId, usize> = HashMap::new();
    let mut order = Vec::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for r in roots {
        if let std::collections::hash_map::Entry::Vacant(v) = deps.entry(Arc::as_ptr(r)) {
            v.insert(0);
            stack.push(r.clone());
        }
    }
    while let Some(n) = stack.pop() {
        for e in n.next.iter().flatten() {
            let id = Arc::as_ptr(&e.node);
            match deps.get_mut(&id) {
                Some(c) => *c += 1,
                None => {
                    deps.insert(id, 1);
                    stack.push(e.node.clone());
                }
            }
        }
        order.push(n);
    }
    Graph { deps, order }
}

/// Marks nodes that must run so gradients reach a capture target: a node is
/// needed when one of its edges leads to a target or to a needed node.
fn needed_nodes(graph: &Graph, targets: &[Edge]) -> HashMap<NodeId, bool> {
    // Reverse topological order via Kahn's algorithm on the discovered graph.
    let mut deps = graph.deps.clone();
    let mut topo: Vec<Arc<Node>> = Vec::with_capacity(graph.order.len());
    let mut stack: Vec<Arc<Node>> = graph.order.iter().filter(|n| deps[&Arc::as_ptr(n)] == 0).cloned().collect();
    while let Some(n) = stack.pop() {
        for e in n.next.iter().flatten() {
            let c = deps.get_mut(&Arc::as_ptr(&e.node)).expect("discovered");
            *c -= 1;
            if *c == 0 {
                stack.push(e.node.clone());
            }
        }
        topo.push(n);
    }
    let is_target = |id: NodeId| targets.iter().any(|t| Arc::as_ptr(&t.node) == id);
    let mut needed: HashMap<NodeId, bool> = HashMap::new();
    for n in topo.iter().rev() {
        let v = n.next.iter().flatten().any(|e| {
            let id = Arc::as_ptr(&e.node);
            is_target(id) || needed.get(&id).copied().unwrap_or(false)
        });
        needed.insert(Arc::as_ptr(n), v);
    }
    needed
}

fn accumulate_into(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(old) => old.add(&g)?,
    });
    Ok(())
}

/// Runs backward from `roots` (edge, gradient). With `captures`, the gradients
/// arriving at those edges are returned and leaves are not touched (`grad()`);
/// without, leaf gradients accumulate into `.grad` (`backward()`).
pub(crate) fn run_backward(
    roots: Vec<(Edge, Tensor)>,
    captures: Option<&[Edge]>,
    retain_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = set_grad_enabled(create_graph);
    let root_nodes: Vec<Arc<Node>> = roots.iter().map(|(e, _)| e.node.clone()).collect();
    let mut graph = discover(&root_nodes);
    let needed = captures.map(|c| needed_nodes(&graph, c));
    let mut captured: Vec<Option<Tensor>> = vec![None; captures.map_or(0, |c| c.len())];
    let mut buffers: HashMap<NodeId, Vec<Option<Tensor>>> = HashMap::new();
    let mut heap = BinaryHeap::new();

    for (e, g) in roots {
        let buf = buffers.entry(Arc::as_ptr(&e.node)).or_insert_with(|| vec![None; e.node.outputs.len().max(1)]);
        accumulate_into(&mut buf[e.nr], g)?;
    }
    for n in &root_nodes {
        let id = Arc::as_ptr(n);
        if graph.deps[&id] == 0 && !heap.iter().any(|r: &Ready| Arc::as_ptr(&r.1) == id) {
            heap.push(Ready(n.seq, n.clone()));
        }
    }

    while let Some(Ready(_, node)) = heap.pop() {
        let id = Arc::as_ptr(&node);
        let mut grads = buffers.remove(&id).unwrap_or_default();
        for (nr, g) in grads.iter_mut().enumerate() {
            if let Some(t) = g.take() {
                *g = Some(run_hooks(&node, nr, t)?);
            }
        }
        if let Some(caps) = captures {
            for (k, c) in caps.iter().enumerate() {
                if Arc::as_ptr(&c.node) == id {
                    if let Some(g) = grads.get(c.nr).cloned().flatten() {
                        accumulate_into(&mut captured[k], g)?;
                    }
                }
            }
        }
        let run = match &needed {
            Some(n) => n.get(&id).copied().unwrap_or(false),
            None => true,
        };
        let input_grads =
            if run && grads.iter().any(|g| g.is_some()) { execute(&node, grads, create_graph)? } else { Vec::new() };
        if run && !retain_graph && !matches!(node.kind, NodeKind::Accumulate { .. }) {
            node.release();
        }
        let mut input_grads = input_grads.into_iter();
        for e in node.next.iter() {
            let g = input_grads.next().flatten();
            let Some(e) = e else { continue };
            let tid = Arc::as_ptr(&e.node);
            if let Some(g) = g {
                let buf = buffers.entry(tid).or_insert_with(|| vec![None; e.node.outputs.len().max(1)]);
                accumulate_into(&mut buf[e.nr], g)?;
            }
            let c = graph.deps.get_mut(&tid).expect("discovered");
            *c -= 1;
            if *c == 0 {
                heap.push(Ready(e.node.seq, e.node.clone()));
            }
        }
    }
    Ok(captured)
}

/// Runs one node's backward and checks what it returned.
fn execute(node: &Arc<Node>, grads: Vec<Option<Tensor>>, create_graph: bool) -> Result<Vec<Option<Tensor>>> {
    let result = match &node.kind {
        NodeKind::Accumulate { leaf } => {
            if let (Some(leaf), Some(Some(g))) = (leaf.upgrade(), grads.into_iter().next()) {
                accumulate_leaf(&Tensor(leaf), g, create_graph)?;
            }
            return Ok(Vec::new());
        }
        NodeKind::Op { def, attrs } => {
            let saved = node.unpack_saved()?;
            let backward = def.backward.ok_or_else(|| {
                Error::autograd(def.name, "op has no backward rule but was recorded (internal error)")
            })?;
            let grads = fill_missing(node, grads)?;
            let ctx = BackwardCtx { node, saved, attrs };
            backward(&ctx, &grads)?
        }
        NodeKind::Custom { func, .. } => {
            let saved = node.unpack_saved()?;
            let ctx = FunctionCtx::for_backward(saved, node);
            let grads = fill_missing(node, grads)?;
            func.backward(&ctx, &grads)?
        }
    };
    check_input_grads(node, &result)?;
    Ok(result)
}

/// Outputs that received no gradient get zeros, so rules always see every output's gradient.
fn fill_missing(node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Tensor>> {
    grads
        .into_iter()
        .enumerate()
        .map(|(i, g)| match g {
            Some(g) => Ok(g),
            None => {
                let m = &node.outputs[i];
                Tensor::full_on(&m.shape, 0.0, m.dtype, &m.device)
            }
        })
        .collect()
}

fn check_input_grads(node: &Node, grads: &[Option<Tensor>]) -> Result<()> {
    if grads.len() != node.next.len() {
        return Err(Error::autograd(
            node.name_static(),
            format!("backward of '{}' returned {} gradients for {} inputs", node.name(), grads.len(), node.next.len()),
        ));
    }
    for (i, g) in grads.iter().enumerate() {
        if let (Some(g), Some(_)) = (g, &node.next[i]) {
            let want = &node.inputs[i];
            // A gradient must live where its input lives: otherwise a leaf
            // on the GPU would silently get a `.grad` on the cpu.
            if g.device() != want.device {
                return Err(Error::Device {
                    op: node.name_static(),
                    found: format!(
                        "a gradient on {} for input {i} (on {}) returned by the backward of '{}'",
                        g.device(),
                        want.device,
                        node.name()
                    ),
                });
            }
            if g.shape() != want.shape.as_slice() || g.dtype() != want.dtype {
                return Err(Error::autograd(
                    node.name_static(),
                    format!(
                        "backward of '{}' returned a gradient of shape {:?} and dtype {} for input {i} of shape {:?} and dtype {}",
                        node.name(),
                        g.shape(),
                        g.dtype(),
                        want.shape,
                        want.dtype
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn accumulate_leaf(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    let g = if create_graph { g } else { g.detach() };
    let new = match leaf.grad() {
        Some(old) => old.add(&g)?,
        // Never alias a tensor someone else holds: later in-place updates of
        // `.grad` (optimizers) must not write into it.
        None if std::sync::Arc::strong_count(&g.0) > 1 || std::sync::Arc::strong_count(g.storage()) > 1 => {
            g.contiguous_copy()?
        }
        None => g,
    };
    leaf.store_grad(Some(new));
    Ok(())
}

fn check_root(op: &'static str, t: &Tensor, grad: Option<&Tensor>) -> Result<(Edge, Tensor)> {
    let edge = t.grad_edge().ok_or_else(|| {
        Error::autograd(op, format!("tensor of shape {:?} does not require grad and has no grad_fn", t.shape()))
    })?;
    let g = match grad {
        Some(g) => {
            if g.shape() != t.shape() {
                return Err(Error::shape(
                    op,
                    format!("output gradient has shape {:?} but the output has shape {:?}", g.shape(), t.shape()),
                ));
            }
            if g.device() != t.device() {
                return Err(Error::Device {
                    op,
                    found: format!("output on {}, gradient on {}", t.device(), g.device()),
                });
            }
            if g.dtype() != t.dtype() {
                return Err(Error::dtype(
                    op,
                    format!(
                        "output gradient has dtype {} but the output has dtype {} (shape {:?})",
                        g.dtype(),
                        t.dtype(),
                        t.shape()
                    ),
                ));
            }
            g.clone()
        }
        None => {
            if t.numel() != 1 {
                return Err(Error::autograd(
                    op,
                    format!("gradient can be implicitly created only for scalar outputs; got shape {:?}: pass an output gradient", t.shape()),
                ));
            }
            Tensor::full_on(t.shape(), 1.0, t.dtype(), &t.device())?
        }
    };
    Ok((edge, g))
}

impl Tensor {
    /// Backpropagates from this scalar, accumulating into the leaves' `.grad`.
    pub fn backward(&self) -> Result<()> {
        self.backward_with(None, BackwardOptions::default())
    }

    /// Backward with an explicit output gradient and options.
    pub fn backward_with(&self, grad: Option<&Tensor>, opts: BackwardOptions) -> Result<()> {
        let root = check_root("backward", self, grad)?;
        run_backward(vec![root], None, opts.retain_graph, opts.create_graph)?;
        Ok(())
    }
}

/// Gradients of `outputs` with respect to `inputs` (PyTorch's
/// `torch.autograd.grad`), without touching any `.grad`. Non-scalar outputs
/// need `grad_outputs` (one per output). With `create_graph` the backward
/// pass is itself recorded, so the gradients can be differentiated again.
///
/// ```
/// use skiff::{grad, GradOptions, Tensor};
///
/// # fn main() -> skiff::Result<()> {
/// let x = Tensor::from_vec(vec![2.0f32], &[1])?.requires_grad_(true)?;
/// let y = x.pow_scalar(3.0)?.sum_all()?; // y = x^3
///
/// let opts = GradOptions { create_graph: true, ..Default::default() };
/// let dy = grad(&[y], &[x.clone()], None, opts)?.remove(0).unwrap();
/// assert_eq!(dy.to_vec::<f32>()?, vec![12.0]); // 3x^2
///
/// // Differentiate the gradient: d(3x^2)/dx = 6x.
/// let d2y = grad(&[dy.sum_all()?], &[x.clone()], None, GradOptions::default())?.remove(0).unwrap();
/// assert_eq!(d2y.to_vec::<f32>()?, vec![12.0]);
/// assert!(x.grad().is_none()); // grad() leaves `.grad` alone
/// # Ok(())
/// # }
/// ```
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: Option<&[Tensor]>,
    opts: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if let Some(go) = grad_outputs {
        if go.len() != outputs.len() {
            return Err(Error::value("grad", format!("{} grad_outputs for {} outputs", go.len(), outputs.len())));
        }
    }
    let roots = outputs
        .iter()
        .enumerate()
        .map(|(i, o)| check_root("grad", o, grad_outputs.map(|g| &g[i])))
        .collect::<Result<Vec<_>>>()?;
    let caps = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.grad_edge().ok_or_else(|| {
                Error::autograd("grad", format!("input {i} (shape {:?}) does not require grad", t.shape()))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let retain = opts.retain_graph.unwrap_or(opts.create_graph);
    let res = run_backward(roots, Some(&caps), retain, opts.create_graph)?;
    if !opts.allow_unused {
        if let Some(i) = res.iter().position(|g| g.is_none()) {
            return Err(Error::autograd(
                "grad",
                format!(
                    "input {i} (shape {:?}) was not used to compute the outputs; pass allow_unused=true",
                    inputs[i].shape()
                ),
            ));
        }
    }
    Ok(res)
}
