//! `einsum`: Einstein summation over one or more operands, as PyTorch's
//! `torch.einsum`. A composite: the equation is parsed on the host into
//! labels, then lowered to ops that already have backward rules (diagonals
//! by reshape and strided slice, sums, permutes, reshapes, broadcast `mul`
//! and batched `matmul`), so every derivative order, both backends and
//! capture come from those. Operands are contracted pairwise, left to right.
//!
//! Labels are the letters `a-z` and `A-Z`; `...` stands for the axes no
//! letter names (broadcast between operands, right-aligned, as NumPy). A
//! letter repeated in one operand takes its diagonal. Without `->` the output
//! is the broadcast axes, then the letters used exactly once in ASCII order
//! (uppercase first), as PyTorch. Letters shared by operands must have equal
//! sizes; only the `...` axes broadcast.

#[cfg(feature = "testing")]
use super::reference as r;
use super::{same_device, same_dtype, Forward, OpDef, OpKind};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::error::{Error, Result};
use crate::shape::check_size;
use crate::tensor::Tensor;

const OP: &str = "einsum";

/// Letters are labels 0..52 (ASCII order); broadcast (`...`) axes follow.
type Label = usize;
const LETTERS: usize = 52;

fn letter_label(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        _ => None,
    }
}

/// One side of the equation's term: its letters and where `...` stands.
struct Term {
    letters: Vec<Label>,
    /// The position of `...` among the letters, if the term has one.
    ellipsis: Option<usize>,
}

fn bad(equation: &str, why: String) -> Error {
    Error::value(OP, format!("equation {equation:?}: {why}"))
}

fn parse_term(equation: &str, text: &str) -> Result<Term> {
    let mut term = Term { letters: Vec::new(), ellipsis: None };
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(dots) = rest.strip_prefix("...") {
            if term.ellipsis.is_some() {
                return Err(bad(equation, format!("term {text:?} has more than one `...`")));
            }
            term.ellipsis = Some(term.letters.len());
            rest = dots;
        } else if let Some(l) = letter_label(c) {
            term.letters.push(l);
            rest = &rest[1..];
        } else {
            let why = if c == '.' { "`.` must come as `...`".to_string() } else { format!("bad character {c:?}") };
            return Err(bad(equation, format!("{why} in term {text:?} (labels are a-z and A-Z)")));
        }
    }
    Ok(term)
}

/// The equation resolved against the operands' shapes: each operand's label
/// per axis, the output's labels, and every label's size.
struct Plan {
    inputs: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: Vec<usize>,
}

fn plan(equation: &str, shapes: &[&[usize]]) -> Result<Plan> {
    let compact: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match compact.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (compact.as_str(), None),
    };
    if rhs.is_some_and(|r| r.contains("->")) {
        return Err(bad(equation, "more than one `->`".into()));
    }
    let terms: Vec<Term> = lhs.split(',').map(|t| parse_term(equation, t)).collect::<Result<_>>()?;
    if terms.len() != shapes.len() {
        return Err(bad(equation, format!("{} terms for {} operands of shapes {shapes:?}", terms.len(), shapes.len())));
    }
    // How many axes `...` stands for in each operand; the broadcast rank is the largest.
    let mut broadcast_ranks = Vec::with_capacity(terms.len());
    for (k, (t, s)) in terms.iter().zip(shapes).enumerate() {
        let named = t.letters.len();
        let fits = if t.ellipsis.is_some() { named <= s.len() } else { named == s.len() };
        if !fits {
            return Err(bad(
                equation,
                format!("operand {k} has shape {:?} ({} dims) but its term names {named} dims", s, s.len()),
            ));
        }
        broadcast_ranks.push(s.len() - named);
    }
    let ellipsis_rank = broadcast_ranks.iter().copied().max().unwrap_or(0);
    let mut sizes: Vec<Option<usize>> = vec![None; LETTERS + ellipsis_rank];
    let mut inputs = Vec::with_capacity(terms.len());
    for (k, (t, s)) in terms.iter().zip(shapes).enumerate() {
        let e = broadcast_ranks[k];
        let at = t.ellipsis.unwrap_or(t.letters.len());
        let labels: Vec<Label> = t.letters[..at]
            .iter()
            .copied()
            .chain((ellipsis_rank - e..ellipsis_rank).map(|j| LETTERS + j))
            .chain(t.letters[at..].iter().copied())
            .collect();
        for (&l, &n) in labels.iter().zip(s.iter()) {
            match sizes[l] {
                None => sizes[l] = Some(n),
                Some(m) if m == n => {}
                // The `...` axes broadcast; a letter's size must agree everywhere.
                Some(m) if l >= LETTERS && (m == 1 || n == 1) => sizes[l] = Some(m.max(n)),
                Some(m) => {
                    let what = if l < LETTERS { format!("letter {:?}", label_char(l)) } else { "a `...` axis".into() };
                    return Err(bad(equation, format!("{what} has sizes {m} and {n} (operand shapes {shapes:?})")));
                }
            }
        }
        inputs.push(labels);
    }
    let count = |l: Label| inputs.iter().flatten().filter(|&&m| m == l).count();
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let t = parse_term(equation, r)?;
            let at = t.ellipsis.unwrap_or(t.letters.len());
            let spread = if t.ellipsis.is_some() { LETTERS..LETTERS + ellipsis_rank } else { 0..0 };
            let out: Vec<Label> =
                t.letters[..at].iter().copied().chain(spread).chain(t.letters[at..].iter().copied()).collect();
            for (i, &l) in out.iter().enumerate() {
                if l < LETTERS && out[..i].contains(&l) {
                    return Err(bad(equation, format!("the output repeats letter {:?}", label_char(l))));
                }
                if l < LETTERS && count(l) == 0 {
                    return Err(bad(equation, format!("output letter {:?} is in no operand", label_char(l))));
                }
            }
            out
        }
        None => (LETTERS..LETTERS + ellipsis_rank).chain((0..LETTERS).filter(|&l| count(l) == 1)).collect(),
    };
    let sizes = sizes.into_iter().map(|s| s.unwrap_or(1)).collect();
    Ok(Plan { inputs, output, sizes })
}

