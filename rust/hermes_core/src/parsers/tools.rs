//! The request's tools (OpenAI function-tool schemas): names for unknown-tool detection and
//! per-parameter JSON-schema types for formats whose values are untyped text (qwen3_coder, glm).

use serde_json::Value;

/// The JSON-schema `type` of one parameter, as the XML formats need it to convert raw text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Null,
    Object,
    Array,
    /// Several types (`"type": ["integer", "null"]`), in schema order.
    Union(Vec<ParamType>),
    /// No `type` (or one we do not know, e.g. only `anyOf`): formats keep the text as written.
    Any,
}

impl ParamType {
    fn from_schema(schema: &Value) -> ParamType {
        match schema.get("type") {
            Some(Value::String(s)) => ParamType::from_name(s),
            Some(Value::Array(list)) => {
                let types: Vec<ParamType> = list
                    .iter()
                    .filter_map(Value::as_str)
                    .map(ParamType::from_name)
                    .collect();
                match types.len() {
                    0 => ParamType::Any,
                    1 => types.into_iter().next().unwrap_or(ParamType::Any),
                    _ => ParamType::Union(types),
                }
            }
            _ => ParamType::Any,
        }
    }

    fn from_name(name: &str) -> ParamType {
        match name {
            "string" => ParamType::String,
            "integer" => ParamType::Integer,
            "number" => ParamType::Number,
            "boolean" => ParamType::Boolean,
            "null" => ParamType::Null,
            "object" => ParamType::Object,
            "array" => ParamType::Array,
            _ => ParamType::Any,
        }
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: String,
    pub ty: ParamType,
    /// The parameter's whole JSON schema, for formats that need more than the type.
    pub schema: Value,
}

/// One tool (function) of the request.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub params: Vec<ParamSpec>,
}

impl ToolSpec {
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// The request's `tools`; empty when the caller gave none (then no unknown-tool check is made).
#[derive(Debug, Clone, Default)]
pub struct Tools {
    tools: Vec<ToolSpec>,
}

/// `tools` was not a JSON list of OpenAI tool schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsError(pub String);

impl std::fmt::Display for ToolsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolsError {}

impl Tools {
    /// No tools: every name is accepted.
    pub fn none() -> Tools {
        Tools::default()
    }

    /// From the JSON text of a list of OpenAI tools: `[{"type": "function", "function": {"name",
    /// "parameters": {...}}}]`. The bare function form `[{"name", "parameters"}]` is accepted too.
    pub fn from_json(text: &str) -> Result<Tools, ToolsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            ToolsError(format!(
                "tools is not valid JSON ({e}); pass a list of OpenAI tool schemas"
            ))
        })?;
        Tools::from_value(&value)
    }

    /// From an already parsed list of OpenAI tools.
    pub fn from_value(value: &Value) -> Result<Tools, ToolsError> {
        let list = match value {
            Value::Null => return Ok(Tools::none()),
            Value::Array(list) => list,
            _ => return Err(ToolsError("tools must be a list of OpenAI tool schemas".into())),
        };
        let mut tools = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let func = item.get("function").unwrap_or(item);
            let name = func.get("name").and_then(Value::as_str).ok_or_else(|| {
                ToolsError(format!(
                    "tools[{i}] has no function name; expected {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}"
                ))
            })?;
            let mut params = Vec::new();
            if let Some(Value::Object(props)) = func.get("parameters").and_then(|p| p.get("properties")) {
                for (pname, schema) in props {
                    params.push(ParamSpec {
                        name: pname.clone(),
                        ty: ParamType::from_schema(schema),
                        schema: schema.clone(),
                    });
                }
            }
            tools.push(ToolSpec {
                name: name.to_owned(),
                params,
            });
        }
        Ok(Tools { tools })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// True when `name` is a tool of the request, or when no tools were given.
    pub fn allows(&self, name: &str) -> bool {
        self.tools.is_empty() || self.get(name).is_some()
    }

    /// The JSON-schema type of `tool`'s parameter `param` (`None`: unknown tool or parameter).
    pub fn param_type(&self, tool: &str, param: &str) -> Option<&ParamType> {
        self.get(tool).and_then(|t| t.param(param)).map(|p| &p.ty)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn openai_schema() {
        let t = Tools::from_json(
            r#"[{"type":"function","function":{"name":"read_file","parameters":{"type":"object",
            "properties":{"path":{"type":"string"},"limit":{"type":["integer","null"]},"x":{}}}}},
            {"name":"bare"}]"#,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.allows("bare") && !t.allows("nope"));
        assert_eq!(t.param_type("read_file", "path"), Some(&ParamType::String));
        assert_eq!(
            t.param_type("read_file", "limit"),
            Some(&ParamType::Union(vec![ParamType::Integer, ParamType::Null]))
        );
        assert_eq!(t.param_type("read_file", "x"), Some(&ParamType::Any));
        assert!(Tools::none().allows("anything"));
        assert!(Tools::from_json("{").is_err());
        assert!(Tools::from_json("[{}]").unwrap_err().0.contains("tools[0]"));
    }
}
