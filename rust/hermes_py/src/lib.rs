//! `hermes_env._core`: the PyO3 layer. Each submodule wraps one module of `hermes_core`
//! and registers its classes and functions here; no parsing or mask logic lives in this crate.

use pyo3::prelude::*;

mod bpe;
mod errors;
mod parsers;
mod trajectory;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bpe::register(m)?;
    parsers::register(m)?;
    trajectory::register(m)?;
    Ok(())
}
