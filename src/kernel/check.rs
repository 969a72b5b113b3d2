//! The range check of an index operand as data: which op asked, the bound,
//! and what the values index (for the error). The cpu backend checks at
//! once; a GPU records the check with the op's kernels and reports at the
//! next readback (`backend/gpu/checks.rs`), so nothing is read back for it.

use crate::error::Error;

/// What an out-of-range value does to the result of a device-checked op
/// (said in the error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// gather, index_select, embedding: those output elements are 0.
    ReadsZero,
    /// scatter_add, index_add: those sources are not added.
    AddsNothing,
}

/// What a check's values index, for its error message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckWhat {
    /// Positions along `axis` of a data operand of `data_shape`.
    Index { axis: usize, data_shape: Vec<usize>, index_shape: Vec<usize>, effect: Effect },
    /// Class labels against `[N, C]` scores (cross_entropy, nll_loss).
    Label { scores_shape: Vec<usize> },
    /// Class indices of `index_shape` encoded one-hot over `dim` classes.
    Class { index_shape: Vec<usize> },
}

/// One range check: every i32 value of the index must lie in `0..dim`;
/// `op` is the op the caller called (a failure names it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct IndexCheck {
    pub op: &'static str,
    pub dim: usize,
    pub what: CheckWhat,
}

/// `IndexCheck` as read from a file (its op name interned on conversion).
#[derive(serde::Deserialize)]
struct OwnedCheck {
    op: String,
    dim: usize,
    what: CheckWhat,
}

impl<'de> serde::Deserialize<'de> for IndexCheck {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IndexCheck, D::Error> {
        let c = OwnedCheck::deserialize(d)?;
        Ok(IndexCheck { op: super::intern(&c.op), dim: c.dim, what: c.what })
    }
}

impl IndexCheck {
    /// The error for `value`, found at `position` (row-major) of the index
    /// when the values were read on the host.
    pub fn host_error(&self, value: i32, position: usize) -> Error {
        let dim = self.dim;
        let msg = match &self.what {
            CheckWhat::Index { axis, data_shape, index_shape, .. } => format!(
                "index {value} is out of range for axis {axis} of size {dim} (input shape {data_shape:?}, index shape {index_shape:?})"
            ),
            CheckWhat::Label { scores_shape } => format!(
                "label {value} at position {position} is out of range [0, {dim}) for scores of shape {scores_shape:?}"
            ),
            CheckWhat::Class { index_shape } => format!(
                "class index {value} at position {position} is out of range [0, {dim}) (num_classes {dim}, index shape {index_shape:?})"
            ),
        };
        Error::value(self.op, msg)
    }

    /// The error for a check that failed on a device: `value` is the
    /// reported out-of-range value, `count` how many were out of range.
    pub fn device_error(&self, value: i64, count: u64) -> Error {
        let dim = self.dim;
        let msg = match &self.what {
            CheckWhat::Index { axis, data_shape, index_shape, effect } => {
                let effect = match effect {
                    Effect::ReadsZero => "the result holds 0 where they were used",
                    Effect::AddsNothing => "the result leaves out the sources aimed at them",
                };
                format!(
                    "index {value} is out of range for axis {axis} of size {dim} (input shape {data_shape:?}, \
                     index shape {index_shape:?}); found on the device by the range check that ran with this \
                     call: {count} index value(s) out of range, and {effect}"
                )
            }
            CheckWhat::Label { scores_shape } => format!(
                "label {value} is out of range [0, {dim}) for scores of shape {scores_shape:?}; found on the \
                 device by the range check that ran with this call: {count} label(s) out of range, and the \
                 loss reads 0 as their log-probability"
            ),
            CheckWhat::Class { index_shape } => format!(
                "class index {value} is out of range [0, {dim}) (num_classes {dim}, index shape {index_shape:?}); \
                 found on the device by the range check that ran with this call: {count} index value(s) out of \
                 range, and their rows of the result are all 0"
            ),
        };
        Error::value(self.op, msg)
    }

    /// Ok if every value (row-major) is in range; else the host error for
    /// the first that is not.
    pub fn verify(&self, values: &[i32]) -> Result<(), Error> {
        match values.iter().position(|&v| v < 0 || v as usize >= self.dim) {
            Some(position) => Err(self.host_error(values[position], position)),
            None => Ok(()),
        }
    }
}
