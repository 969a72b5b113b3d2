//! The README's Rust snippets stay true: the MNIST training snippet is an
//! excerpt of examples/mnist.rs (its lines appear there in the same order;
//! `...` stands for lines left out), so the two cannot drift apart. The
//! README's other Rust example is the crate-level doc test (src/lib.rs).

use std::path::Path;

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// The ```rust,ignore block whose first line names `source`.
fn excerpt_of<'a>(readme: &'a str, source: &str) -> &'a str {
    readme
        .split("```rust,ignore\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.lines().next().is_some_and(|l| l.contains(source)))
        .unwrap_or_else(|| panic!("README.md has no ```rust,ignore block naming {source}"))
}

#[test]
fn the_readme_mnist_snippet_is_an_excerpt_of_the_example() {
    let readme = read("README.md");
    let example = read("examples/mnist.rs");
    let snippet = excerpt_of(&readme, "examples/mnist.rs");
    let mut lines = example.lines().map(str::trim_end);
    let mut checked = 0;
    for (n, line) in snippet.lines().skip(1).enumerate() {
        let line = line.trim_end();
        if line.trim() == "..." {
            continue;
        }
        assert!(
            lines.any(|l| l == line),
            "README.md's MNIST snippet, line {}: {line:?} is not in examples/mnist.rs after the lines before it",
            n + 2
        );
        checked += 1;
    }
    assert!(checked > 30, "the snippet shows the model, the data, the optimizer and the loop ({checked} lines)");
}