fn label_char(l: Label) -> char {
    if l < 26 {
        (b'A' + l as u8) as char
    } else {
        (b'a' + (l - 26) as u8) as char
    }
}

/// A tensor with one label per axis.
struct Labelled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labelled {
    fn size(&self, l: Label) -> usize {
        self.labels.iter().position(|&m| m == l).map_or(1, |a| self.t.shape()[a])
    }

    /// The diagonal over each letter this operand repeats (`ii->i`): the two
    /// axes moved last, merged, and every (n + 1)-th element taken.
    fn diagonals(mut self) -> Result<Labelled> {
        while let Some((a, b)) = repeated(&self.labels) {
            let n = self.t.shape()[a];
            let others: Vec<usize> = (0..self.labels.len()).filter(|&i| i != a && i != b).collect();
            let perm: Vec<isize> = others.iter().chain([&a, &b]).map(|&i| i as isize).collect();
            let mut shape: Vec<usize> = others.iter().map(|&i| self.t.shape()[i]).collect();
            shape.push(n * n);
            let merged = self.t.permute(&perm)?.reshape_dims(&shape)?;
            self.t = merged.slice(-1, 0, (n * n) as isize, n + 1)?;
            let label = self.labels[a];
            self.labels = others.iter().map(|&i| self.labels[i]).chain([label]).collect();
        }
        Ok(self)
    }

    /// Sums the axes whose labels `keep` rejects.
    fn sum_unless(self, keep: impl Fn(Label) -> bool) -> Result<Labelled> {
        let gone: Vec<isize> = (0..self.labels.len()).filter(|&i| !keep(self.labels[i])).map(|i| i as isize).collect();
        if gone.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|&l| keep(l)).collect();
        Ok(Labelled { t: self.t.sum(&gone, false)?, labels })
    }

    /// The axes of `order` (labels this tensor has, or size-1 axes for those
    /// it lacks), in that order.
    fn arranged(&self, order: &[Label]) -> Result<Tensor> {
        let perm: Vec<isize> =
            order.iter().filter_map(|l| self.labels.iter().position(|m| m == l)).map(|a| a as isize).collect();
        let moved = self.t.permute(&perm)?;
        let shape: Vec<usize> = order.iter().map(|&l| self.size(l)).collect();
        moved.reshape_dims(&shape)
    }
}

/// The first label that appears twice: its two axes.
fn repeated(labels: &[Label]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|a| labels[a + 1..].iter().position(|&l| l == labels[a]).map(|d| (a, a + 1 + d)))
}

