//! Einstein summation as its definition: every assignment of every label,
//! the product of the operands' elements, summed into the output's element.

use super::{indices, ravel, Host, Kind};

/// `equation` (letters, `...`, optional `->`) over `xs`, as PyTorch's einsum.
pub fn einsum(equation: &str, xs: &[Host]) -> Host {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    assert_eq!(terms.len(), xs.len(), "reference einsum: terms and operands");
    let named = |t: &str| t.replace("...", "").len();
    let e = terms.iter().zip(xs).map(|(t, x)| x.rank() - named(t)).max().unwrap_or(0);
    // `...` becomes digits, one per broadcast axis, right-aligned across operands.
    let spell = |t: &str, n: usize| -> Vec<char> {
        let digits: String = (e - n..e).map(|j| char::from(b'0' + j as u8)).collect();
        t.replace("...", &digits).chars().collect()
    };
    let inputs: Vec<Vec<char>> = terms.iter().zip(xs).map(|(t, x)| spell(t, x.rank() - named(t))).collect();
    let output: Vec<char> = match rhs {
        Some(r) => spell(&r, e),
        None => {
            let all: Vec<char> = inputs.iter().flatten().copied().collect();
            let mut once: Vec<char> = all
                .iter()
                .copied()
                .filter(|c| c.is_ascii_alphabetic() && all.iter().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            spell("...", e).into_iter().chain(once).collect()
        }
    };
    let mut labels: Vec<char> = inputs.iter().flatten().copied().collect();
    labels.sort_unstable();
    labels.dedup();
    let size = |c: char| {
        let found = inputs.iter().zip(xs).flat_map(|(t, x)| t.iter().zip(&x.shape).filter(move |(d, _)| **d == c));
        found.map(|(_, &n)| n).max().unwrap_or(1)
    };
    let sizes: Vec<usize> = labels.iter().map(|&c| size(c)).collect();
    let out_shape: Vec<usize> = output.iter().map(|&c| size(c)).collect();
    let mut out = vec![0.0; out_shape.iter().product()];
    let value = |assign: &[usize], c: char| assign[labels.iter().position(|&d| d == c).unwrap()];
    for assign in indices(&sizes) {
        let mut p = 1.0;
        for (t, x) in inputs.iter().zip(xs) {
            // A broadcast axis of size 1 reads its one element.
            let idx: Vec<usize> =
                t.iter().zip(&x.shape).map(|(&c, &n)| if n == 1 { 0 } else { value(&assign, c) }).collect();
            p *= x.at(&idx);
        }
        let o: Vec<usize> = output.iter().map(|&c| value(&assign, c)).collect();
        out[ravel(&o, &out_shape)] += p;
    }
    Host::new(&out_shape, Kind::Float, out)
}
