//! Where live storages came from, for the leak report (`skiff::memory`, JS
//! `memory({ detailed: true })`). Off by default: while tracking, each new
//! storage keeps its origin (the op whose kernel made it and the first
//! caller outside skiff, found from a backtrace natively or from the JS
//! stack in the browser) and a weak entry in a list the report walks.
//! Storages made before tracking began have no origin and are not listed.

use super::{Storage, StorageInner};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, Weak};

static TRACKING: AtomicBool = AtomicBool::new(false);
static LIVE: Mutex<Vec<Weak<StorageInner>>> = Mutex::new(Vec::new());
/// How a site is found: set by the JS bindings (the JS stack); natively a backtrace.
static LOCATOR: OnceLock<fn() -> Vec<String>> = OnceLock::new();

thread_local! {
    /// The op of the kernel call that just returned on this thread: the
    /// origin of the storage made next (taken by it).
    static LAST_OP: Cell<&'static str> = const { Cell::new("") };
}

/// Where a storage came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The op whose kernel made it ("from data" for tensors made from host values).
    pub op: &'static str,
    /// The callers outside skiff, innermost first ("file:line:column"), at
    /// most `FRAMES`; one entry saying why when there are none.
    pub stack: Vec<String>,
}

/// Callers kept per origin: the line that made a tensor and a few above it
/// (a helper called from many places is told apart by its caller).
pub const FRAMES: usize = 4;

/// Turns origin tracking on or off.
pub fn set_tracking(on: bool) {
    TRACKING.store(on, Ordering::Release);
    super::events::watch(super::events::TRACKING, on);
}

#[inline]
pub fn tracking() -> bool {
    TRACKING.load(Ordering::Relaxed)
}

/// Installs how sites are found (the JS bindings: from `new Error().stack`).
pub fn set_locator(f: fn() -> Vec<String>) {
    let _ = LOCATOR.set(f);
}

/// Notes that a kernel call of `op` returned (its result is the next storage made).
#[inline]
pub fn note_op(op: &'static str) {
    if tracking() {
        LAST_OP.with(|l| l.set(op));
    }
}

/// The origin of a storage being made now, when tracking.
#[inline]
pub(super) fn origin() -> Option<Box<Origin>> {
    if !tracking() {
        return None;
    }
    make_origin()
}

#[cold]
fn make_origin() -> Option<Box<Origin>> {
    let op = LAST_OP.with(|l| l.replace(""));
    let mut stack = match LOCATOR.get() {
        Some(f) => f(),
        None => native_stack(),
    };
    if stack.is_empty() {
        stack.push("unknown (no caller outside skiff in the stack: line tables or a stack trace limit?)".into());
    }
    stack.truncate(FRAMES);
    Some(Box::new(Origin { op: if op.is_empty() { "from data" } else { op }, stack }))
}

/// Lists a storage that has an origin.
#[cold]
pub(super) fn register(s: &Storage) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    // Forget the dropped ones now and then, so the list stays the size of what lives.
    if live.len() >= 1024 && live.len().is_power_of_two() {
        live.retain(|w| w.strong_count() > 0);
    }
    live.push(std::sync::Arc::downgrade(s));
}

/// Every live storage that has an origin.
pub fn live() -> Vec<Storage> {
    let mut list = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|w| w.strong_count() > 0);
    list.iter().filter_map(Weak::upgrade).collect()
}

/// The frames of a backtrace outside skiff, the standard library and other
/// crates: "file:line:column" (needs line tables: the dev profile has
/// them). A frame is skiff's by its symbol (`skiff::...`) or its file.
#[cfg(not(target_arch = "wasm32"))]
fn native_stack() -> Vec<String> {
    const THEIRS: [&str; 8] = ["skiff::", "<skiff::", "std::", "<std::", "core::", "<core::", "alloc::", "<alloc::"];
    // skiff's files as this build names them (relative to the workspace
    // that built it, or absolute): inlined frames have no crate in their symbol.
    let own = format!("{}src/", file!().strip_suffix("src/backend/census.rs").unwrap_or(""));
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let mut symbol = "";
    let mut frames = Vec::new();
    for line in trace.lines().map(str::trim) {
        match line.strip_prefix("at ") {
            None => symbol = line.split_once(": ").map_or("", |(_, s)| s),
            Some(at) => {
                let at = at.strip_prefix("./").unwrap_or(at);
                let theirs = THEIRS.iter().any(|p| symbol.starts_with(p))
                    || at.starts_with(&own)
                    || at.starts_with("/rustc/")
                    || at.contains("/.cargo/registry/");
                if !theirs {
                    frames.push(at.to_string());
                    if frames.len() == FRAMES {
                        break;
                    }
                }
            }
        }
    }
    frames
}

#[cfg(target_arch = "wasm32")]
fn native_stack() -> Vec<String> {
    Vec::new()
}
