//! One module per format family; each exposes `pub fn <name>() -> Arc<dyn Format>` constructors
//! that `registry::REGISTRY` rows point to. See the module doc of `parsers` for how to add one.

pub mod auto;
pub mod deepseek;
pub mod glm;
pub mod granite;
pub mod hermes;
pub mod internlm;
pub mod jamba;
pub(crate) mod json_array;
pub mod kimi;
pub mod llama_json;
pub mod mistral;
pub mod python_literal;
pub mod pythonic;
pub mod qwen3_coder;
pub mod schema_values;
pub(crate) mod sectioned;
pub(crate) mod shared;
#[cfg(test)]
mod test_support;
pub mod xlam;
pub mod xml_content;
pub(crate) mod xml_params;
