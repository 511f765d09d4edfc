//! hermes_core: the hot path of hermes_env, in pure Rust.
//!
//! - [`bpe`]: byte-level BPE encoding with the exact ids of a Hugging Face `tokenizers` model.
//! - [`parsers`]: streaming tool-call parsers for the raw output formats of open models.
//! - [`trajectory`]: token-exact multi-turn trajectories (tokens, masks, logprobs).
//!
//! No PyO3 here: the binding crate `hermes_py` wraps these types for Python.

pub mod bpe;
pub mod parsers;
pub mod trajectory;
