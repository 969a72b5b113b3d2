//! The README's Rust snippets stay true: the MNIST training snippet is an
//! excerpt of examples/mnist.rs (its lines appear there in the same order;
//! `...` stands for lines left out), so the two cannot drift apart; the
//! README's Example is the crate-level doc test (src/lib.rs), which runs.

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

#[test]
fn the_readme_example_is_the_crate_doc_example() {
    let readme = read("README.md");
    let lib = read("src/lib.rs");
    let docs: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("//! ").or_else(|| (l == "//!").then_some(""))).collect();
    let section = readme.split("\n## Example\n").nth(1).expect("README.md has an Example section");
    let block = section.split("```rust\n").nth(1).and_then(|b| b.split("```").next()).expect("a rust block");
    let mut checked = 0;
    for line in block.lines() {
        // The README wraps the example in `fn main`; the doc test hides that wrapper.
        if line.starts_with("fn main") || line == "    Ok(())" || line == "}" || line.trim().is_empty() {
            continue;
        }
        let unindented = line.strip_prefix("    ").unwrap_or(line);
        assert!(docs.contains(&unindented), "README.md's example line {line:?} is not in src/lib.rs's doc example");
        checked += 1;
    }
    assert!(checked > 10, "{checked} lines checked");
}
