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
            if let Some(root) = func.get("parameters") {
                let mut props = Vec::new();
                collect_properties(root, root, 0, &mut props);
                for (pname, schema) in props {
                    params.push(ParamSpec {
                        name: pname,
                        ty: ParamType::from_schema(&schema),
                        schema,
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

/// How deep `$ref` chains and composition keywords are followed (a recursive schema ends there).
const MAX_SCHEMA_DEPTH: usize = 16;

/// The schema `$ref` points to inside `root` (`#/$defs/NAME`, `#/definitions/NAME`, or any
/// other local JSON pointer); `None` for remote or broken references.
fn lookup<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `schema` with its `$ref` (followed through chains) merged under its own keywords, and the
/// same done for each choice of its `anyOf` / `oneOf` / `allOf`, recursively: the parts of a
/// schema that say which JSON types a value may take. Other keywords are kept as they are.
fn resolve(schema: &Value, root: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = serde_json::Map::new();
    if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| lookup(root, r)) {
        if depth < MAX_SCHEMA_DEPTH {
            if let Value::Object(base) = resolve(target, root, depth + 1) {
                out = base;
            }
        }
    }
    for (key, value) in map {
        if key == "$ref" {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("anyOf" | "oneOf" | "allOf", Value::Array(choices)) if depth < MAX_SCHEMA_DEPTH => {
                Value::Array(choices.iter().map(|c| resolve(c, root, depth + 1)).collect())
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// The properties a tool's `parameters` schema describes: those of `properties`, and those
/// under a `$ref` or in the choices of a top-level `anyOf` / `oneOf` / `allOf` (pydantic writes
/// unions and shared models that way). A property named in several choices may take any of
/// their schemas (`anyOf` of them). Each schema comes with its references resolved.
fn collect_properties(schema: &Value, root: &Value, depth: usize, out: &mut Vec<(String, Value)>) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| lookup(root, r)) {
        collect_properties(target, root, depth + 1, out);
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, prop) in props {
            let prop = resolve(prop, root, depth);
            match out.iter_mut().find(|(n, _)| n == name) {
                Some((_, known)) if *known != prop => {
                    let merged = serde_json::json!({"anyOf": [known.clone(), prop]});
                    *known = merged;
                }
                Some(_) => {}
                None => out.push((name.clone(), prop)),
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(choices)) = map.get(key) {
            for choice in choices {
                collect_properties(choice, root, depth + 1, out);
            }
        }
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

    #[test]
    fn composed_parameters_and_references() {
        // Pydantic-style schemas: properties under a top-level oneOf/allOf and behind $ref.
        let t = Tools::from_json(
            r##"[{"type": "function", "function": {"name": "send", "parameters": {
                "$defs": {"Payload": {"type": "object"}, "Count": {"$ref": "#/$defs/Int"},
                          "Int": {"type": "integer"}, "Loop": {"$ref": "#/$defs/Loop"}},
                "oneOf": [
                    {"type": "object", "properties": {"payload": {"$ref": "#/$defs/Payload"},
                                                      "mode": {"const": "a", "type": "string"}}},
                    {"type": "object", "properties": {"count": {"$ref": "#/$defs/Count"},
                                                      "mode": {"type": "integer"}}}
                ],
                "allOf": [{"$ref": "#/definitions/Base"}],
                "definitions": {"Base": {"properties": {"flag": {"anyOf": [{"$ref": "#/$defs/Int"},
                                                                           {"type": "null"}]},
                                                        "loop": {"$ref": "#/$defs/Loop"}}}}
            }}}]"##,
        )
        .unwrap();
        let ty = |p: &str| t.param_type("send", p).cloned();
        assert_eq!(ty("payload"), Some(ParamType::Object));
        assert_eq!(ty("count"), Some(ParamType::Integer));
        assert_eq!(ty("flag"), Some(ParamType::Any));
        assert!(t.param_type("send", "loop").is_some());
        let schema = |p: &str| t.get("send").unwrap().param(p).unwrap().schema.clone();
        assert_eq!(schema("flag")["anyOf"][0], serde_json::json!({"type": "integer"}));
        assert_eq!(schema("mode")["anyOf"][1], serde_json::json!({"type": "integer"}));
    }
}
