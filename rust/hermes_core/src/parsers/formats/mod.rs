//! One module per format family (constants, dialect, render), each exposing
//! `pub fn <name>() -> Arc<dyn Format>` constructors that `registry::REGISTRY` rows point to; the
//! machinery they share is in `engines`. See the module doc of `parsers` for how to add one.

pub(crate) mod auto;
pub(crate) mod deepseek;
pub(crate) mod glm;
pub(crate) mod granite;
pub(crate) mod hermes;
pub(crate) mod internlm;
pub(crate) mod jamba;
pub(crate) mod kimi;
pub(crate) mod llama_json;
pub(crate) mod mistral;
pub(crate) mod pythonic;
pub(crate) mod qwen3_coder;
pub(crate) mod xlam;
