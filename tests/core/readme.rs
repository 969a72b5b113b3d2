//! The README's Rust snippets stay true: each ```rust,ignore block is an
//! excerpt of the example or doc test its first line names (its lines appear
//! there in the same order; `...` stands for lines left out), so the two
//! cannot drift apart; the README's Example is the crate-level doc test
//! (src/lib.rs), which runs.

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

/// The lines of `file`'s doc comments that start with `prefix` (`//!` or
/// `///`), without it: a doc example's source.
fn doc_lines(file: &str, prefix: &str) -> Vec<String> {
    read(file)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(prefix).map(|d| d.strip_prefix(' ').unwrap_or(d).to_string()))
        .collect()
}

/// Checks that the README's ```rust,ignore block naming `source` is an
/// excerpt of `lines` (every non-blank line but `...` appears there, in the
/// same order), and that it checked at least `at_least` lines.
fn assert_excerpt(source: &str, lines: &[String], at_least: usize) {
    let readme = read("README.md");
    let snippet = excerpt_of(&readme, source);
    let mut rest = lines.iter().map(|l| l.trim_end());
    let mut checked = 0;
    for (n, line) in snippet.lines().enumerate().skip(1) {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim() == "..." {
            continue;
        }
        assert!(
            rest.any(|l| l == line),
            "README.md's snippet from {source}, its line {}: {line:?} is not there after the lines before it",
            n + 1
        );
        checked += 1;
    }
    assert!(checked >= at_least, "the snippet from {source} shows at least {at_least} lines ({checked})");
}

fn file_lines(file: &str) -> Vec<String> {
    read(file).lines().map(String::from).collect()
}

#[test]
fn the_readme_mnist_snippet_is_an_excerpt_of_the_example() {
    // The model, the data, the optimizer and the loop.
    assert_excerpt("examples/mnist.rs", &file_lines("examples/mnist.rs"), 31);
}

#[test]
fn the_readme_distributed_snippet_is_an_excerpt_of_the_example() {
    // The group, the data, the model and the loop.
    assert_excerpt("examples/ddp_mnist.rs", &file_lines("examples/ddp_mnist.rs"), 25);
}

#[test]
fn the_readme_custom_op_snippet_is_an_excerpt_of_the_example() {
    assert_excerpt("examples/custom_op.rs", &file_lines("examples/custom_op.rs"), 10);
}

#[test]
fn the_readme_leak_snippet_is_an_excerpt_of_the_memory_doc_test() {
    assert_excerpt("src/memory.rs", &doc_lines("src/memory.rs", "//!"), 8);
}

#[test]
fn the_readme_amp_snippet_is_an_excerpt_of_the_grad_scaler_doc_test() {
    // The setup and the loop.
    assert_excerpt("src/amp/scaler.rs", &doc_lines("src/amp/scaler.rs", "///"), 15);
}

#[test]
fn the_readme_determinism_snippet_is_an_excerpt_of_the_module_doc_test() {
    assert_excerpt("src/determinism.rs", &doc_lines("src/determinism.rs", "//!"), 6);
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

const TABLE_START: &str =
    "<!-- op table: generated from the registry (src/ops); SKIFF_BLESS=1 cargo test --test readme rewrites it -->\n";
const TABLE_END: &str = "<!-- end of op table -->\n";

/// The README's table of registry ops is the registry's own
/// (`ops::op_table_markdown`: each entry's signature and doc line), so it
/// cannot fall behind the code. `SKIFF_BLESS=1` rewrites it in place.
#[test]
fn the_readme_op_table_is_generated_from_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = read("README.md");
    let (head, rest) = readme.split_once(TABLE_START).expect("README.md has the op table's start marker");
    let (table, tail) = rest.split_once(TABLE_END).expect("README.md has the op table's end marker");
    let want = skiff::ops::op_table_markdown();
    if table != want {
        if std::env::var("SKIFF_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, format!("{head}{TABLE_START}{want}{TABLE_END}{tail}")).unwrap();
            return;
        }
        let first = table.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "README.md's op table is out of date (first difference at its line {}: {:?} should be {:?}); \
             run `SKIFF_BLESS=1 cargo test --test readme`",
            first + 1,
            table.lines().nth(first),
            want.lines().nth(first)
        );
    }
    for def in skiff::ops::registry() {
        assert!(table.contains(&format!("| `{}`", def.name)), "{} is in the table", def.name);
    }
}