/// Contracts two labelled operands, keeping the labels `keep` names: shared
/// kept labels are batch axes, shared others are summed by a batched matmul
/// (a broadcast mul when there are none), the rest stay as rows and columns.
fn contract(a: Labelled, b: Labelled, keep: &[Label]) -> Result<Labelled> {
    let kept = |l: Label| keep.contains(&l);
    // A summed label of size 1 on one side and n on the other (a `...`
    // axis): sum_k a[0] b[k] = a[0] * sum_k b[k], so each side sums it alone.
    let uneven: Vec<Label> =
        a.labels.iter().copied().filter(|&l| b.labels.contains(&l) && a.size(l) != b.size(l)).collect();
    let (la, lb) = (a.labels.clone(), b.labels.clone());
    let a = a.sum_unless(|l| kept(l) || (lb.contains(&l) && !uneven.contains(&l)))?;
    let b = b.sum_unless(|l| kept(l) || (la.contains(&l) && !uneven.contains(&l)))?;
    let batch: Vec<Label> = a.labels.iter().copied().filter(|l| b.labels.contains(l) && kept(*l)).collect();
    let summed: Vec<Label> = a.labels.iter().copied().filter(|l| b.labels.contains(l) && !kept(*l)).collect();
    let left: Vec<Label> = a.labels.iter().copied().filter(|l| !b.labels.contains(l)).collect();
    let right: Vec<Label> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    let labels: Vec<Label> = [&batch[..], &left, &right].concat();
    let out_shape: Vec<usize> = labels.iter().map(|&l| a.size(l).max(b.size(l))).collect();
    check_size(OP, &out_shape)?;
    if summed.is_empty() {
        // An outer product over the batch axes: broadcast, no matmul.
        let t = a.arranged(&labels)?.mul(&b.arranged(&labels)?)?;
        return Ok(Labelled { t, labels });
    }
    let prod = |t: &Labelled, ls: &[Label]| ls.iter().map(|&l| t.size(l)).product::<usize>();
    let grouped = |t: &Labelled, rows: &[Label], cols: &[Label]| -> Result<Tensor> {
        let order = [&batch[..], rows, cols].concat();
        let mut shape: Vec<usize> = batch.iter().map(|&l| t.size(l)).collect();
        shape.extend([prod(t, rows), prod(t, cols)]);
        t.arranged(&order)?.reshape_dims(&shape)
    };
    let product = grouped(&a, &left, &summed)?.matmul(&grouped(&b, &summed, &right)?)?;
    Ok(Labelled { t: product.reshape_dims(&out_shape)?, labels })
}

impl Tensor {
    /// Einstein summation (PyTorch's `torch.einsum`): `equation` names each
    /// operand's axes with letters (`"bij,bjk->bik"`); letters missing from
    /// the output are summed. See the module doc for `...`, repeated
    /// letters and the implicit output.
    pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
        super::as_op(OP, || {
            if operands.is_empty() {
                return Err(bad(equation, "needs at least one operand".into()));
            }
            let refs: Vec<&Tensor> = operands.iter().collect();
            same_device(OP, &refs)?;
            for t in &operands[1..] {
                same_dtype(OP, &operands[0], t)?;
            }
            let shapes: Vec<&[usize]> = operands.iter().map(|t| t.shape()).collect();
            let p = plan(equation, &shapes)?;
            check_size(OP, &p.output.iter().map(|&l| p.sizes[l]).collect::<Vec<_>>())?;
            // A label is needed after operand k if the output or a later operand has it.
            let needed_after =
                |k: usize, l: Label| p.output.contains(&l) || p.inputs[k + 1..].iter().any(|s| s.contains(&l));
            let mut acc: Option<Labelled> = None;
            for (k, (t, labels)) in operands.iter().zip(&p.inputs).enumerate() {
                let x = Labelled { t: t.clone(), labels: labels.clone() }.diagonals()?;
                // Labels only this operand has are summed before any product.
                let x = x.sum_unless(|l| needed_after(k, l) || acc.as_ref().is_some_and(|a| a.labels.contains(&l)))?;
                acc = Some(match acc {
                    None => x,
                    Some(a) => {
                        let keep: Vec<Label> = (0..p.sizes.len()).filter(|&l| needed_after(k, l)).collect();
                        contract(a, x, &keep)?
                    }
                });
            }
            let Some(result) = acc else { unreachable!("einsum has at least one operand") };
            // Every label left is an output label; a `...` axis no operand
            // of this size had is a size-1 axis.
            let out = result.arranged(&p.output)?;
            let shape: Vec<usize> = p.output.iter().map(|&l| p.sizes[l]).collect();
            if out.shape() == shape.as_slice() {
                Ok(out)
            } else {
                out.expand_dims(&shape)
            }
        })
    }
}

