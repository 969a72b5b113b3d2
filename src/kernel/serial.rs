//! Kernel specs as data on disk (`program`'s serialised form): serde for
//! the spec types, with the two things a spec holds that are not plain data
//! written by name. An elementwise row (a `&'static` table entry with its
//! cpu kernels) is written as its op's name and found again in the table
//! that `with_rows` installs for the reading; a `&'static str` (the op an
//! index check names) is interned on reading (`intern`). A scalar is written as a JSON
//! number, or "inf", "-inf", "nan" (JSON has no such numbers).

use super::{BinaryKernel, CompareKernel, Scalar, UnaryKernel};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::sync::Mutex;

/// Every elementwise row a program may name (the registry's: `ops::row_table`).
#[derive(Clone, Default)]
pub struct RowTable {
    pub unary: Vec<&'static UnaryKernel>,
    pub binary: Vec<&'static BinaryKernel>,
    pub compare: Vec<&'static CompareKernel>,
}

thread_local! {
    static ROWS: RefCell<Option<RowTable>> = const { RefCell::new(None) };
}

/// Runs `f` (a deserialisation of specs) with `rows` as the table rows are found in.
pub fn with_rows<R>(rows: RowTable, f: impl FnOnce() -> R) -> R {
    let before = ROWS.with(|r| r.replace(Some(rows)));
    let out = f();
    ROWS.with(|r| *r.borrow_mut() = before);
    out
}

/// A table row, found by name.
pub(crate) trait Row: 'static + Sized {
    const KIND: &'static str;
    fn name(&self) -> &'static str;
    fn rows(table: &RowTable) -> &[&'static Self];
}

macro_rules! row {
    ($ty:ty, $kind:literal, $field:ident) => {
        impl Row for $ty {
            const KIND: &'static str = $kind;
            fn name(&self) -> &'static str {
                self.name
            }
            fn rows(table: &RowTable) -> &[&'static Self] {
                &table.$field
            }
        }
    };
}
row!(UnaryKernel, "unary", unary);
row!(BinaryKernel, "binary", binary);
row!(CompareKernel, "comparison", compare);

/// serde `with` module for `&'static Row` fields.
pub(crate) mod by_name {
    use super::*;

    pub fn serialize<R: Row, S: Serializer>(row: &&'static R, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(row.name())
    }

    pub fn deserialize<'de, R: Row, D: Deserializer<'de>>(d: D) -> Result<&'static R, D::Error> {
        let name = String::deserialize(d)?;
        ROWS.with(|t| {
            let t = t.borrow();
            let table = t.as_ref().ok_or_else(|| D::Error::custom("no row table to read kernel rows from"))?;
            R::rows(table)
                .iter()
                .copied()
                .find(|r| r.name() == name)
                .ok_or_else(|| D::Error::custom(format!("unknown {} kernel {name:?}", R::KIND)))
        })
    }
}

/// The same `&'static str` for equal strings read from files (a bounded
/// set: op names).
pub fn intern(s: &str) -> &'static str {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = seen.iter().find(|&&k| k == s) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.push(leaked);
    leaked
}

impl Serialize for Scalar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() {
            s.serialize_f64(v)
        } else if v.is_nan() {
            s.serialize_str("nan")
        } else {
            s.serialize_str(if v > 0.0 { "inf" } else { "-inf" })
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Number {
            Finite(f64),
            Named(String),
        }
        Ok(Scalar(match Number::deserialize(d)? {
            Number::Finite(v) => v,
            Number::Named(n) => match n.as_str() {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                other => return Err(D::Error::custom(format!("{other:?} is not a number"))),
            },
        }))
    }
}

/// The unary row named `name` in the table `with_rows` installed for this
/// thread, if any: a pass that writes a kernel of its own (`program`'s
/// rewrites) finds its row here, without knowing the registry.
pub fn unary_row(name: &str) -> Option<&'static UnaryKernel> {
    ROWS.with(|t| t.borrow().as_ref().and_then(|t| t.unary.iter().copied().find(|r| r.name == name)))
}
