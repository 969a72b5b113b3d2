//! The JS surface the registry produces. Every entry with a `forward`
//! becomes a JS `Tensor` method named by its signature (camelCase), or a
//! module function when its signature has no `self` (`where`, `cat`);
//! entries whose signatures share a name are overloads of one method (`add`
//! takes a tensor, `add_scalar` a number: `x.add(y)`, `x.add(2)`). The wasm
//! bindings dispatch on this table (src/web/ops/call.rs) and the package's
//! TypeScript declarations are rendered from it (`ts_declarations` and
//! `ts_functions`, written into web/index.d.ts between markers and kept
//! current by tests/core/js_surface.rs).

use super::signature::{camel_case, Param, Signature, Type};
use super::{registry, OpDef};

/// One parameter of a JS method: the union of its overloads' types.
#[derive(Clone, Debug)]
pub struct MethodParam {
    pub name: &'static str,
    /// The JS name (camelCase): an argument's, or an option's key.
    pub js: String,
    pub types: Vec<Type>,
    /// Passed in the trailing options object.
    pub keyword: bool,
    /// Some overload takes the call without it (it has a default there).
    pub optional: bool,
}

/// One JS method (or module function) and the registry entries behind it.
pub struct Method {
    pub js: String,
    /// A `Tensor` method (`self` first); else a module function.
    pub method: bool,
    pub overloads: Vec<(&'static OpDef, Signature)>,
    /// Positional parameters in order, then the keyword ones.
    pub params: Vec<MethodParam>,
}

impl Method {
    /// How many positional arguments the method takes.
    pub fn positional(&self) -> usize {
        self.params.iter().filter(|p| !p.keyword).count()
    }
    /// Positional arguments plus the options object, if it has one.
    pub fn arity(&self) -> usize {
        self.positional() + usize::from(self.params.iter().any(|p| p.keyword))
    }
    /// Returns PyTorch's (values, indices) pair: `[values, indices]` in JS
    /// (`methods` checks that every overload agrees).
    pub fn pair(&self) -> bool {
        self.overloads.iter().any(|(def, _)| matches!(def.forward, Some(super::Forward::Pair(_))))
    }
}

/// The JS methods and module functions, in registry order; an error says
/// which overloads disagree.
pub fn methods() -> Result<Vec<Method>, String> {
    let mut out: Vec<Method> = Vec::new();
    for def in registry() {
        if def.forward.is_none() {
            continue;
        }
        let sig = Signature::parse(def.signature)?;
        let pair = matches!(def.forward, Some(super::Forward::Pair(_)));
        if pair != (sig.returns == [Type::ValuesIndices]) || (pair && !sig.method) {
            return Err(format!(
                "{}: a (values, indices) pair is a method whose forward is Forward::Pair and whose signature returns (Tensor, Tensor<int32>)",
                def.name
            ));
        }
        let js = sig.js_name();
        match out.iter_mut().find(|m| m.js == js && m.method == sig.method) {
            Some(m) => merge(m, def, sig)?,
            None => {
                let params = sig.params.iter().map(|p| method_param(p, p.default.is_some())).collect();
                out.push(Method { js, method: sig.method, overloads: vec![(def, sig)], params });
            }
        }
    }
    // The JS side calls into wasm with a fixed arity (web/api.js's CALLERS and
    // FUNCTION_CALLERS, src/web/ops/call.rs's callMethodN/callFunctionN): an
    // argument past MAX_JS_ARITY would be dropped silently.
    if let Some(m) = out.iter().find(|m| m.arity() > MAX_JS_ARITY) {
        return Err(format!(
            "{}: {} JS arguments (positional plus options) where at most {MAX_JS_ARITY} are callable: make the later ones keyword-only",
            m.js,
            m.arity()
        ));
    }
    Ok(out)
}

/// The most arguments a generated JS method or function takes.
pub const MAX_JS_ARITY: usize = 5;

fn method_param(p: &Param, optional: bool) -> MethodParam {
    MethodParam { name: p.name, js: camel_case(p.name), types: p.types.clone(), keyword: p.keyword, optional }
}

/// Adds an overload: positional parameters must line up by name.
fn merge(m: &mut Method, def: &'static OpDef, sig: Signature) -> Result<(), String> {
    let old_pos: Vec<&str> = m.params.iter().filter(|p| !p.keyword).map(|p| p.name).collect();
    let new_pos: Vec<&str> = sig.params.iter().filter(|p| !p.keyword).map(|p| p.name).collect();
    let common = old_pos.len().min(new_pos.len());
    if old_pos[..common] != new_pos[..common] {
        return Err(format!("{}: its positional parameters {new_pos:?} do not line up with {old_pos:?}", def.name));
    }
    for q in m.params.iter_mut() {
        if !sig.params.iter().any(|p| p.name == q.name) {
            q.optional = true;
        }
    }
    for p in &sig.params {
        match m.params.iter_mut().find(|q| q.name == p.name) {
            Some(q) => {
                if q.keyword != p.keyword {
                    return Err(format!("{}: {} is keyword-only in one overload only", def.name, p.name));
                }
                q.optional |= p.default.is_some();
                for t in &p.types {
                    if !q.types.contains(t) {
                        q.types.push(t.clone());
                    }
                }
            }
            None => {
                let at = if p.keyword { m.params.len() } else { m.params.iter().filter(|q| !q.keyword).count() };
                m.params.insert(at, method_param(p, true));
            }
        }
    }
    m.overloads.push((def, sig));
    Ok(())
}

/// Methods whose TypeScript declaration says more than a signature can
/// (web/index.d.ts declares them by hand): `toDtype<T>` returns `Tensor<T>`,
/// `embedding<W>` the weight's dtype.
pub const HAND_TYPED: &[&str] = &["toDtype", "embedding"];

fn ts_type(t: &Type) -> String {
    match t {
        Type::Tensor => "Tensor<D>".into(),
        Type::TensorAny => "Tensor".into(),
        Type::TensorOf(d) => format!("Tensor<'{d}'>"),
        Type::Tensors => "Tensor[]".into(),
        Type::Scalar | Type::Float | Type::Int => "number".into(),
        Type::Ints | Type::Sizes => "number[]".into(),
        Type::Shape => "number | number[]".into(),
        Type::IntPair => "[number, number]".into(),
        Type::Bool => "boolean".into(),
        Type::None => "null".into(),
        Type::DType => "DType".into(),
        Type::Device => "DeviceName".into(),
        Type::Literal(s) => format!("'{s}'"),
        Type::Str => "string".into(),
        Type::BoolLiteral(b) => b.to_string(),
        Type::IntLiteral(n) => n.to_string(),
        Type::ValuesIndices => "[Tensor<D>, Tensor<'int32'>]".into(),
    }
}

fn ts_union(types: &[Type]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for t in types {
        for part in ts_type(t).split(" | ") {
            if !parts.iter().any(|p| p == part) {
                parts.push(part.to_string());
            }
        }
    }
    parts.join(" | ")
}

/// One method's declaration, its overloads merged (a parameter takes the
/// union of their types, and is optional where any of them can do without):
/// `name(a: T, b?: U, options?: { k?: V }): R;`.
fn ts_method(m: &Method) -> Result<String, String> {
    let returns = &m.overloads[0].1.returns;
    if let Some((def, _)) = m.overloads.iter().find(|(_, s)| &s.returns != returns) {
        return Err(format!("{}: the overloads of {} return different types", def.name, m.js));
    }
    let mut params: Vec<String> = Vec::new();
    for p in m.params.iter().filter(|p| !p.keyword) {
        params.push(format!("{}{}: {}", p.js, if p.optional { "?" } else { "" }, ts_union(&p.types)));
    }
    let keywords: Vec<&MethodParam> = m.params.iter().filter(|p| p.keyword).collect();
    if !keywords.is_empty() {
        let fields: Vec<String> = keywords
            .iter()
            .map(|p| format!("{}{}: {}", p.js, if p.optional { "?" } else { "" }, ts_union(&p.types)))
            .collect();
        let q = if keywords.iter().all(|p| p.optional) { "?" } else { "" };
        params.push(format!("options{q}: {{ {} }}", fields.join("; ")));
    }
    Ok(format!("{}({}): {};", m.js, params.join(", "), ts_union(returns)))
}

/// The doc lines of a method's overloads, each once.
fn docs(m: &Method) -> String {
    let mut docs: Vec<&str> = Vec::new();
    for (def, _) in &m.overloads {
        if !docs.contains(&def.doc) {
            docs.push(def.doc);
        }
    }
    docs.join(" ")
}

/// The TypeScript declarations of every generated method with its doc
/// lines, as members of `interface Tensor<D>`.
pub fn ts_declarations() -> Result<String, String> {
    let mut out = String::new();
    for m in methods()? {
        if !m.method || HAND_TYPED.contains(&m.js.as_str()) {
            continue;
        }
        out += &format!("    /** {} */\n    {}\n", docs(&m), ts_method(&m)?);
    }
    Ok(out)
}

/// The TypeScript declarations of the generated module functions: generic
/// in the dtype `D` their `Tensor` parameters share
/// (`export function cat<D extends DType = DType>(tensors: Tensor<D>[], dim?: number): Tensor<D>;`).
pub fn ts_functions() -> Result<String, String> {
    let mut out = String::new();
    for m in methods()? {
        if m.method {
            continue;
        }
        let decl = ts_method(&m)?.replacen('(', "<D extends DType = DType>(", 1).replace("Tensor[]", "Tensor<D>[]");
        out += &format!("/** {} */\nexport function {decl}\n", docs(&m));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(js: &str) -> Method {
        methods().unwrap().into_iter().find(|m| m.js == js).unwrap_or_else(|| panic!("no method {js}"))
    }

    #[test]
    fn overloads_merge_into_one_method() {
        let add = method("add");
        // Registry order: the unary table (add_scalar) comes before the binary one.
        assert_eq!(add.overloads.iter().map(|(d, _)| d.name).collect::<Vec<_>>(), ["add_scalar", "add"]);
        assert_eq!(add.params.len(), 1);
        assert_eq!(add.params[0].types, vec![Type::Scalar, Type::Tensor]);
        assert!(!add.params[0].optional, "add needs its operand");
        let gelu = method("gelu");
        assert_eq!(gelu.arity(), 1, "only the options object");
        assert!(gelu.params[0].optional && gelu.params[0].keyword, "gelu() is gelu_erf");
        assert_eq!(method("indexAdd").arity(), 4);
    }

    #[test]
    fn declarations_follow_the_signatures() {
        let d = ts_declarations().unwrap();
        for line in [
            "sum(axes?: number | number[] | null, options?: { keepdim?: boolean }): Tensor<D>;",
            "add(other: number | Tensor<D>): Tensor<D>;",
            "lt(other: Tensor<D> | number): Tensor<'bool'>;",
            "argmax(axis?: number | null, options?: { keepdim?: boolean }): Tensor<'int32'>;",
            "gelu(options?: { approximate?: 'tanh' | 'none' }): Tensor<D>;",
            "crossEntropy(target: Tensor<'int32'>, options?: { reduction?: 'mean' | 'sum' | 'none'; labelSmoothing?: number }): Tensor<D>;",
        ] {
            assert!(d.contains(line), "missing {line}\n{d}");
        }
        assert!(!d.contains("toDtype("), "toDtype is typed by hand");
        assert!(!d.contains("cat("), "cat is a module function");
        let f = ts_functions().unwrap();
        for line in [
            "export function cat<D extends DType = DType>(tensors: Tensor<D>[], dim?: number): Tensor<D>;",
            "export function where<D extends DType = DType>(condition: Tensor<'bool'>, input: Tensor<D> | number, other: Tensor<D> | number): Tensor<D>;",
            "export function einsum<D extends DType = DType>(equation: string, operands: Tensor<D>[]): Tensor<D>;",
        ] {
            assert!(f.contains(line), "missing {line}\n{f}");
        }
    }
}