static EINSUM: OpDef = OpDef {
    name: "einsum",
    signature: "einsum(equation: str, operands: Tensor[]) -> Tensor",
    doc: "Einstein summation over the operands (`'bij,bjk->bik'`; `...` broadcasts, a repeated letter takes a diagonal, no `->` sums letters used twice).",
    forward: Some(Forward::One(|a| Tensor::einsum(a.str("equation")?, a.tensors("operands")?))),
    kind: OpKind::Composite,
    backward: None,
    second_order: true,
    #[cfg(feature = "testing")]
    cases: || {
        let u = |s: &[usize]| Input::Uniform(s.to_vec(), -1.0, 1.0);
        vec![
            Case::new("einsum matrix product", vec![u(&[3, 4]), u(&[4, 5])], |x| Tensor::einsum("ij,jk->ik", x))
                .also(Sample::Empty, &[&[3, 0], &[0, 5]])
                .reference(|h| r::einsum("ij,jk->ik", h)),
            Case::new("einsum batched product", vec![u(&[2, 3, 4]), u(&[2, 4, 2])], |x| {
                Tensor::einsum("bij,bjk->bik", x)
            })
            .reference(|h| r::einsum("bij,bjk->bik", h)),
            Case::new("einsum attention scores", vec![u(&[2, 2, 3, 4]), u(&[2, 2, 5, 4])], |x| {
                Tensor::einsum("bhqd,bhkd->bhqk", x)
            })
            .reference(|h| r::einsum("bhqd,bhkd->bhqk", h)),
            Case::new("einsum dot product", vec![u(&[5]), u(&[5])], |x| Tensor::einsum("i,i->", x))
                .also(Sample::Empty, &[&[0], &[0]])
                .reference(|h| r::einsum("i,i->", h)),
            Case::new("einsum transpose", vec![u(&[3, 4])], |x| Tensor::einsum("ij->ji", x))
                .reference(|h| r::einsum("ij->ji", h)),
            Case::new("einsum diagonal and trace", vec![u(&[4, 4]), u(&[3, 3])], |x| {
                Tensor::einsum("ii->i", &x[..1])?.sum_all()?.add(&Tensor::einsum("jj", &x[1..])?)
            })
            .reference(|h| r::zip(&r::sum(&r::einsum("ii->i", &h[..1]), &[], false), &r::einsum("jj", &h[1..]), r::Kind::Float, |a, b| a + b)),
            Case::new("einsum implicit output", vec![u(&[3, 4]), u(&[4, 2])], |x| Tensor::einsum("ij,jk", x))
                .reference(|h| r::einsum("ij,jk", h)),
            Case::new("einsum sums a letter of one operand", vec![u(&[3, 4, 2]), u(&[2, 5])], |x| {
                Tensor::einsum("ijk,kl->il", x)
            })
            .reference(|h| r::einsum("ijk,kl->il", h)),
            Case::new("einsum outer product", vec![u(&[3]), u(&[4])], |x| Tensor::einsum("i,j->ij", x))
                .reference(|h| r::einsum("i,j->ij", h)),
            Case::new("einsum broadcast ellipsis", vec![u(&[2, 1, 3, 4]), u(&[5, 4, 2])], |x| {
                Tensor::einsum("...ij,...jk->...ik", x)
            })
            .reference(|h| r::einsum("...ij,...jk->...ik", h)),
            // The `...` axes are summed when the output leaves them out; the
            // size-1 axis of the first operand meets size 4 in the second.
            Case::new("einsum sums broadcast axes", vec![u(&[2, 1, 3]), u(&[4, 3])], |x| Tensor::einsum("...i,...i->", x))
                .reference(|h| r::einsum("...i,...i->", h)),
            Case::new("einsum three operands", vec![u(&[2, 3]), u(&[3, 4]), u(&[4, 2])], |x| {
                Tensor::einsum("ab,bc,cd->ad", x)
            })
            .reference(|h| r::einsum("ab,bc,cd->ad", h)),
        ]
    },
};

pub fn ops() -> Vec<&'static OpDef> {
    vec![&EINSUM]
}
