//! Recognising skiff's own handles among JS values.
//!
//! The wasm-bindgen classes that JS passes back as arguments (`Tensor`,
//! `Module`, `Optimizer`) expose a registry id through a getter. A value is
//! taken for a handle only when its prototype is the class's own prototype,
//! and its id is read through that prototype's getter: a plain object such
//! as `{ _skiffId: 3 }`, or a real handle with a shadowing own property, is
//! never mistaken for tensor 3.
//!
//! The prototype is found once per class, from an instance made for the
//! purpose (wasm-bindgen gives Rust no other way to reach its JS classes).
//!
//! The getter is called only when the object's wasm-bindgen pointer
//! (`__wbg_ptr`) is set: on a freed object (pointer 0) or a bare
//! `Object.create(Tensor.prototype)` the generated code would throw from
//! inside wasm, and a JS exception unwinding through wasm frames leaks
//! their shadow-stack space (a few thousand such calls corrupt the
//! instance). Out of reach of any check here: an object forging a nonzero
//! `__wbg_ptr`, which every generated method trusts.

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

/// The field wasm-bindgen's objects keep their Rust pointer in (0 once freed).
/// An internal name of wasm-bindgen (the version is pinned by build-wasm.sh).
const WBG_PTR: &str = "__wbg_ptr";

/// What a JS value is, as an argument that should be a handle of a class.
pub enum Found {
    /// A live handle (its registry id; the entry may still be gone).
    Id(u32),
    /// An instance whose wasm-bindgen object was freed (`free()`,
    /// `[Symbol.dispose]()`): its getter throws.
    Freed,
    /// Anything else.
    Other,
}

/// One exported class: its prototype and the getter of its id property.
pub struct Class {
    proto: JsValue,
    id: Option<Function>,
}

impl Class {
    /// The class of `instance`, whose id getter is `property`.
    pub fn of(instance: &JsValue, property: &str) -> Class {
        // (undefined when no instance could be made: then nothing is one of the class.)
        let proto = Reflect::get_prototype_of(instance).map_or(JsValue::UNDEFINED, JsValue::from);
        let getter = proto
            .dyn_ref::<Object>()
            .map(|p| Object::get_own_property_descriptor(p, &JsValue::from_str(property)))
            .and_then(|d| Reflect::get(&d, &JsValue::from_str("get")).ok())
            .and_then(|g| g.dyn_into::<Function>().ok());
        Class { proto, id: getter }
    }

    /// Whether `v` is an instance of this class (its prototype is the class's).
    pub fn is_instance(&self, v: &JsValue) -> bool {
        // Reflect's form catches (a Proxy's trap may throw): no JS exception crosses wasm.
        v.is_object() && Reflect::get_prototype_of(v).is_ok_and(|p| JsValue::from(p) == self.proto)
    }

    /// What `v` is: a handle of this class (its id), a freed one, or other.
    pub fn find(&self, v: &JsValue) -> Found {
        if !self.is_instance(v) {
            return Found::Other;
        }
        let Some(getter) = &self.id else { return Found::Other };
        match Reflect::get(v, &super::args::js_key(WBG_PTR)).ok().and_then(|p| p.as_f64()) {
            Some(0.0) => return Found::Freed,
            Some(p) if p > 0.0 => {}
            _ => return Found::Other,
        }
        match getter.call0(v) {
            Ok(id) => match id.as_f64() {
                Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Found::Id(n as u32),
                _ => Found::Other,
            },
            Err(_) => Found::Freed,
        }
    }
}
