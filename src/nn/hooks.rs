//! Forward pre- and post-hooks (PyTorch's `register_forward_pre_hook` /
//! `register_forward_hook`), held by every layer's `Core`.

use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex, Weak};

/// Runs before a layer's forward with its input; `Some(t)` replaces the input.
pub type PreHook = Box<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// Runs after a layer's forward with (input, output); `Some(t)` replaces the output.
pub type PostHook = Box<dyn Fn(&Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;

#[derive(Default)]
struct HookLists {
    next_id: u64,
    pre: Vec<(u64, Arc<PreHook>)>,
    post: Vec<(u64, Arc<PostHook>)>,
}

/// A layer's hooks, run in registration order.
#[derive(Default)]
pub struct Hooks(Arc<Mutex<HookLists>>);

/// Removes its hook when `remove` is called (dropping the handle keeps the hook).
pub struct HookHandle {
    lists: Weak<Mutex<HookLists>>,
    id: u64,
}

impl HookHandle {
    /// Removes the hook; a no-op if it (or its layer) is already gone.
    pub fn remove(self) {
        if let Some(l) = self.lists.upgrade() {
            let mut l = l.lock().unwrap_or_else(|e| e.into_inner());
            l.pre.retain(|(i, _)| *i != self.id);
            l.post.retain(|(i, _)| *i != self.id);
        }
    }
}

impl Hooks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HookLists> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn handle(&self, id: u64) -> HookHandle {
        HookHandle { lists: Arc::downgrade(&self.0), id }
    }
    pub fn add_pre(&self, hook: PreHook) -> HookHandle {
        let mut l = self.lock();
        let id = l.next_id;
        l.next_id += 1;
        l.pre.push((id, Arc::new(hook)));
        drop(l);
        self.handle(id)
    }
    pub fn add_post(&self, hook: PostHook) -> HookHandle {
        let mut l = self.lock();
        let id = l.next_id;
        l.next_id += 1;
        l.post.push((id, Arc::new(hook)));
        drop(l);
        self.handle(id)
    }
    /// Number of registered (pre, post) hooks.
    pub fn len(&self) -> (usize, usize) {
        let l = self.lock();
        (l.pre.len(), l.post.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0)
    }

    /// Runs the pre-hooks on `x`. The lists are cloned first, so a hook may
    /// register or remove hooks without deadlocking.
    pub fn run_pre(&self, x: &Tensor) -> Result<Tensor> {
        let hooks: Vec<Arc<PreHook>> = self.lock().pre.iter().map(|(_, h)| h.clone()).collect();
        let mut x = x.clone();
        for h in hooks {
            if let Some(r) = h(&x)? {
                x = r;
            }
        }
        Ok(x)
    }
    /// Runs the post-hooks on (input, output).
    pub fn run_post(&self, x: &Tensor, y: Tensor) -> Result<Tensor> {
        let hooks: Vec<Arc<PostHook>> = self.lock().post.iter().map(|(_, h)| h.clone()).collect();
        let mut y = y;
        for h in hooks {
            if let Some(r) = h(x, &y)? {
                y = r;
            }
        }
        Ok(y)
    }
}
