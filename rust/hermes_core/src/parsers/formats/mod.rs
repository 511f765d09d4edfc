//! One module per format family; each exposes `pub fn <name>() -> Arc<dyn Format>` constructors
//! that `registry::REGISTRY` rows point to. See the module doc of `parsers` for how to add one.

pub mod hermes;
