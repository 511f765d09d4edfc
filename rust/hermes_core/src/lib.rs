//! hermes_core: the hot path of hermes_env, in pure Rust.
//!
//! - [`parsers`]: streaming tool-call parsers for the raw output formats of open models.
//! - [`trajectory`]: token-exact multi-turn trajectories (tokens, masks, logprobs).
//!
//! No PyO3 here: the binding crate `hermes_py` wraps these types for Python.

pub mod parsers;
pub mod trajectory;
