//! Graph nodes are plain data (DESIGN principle 5): the op, its attributes,
//! the edges its input gradients flow along, and the tensors it saved.

use super::hooks::Hook;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Attrs, OpDef};
use crate::shape::Dims;
use crate::tensor::{Tensor, TensorImpl};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Where a gradient goes: output `nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    pub node: Arc<Node>,
    pub nr: usize,
}

/// Shape, dtype and device of a node input or output.
#[derive(Clone, Debug)]
pub struct TensorMeta {
    pub shape: Dims,
    pub dtype: DType,
    pub device: Device,
}

impl TensorMeta {
    pub fn of(t: &Tensor) -> TensorMeta {
        TensorMeta { shape: t.dims(), dtype: t.dtype(), device: t.device() }
    }
}

/// What a node does in backward.
pub(crate) enum NodeKind {
    /// A registry op: its backward rule reads `attrs` and the saved tensors.
    Op { def: &'static OpDef, attrs: Attrs },
    /// Accumulates the incoming gradient into a leaf's `.grad`.
    Accumulate { leaf: Weak<TensorImpl> },
    /// A user-defined function (the one place closures/trait objects live).
    Custom { func: Arc<dyn super::Function>, name: String },
}

/// How a saved tensor reconnects to the graph when unpacked.
enum SavedEdge {
    None,
    Strong(Edge),
    /// Output `nr` of the node that saved it (held weakly to avoid a cycle).
    OwnOutput(usize),
}

/// A tensor saved for backward: its data, the storage version at save time
/// (in-place writes after that make it unusable), and its graph edge.
pub struct SavedTensor {
    data: Tensor,
    version: u64,
    edge: SavedEdge,
}

impl SavedTensor {
    pub fn new(t: &Tensor) -> SavedTensor {
        let edge = match t.grad_edge() {
            Some(e) => SavedEdge::Strong(e),
            None => SavedEdge::None,
        };
        SavedTensor { data: t.detach(), version: t.version(), edge }
    }
    pub fn own_output(t: &Tensor, nr: usize) -> SavedTensor {
        SavedTensor { data: t.detach(), version: t.version(), edge: SavedEdge::OwnOutput(nr) }
    }
    /// Rebuilds the tensor, checking that no in-place op overwrote it.
    fn unpack(&self, me: &Arc<Node>, index: usize) -> Result<Tensor> {
        let now = self.data.version();
        if now != self.version {
            return Err(Error::autograd(
                me.name_static(),
                format!(
                    "saved tensor {index} of '{}' (shape {:?}, dtype {}) was modified by an in-place operation after \
                     it was saved (version {} now, {} when saved); gradients would be wrong. Clone it before writing in place.",
                    me.name(),
                    self.data.shape(),
                    self.data.dtype(),
                    now,
                    self.version
                ),
            ));
        }
        let t = self.data.detach();
        match &self.edge {
            SavedEdge::None => {}
            SavedEdge::Strong(e) => t.set_history(e.node.clone(), e.nr),
            SavedEdge::OwnOutput(nr) => t.set_history(me.clone(), *nr),
        }
        Ok(t)
    }
}

pub(crate) struct SavedState {
    pub tensors: Vec<SavedTensor>,
    pub released: bool,
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// One recorded op.
pub struct Node {
    /// Creation order; the engine runs later nodes first.
    pub seq: u64,
    pub(crate) kind: NodeKind,
    /// One per input: where that input's gradient goes (None: needs no grad).
    pub next: SmallVec<[Option<Edge>; 2]>,
    pub inputs: SmallVec<[TensorMeta; 2]>,
    pub outputs: SmallVec<[TensorMeta; 1]>,
    pub(crate) saved: Mutex<SavedState>,
    /// Tensor hooks, keyed by output number, run on the incoming gradient.
    pub(crate) hooks: Mutex<Vec<(u64, usize, Hook)>>,
    /// Tensors whose `.grad` keeps the gradient of output `nr` (`retain_grad`):
    /// filled after every hook has run, as PyTorch's retains_grad hooks.
    pub(crate) retains: Mutex<Vec<(usize, Weak<TensorImpl>)>>,
}

impl Node {
    pub(crate) fn new(kind: NodeKind, inputs: &[&Tensor], outputs: &[&Tensor], saved: Vec<SavedTensor>) -> Arc<Node> {
        Arc::new(Node {
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
            kind,
            next: inputs.iter().map(|t| t.grad_edge()).collect(),
            inputs: inputs.iter().map(|t| TensorMeta::of(t)).collect(),
            outputs: outputs.iter().map(|t| TensorMeta::of(t)).collect(),
            saved: Mutex::new(SavedState { tensors: saved, released: false }),
            hooks: Mutex::new(Vec::new()),
            retains: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn accumulate(leaf: Weak<TensorImpl>) -> Arc<Node> {
        let meta = leaf.upgrade().map(|l| TensorMeta::of(&Tensor(l)));
        Arc::new(Node {
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
            kind: NodeKind::Accumulate { leaf },
            next: SmallVec::new(),
            inputs: SmallVec::new(),
            outputs: meta.into_iter().collect(),
            saved: Mutex::new(SavedState { tensors: Vec::new(), released: false }),
            hooks: Mutex::new(Vec::new()),
            retains: Mutex::new(Vec::new()),
        })
    }

    /// The op name, e.g. "mul", "AccumulateGrad", or a custom function's name.
    pub fn name(&self) -> &str {
        match &self.kind {
            NodeKind::Op { def, .. } => def.name,
            NodeKind::Accumulate { .. } => "AccumulateGrad",
            NodeKind::Custom { name, .. } => name,
        }
    }

    pub(crate) fn name_static(&self) -> &'static str {
        match &self.kind {
            NodeKind::Op { def, .. } => def.name,
            NodeKind::Accumulate { .. } => "AccumulateGrad",
            NodeKind::Custom { .. } => "custom function",
        }
    }

    pub(crate) fn saved_state(&self) -> MutexGuard<'_, SavedState> {
        self.saved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Unpacks every saved tensor; errors after release or an in-place overwrite.
    pub(crate) fn unpack_saved(self: &Arc<Node>) -> Result<Vec<Tensor>> {
        let st = self.saved_state();
        if st.released {
            return Err(Error::autograd(
                self.name_static(),
                format!(
                    "trying to backward through the graph a second time (node '{}'): its saved tensors were freed \
                     after the first backward. Pass retain_graph=true (JS: {{ retainGraph: true }}) to the first backward or grad call.",
                    self.name()
                ),
            ));
        }
        st.tensors.iter().enumerate().map(|(i, s)| s.unpack(self, i)).collect()
    }

    pub(crate) fn release(&self) {
        let mut st = self.saved_state();
        st.tensors.clear();
        st.released = true;
    }

    /// Moves out every strong reference this node holds to other nodes (its
    /// input edges and its saved tensors' edges), for the iterative drop.
    fn take_edges(&mut self, out: &mut Vec<Arc<Node>>) {
        out.extend(self.next.drain(..).flatten().map(|e| e.node));
        let st = self.saved.get_mut().unwrap_or_else(|e| e.into_inner());
        out.extend(st.tensors.drain(..).filter_map(|s| match s.edge {
            SavedEdge::Strong(e) => Some(e.node),
            _ => None,
        }));
    }
}

// Note (iterative drop): the default drop of a node drops its edges, which
// drop their nodes, and so on: one stack frame per node of a chain, so
// releasing a 10,000-op graph overflows small stacks (threads, wasm). Instead
// a node hands its edges to a worklist and frees each node it held the last
// reference to after moving that node's own edges onto the list.
impl Drop for Node {
    fn drop(&mut self) {
        let mut stack = Vec::new();
        self.take_edges(&mut stack);
        while let Some(n) = stack.pop() {
            if let Some(mut inner) = Arc::into_inner(n) {
                inner.take_edges(&mut stack);
            }
        }
    }
}

/// What a backward rule sees: the attributes, saved tensors and input metadata.
pub struct BackwardCtx<'a> {
    pub(crate) node: &'a Node,
    pub(crate) saved: Vec<Tensor>,
    pub(crate) attrs: &'a Attrs,
}

impl<'a> BackwardCtx<'a> {
    /// Saved tensor `i`, in the order the op saved them (the output, if saved, is last).
    pub fn saved(&self, i: usize) -> &Tensor {
        &self.saved[i]
    }
    pub fn attrs(&self) -> &Attrs {
        self.attrs
    }
    pub fn input_shape(&self, i: usize) -> &[usize] {
        &self.node.inputs[i].shape
    }
    pub fn input_dtype(&self, i: usize) -> DType {
        self.node.inputs[i].dtype
    }
    pub fn input_device(&self, i: usize) -> &Device {
        &self.node.inputs[i].device
    }
    pub fn output_shape(&self, i: usize) -> &[usize] {
        &self.node.outputs[i].shape
    }
    /// Whether input `i` needs a gradient (rules may skip the work otherwise).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.node.next.get(i).map(|e| e.is_some()).unwrap_or(false)
    }
}
