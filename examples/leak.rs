//! The leak report: tensors kept by mistake in a loop, found by the line
//! that made them. `cargo run --example leak`
use skiff::{memory, DType, Tensor};
fn main() -> skiff::Result<()> {
    memory::track_origins(true);
    let x = Tensor::ones(&[256], DType::F32)?;
    let mut history = Vec::new();
    for _ in 0..10 {
        history.push(x.exp()?); // the leak
    }
    let sites = memory::live_by_origin();
    print!("{}", memory::origins_table(&sites));
    memory::track_origins(false);
    Ok(())
}
