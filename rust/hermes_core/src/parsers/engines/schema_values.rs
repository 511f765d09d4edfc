//! Schema-typed argument values for the XML-parameter formats (qwen3_coder, glm45/glm47).
//!
//! Those formats write every argument value as raw, unescaped text; the parser turns it into
//! a JSON value using the parameter's JSON-schema type, the way vLLM 0.33.0 does
//! (`coerce_to_schema_type` / `extract_types_from_schema` in `vllm/tool_parsers/utils.py`):
//!
//! - the schema's types come from `type` (a name or a list), from the values of `enum`, and
//!   recursively from `anyOf` / `oneOf` / `allOf`; no type information means `string`;
//!   names are lower-cased and common aliases (`int`, `float`, `bool`, `dict`, `list`, ...)
//!   are mapped to JSON-schema names;
//! - the types are tried in the order null, integer, number, boolean, object, array, string;
//!   the first conversion that succeeds wins:
//!   `null` needs the text `null` (any case); `integer` follows Python's `int(text)` (surrounding
//!   whitespace, a sign and `_` between digits allowed); `number` tries `int` then `float`
//!   (finite values only; an integral float becomes an integer); `boolean` takes
//!   `true`/`1`/`false`/`0` (any case, trimmed); `object` and `array` take any JSON text whose
//!   numbers are finite; `string` keeps the text;
//! - when no listed type converts the text (e.g. `integer` given `abc`), JSON text is taken as
//!   JSON and anything else stays a string. Conversion never fails.
//!
//! A value whose only type is `string` (and any value of a parameter or tool the request does not
//! describe) is always kept as text, so it can be streamed as JSON-string fragments while it
//! arrives; any other value is converted once it is complete.

use serde_json::Value;

use crate::parsers::json_escape::{escape_json_into, json_string};
use crate::parsers::tools::Tools;
use crate::parsers::Emitter;

const NULL: u8 = 1;
const INTEGER: u8 = 2;
const NUMBER: u8 = 4;
const BOOLEAN: u8 = 8;
const OBJECT: u8 = 16;
const ARRAY: u8 = 32;
const STRING: u8 = 64;
/// A type name this module does not know (vLLM then falls back to "JSON if it parses").
const OTHER: u8 = 128;

/// The set of JSON-schema types a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeSet(u8);

impl TypeSet {
    pub const STRING: TypeSet = TypeSet(STRING);

    /// The types of one parameter schema.
    pub fn of_schema(schema: &Value) -> TypeSet {
        let mut bits = 0;
        collect_types(schema, &mut bits, 0);
        TypeSet(bits)
    }

    /// The types of `tool`'s parameter `param`; `STRING` when the tool or parameter is unknown
    /// (vLLM leaves such values as text).
    pub fn of_param(tools: &Tools, tool: &str, param: &str) -> TypeSet {
        match tools.get(tool).and_then(|t| t.param(param)) {
            Some(spec) if spec.schema.is_object() => TypeSet::of_schema(&spec.schema),
            _ => TypeSet::STRING,
        }
    }

    /// True when the text is always kept as is (so it may be streamed before it is complete).
    pub fn is_plain_string(self) -> bool {
        self.0 == STRING
    }
}

fn type_bit(name: &str) -> u8 {
    match name.trim().to_lowercase().as_str() {
        "null" => NULL,
        "integer" | "int" | "int32" | "int64" | "uint" | "uint32" | "uint64" | "long" | "short" | "unsigned" => INTEGER,
        "number" | "float" | "float32" | "float64" | "double" => NUMBER,
        "boolean" | "bool" => BOOLEAN,
        "object" | "dict" => OBJECT,
        "array" | "arr" | "list" | "sequence" => ARRAY,
        "string" | "str" | "text" | "varchar" | "char" | "enum" => STRING,
        _ => OTHER,
    }
}

/// vLLM's `extract_types_from_schema`, folded into bits. `depth` bounds hostile nesting.
fn collect_types(schema: &Value, bits: &mut u8, depth: usize) {
    let Value::Object(map) = schema else {
        *bits |= STRING;
        return;
    };
    let before = *bits;
    let mut found = false;
    match map.get("type") {
        Some(Value::String(s)) => {
            *bits |= type_bit(s);
            found = true;
        }
        Some(Value::Array(list)) => {
            for t in list.iter().filter_map(Value::as_str) {
                *bits |= type_bit(t);
                found = true;
            }
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        for v in values {
            found = true;
            *bits |= match v {
                Value::Null => NULL,
                Value::Bool(_) => BOOLEAN,
                Value::Number(n) if n.is_i64() || n.is_u64() || is_integer_text(&n.to_string()) => INTEGER,
                Value::Number(_) => NUMBER,
                Value::String(_) => STRING,
                Value::Array(_) => ARRAY,
                Value::Object(_) => OBJECT,
            };
        }
    }
    if depth < 32 {
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(choices)) = map.get(key) {
                for choice in choices {
                    collect_types(choice, bits, depth + 1);
                    found = true;
                }
            }
        }
    }
    if !found && *bits == before {
        *bits |= STRING;
    }
}

fn is_integer_text(s: &str) -> bool {
    !s.contains(['.', 'e', 'E'])
}

/// Python's `str.isspace` (what `str.strip()`, `int()` and `float()` skip).
fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | '\x1c'..='\x1f' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c > '\u{ff}' && c.is_whitespace())
}

fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Digits of `radix` with single `_` between them (Python's numeric literal rule); returns them
/// without `_`, or `None` if anything else is there.
pub(crate) fn clean_digits(s: &str, radix: u32) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut prev_digit = false;
    for c in s.chars() {
        if c.is_digit(radix) {
            out.push(c);
            prev_digit = true;
        } else if c == '_' && prev_digit {
            prev_digit = false;
        } else {
            return None;
        }
    }
    (prev_digit && !out.is_empty()).then_some(out)
}

/// Python's `int(text)` for base 10, as canonical JSON integer text.
pub fn py_int(text: &str) -> Option<String> {
    let s = py_strip(text);
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits = clean_digits(body, 10)?;
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        return Some("0".to_owned());
    }
    Some(if neg { format!("-{trimmed}") } else { trimmed.to_owned() })
}

/// Python's `float(text)` restricted to finite values.
pub fn py_float(text: &str) -> Option<f64> {
    let s = py_strip(text);
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    // Mantissa: digits, optional '.', digits (at least one digit overall); then an exponent.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let int_ok = int_part.is_empty() || clean_digits(int_part, 10).is_some();
    let frac_ok = frac_part.is_none_or(|f| f.is_empty() || clean_digits(f, 10).is_some());
    let has_digit = !int_part.is_empty() || frac_part.is_some_and(|f| !f.is_empty());
    if !(int_ok && frac_ok && has_digit) {
        return None;
    }
    if let Some(e) = exponent {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        clean_digits(e, 10)?;
    }
    let v: f64 = s.replace('_', "").parse().ok()?;
    v.is_finite().then_some(v)
}

/// JSON text for a finite float the way Python's `coerce` returns it: integral values as
/// integers (exact, like `int(float)`), others as the shortest round-trip float.
fn float_json(v: f64) -> String {
    if v == v.trunc() {
        let s = format!("{v:.0}");
        if s == "-0" {
            "0".to_owned()
        } else {
            s
        }
    } else {
        serde_json::Number::from_f64(v)
            .map(|n| n.to_string())
            .unwrap_or_else(|| "null".to_owned())
    }
}

/// `json.loads(text)` that vLLM accepts: valid JSON whose numbers are finite. Compact JSON text.
fn json_value(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    if !all_finite(&value) {
        return None;
    }
    serde_json::to_string(&value).ok()
}

fn all_finite(v: &Value) -> bool {
    // Iterative: serde_json already bounds the depth, but keep this free of recursion anyway.
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) => {
                let s = n.to_string();
                if !is_integer_text(&s) && !s.parse::<f64>().is_ok_and(f64::is_finite) {
                    return false;
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    true
}

/// Convert a complete raw value to JSON text by its schema types (see the module doc).
pub fn coerce(value: &str, types: TypeSet) -> String {
    let has = |bit: u8| types.0 & bit != 0;
    if has(NULL) && value.to_lowercase() == "null" {
        return "null".to_owned();
    }
    if has(INTEGER) {
        if let Some(i) = py_int(value) {
            return i;
        }
    }
    if has(NUMBER) {
        if let Some(i) = py_int(value) {
            return i;
        }
        if let Some(f) = py_float(value) {
            return float_json(f);
        }
    }
    if has(BOOLEAN) {
        let v = py_strip(value).to_ascii_lowercase();
        if v == "true" || v == "1" {
            return "true".to_owned();
        }
        if v == "false" || v == "0" {
            return "false".to_owned();
        }
    }
    if has(OBJECT) || has(ARRAY) {
        if let Some(j) = json_value(value) {
            return j;
        }
    }
    if !has(STRING) {
        if let Some(j) = json_value(value) {
            return j;
        }
    }
    json_string(value)
}

/// Writes one call's arguments as a JSON object while its parameters arrive: `{"k": ` when a
/// parameter opens, string values as escaped fragments, typed values once complete, `}` at the end.
#[derive(Debug, Default)]
pub struct ArgsWriter {
    params: usize,
    /// The open value is a JSON string being streamed (its closing quote is pending).
    in_string: bool,
    scratch: String,
}

impl ArgsWriter {
    /// Open parameter `key`; `streaming`: its value will come as string fragments.
    pub fn open(&mut self, out: &mut Emitter<'_>, key: &str, streaming: bool) {
        self.scratch.clear();
        self.scratch.push_str(if self.params == 0 { "{" } else { ", " });
        self.scratch.push('"');
        escape_json_into(&mut self.scratch, key);
        self.scratch.push_str("\": ");
        if streaming {
            self.scratch.push('"');
        }
        self.params += 1;
        self.in_string = streaming;
        out.args(&self.scratch);
    }

    /// The next piece of an open string value (raw text; escaped here).
    pub fn fragment(&mut self, out: &mut Emitter<'_>, raw: &str) {
        if raw.is_empty() {
            return;
        }
        self.scratch.clear();
        escape_json_into(&mut self.scratch, raw);
        out.args(&self.scratch);
    }

    /// Close the open string value.
    pub fn close_string(&mut self, out: &mut Emitter<'_>) {
        if self.in_string {
            out.args("\"");
            self.in_string = false;
        }
    }

    /// A complete typed value (already JSON text).
    pub fn value(&mut self, out: &mut Emitter<'_>, json: &str) {
        out.args(json);
    }

    /// Close the object (an open string value is closed first).
    pub fn finish(&mut self, out: &mut Emitter<'_>) {
        self.close_string(out);
        out.args(if self.params == 0 { "{}" } else { "}" });
        self.params = 0;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ty(schema: Value) -> TypeSet {
        TypeSet::of_schema(&schema)
    }

    #[test]
    fn types_from_schema() {
        assert!(ty(json!({"type": "string"})).is_plain_string());
        assert!(ty(json!({})).is_plain_string());
        assert!(ty(json!({"enum": ["a", "b"]})).is_plain_string());
        assert!(ty(json!({"type": "STR"})).is_plain_string());
        assert!(!ty(json!({"type": ["string", "null"]})).is_plain_string());
        assert!(!ty(json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})).is_plain_string());
        assert_eq!(ty(json!({"enum": [1, 2]})), TypeSet(INTEGER));
    }

    #[test]
    fn python_int_and_float() {
        assert_eq!(py_int(" 42 ").as_deref(), Some("42"));
        assert_eq!(py_int("+1_000").as_deref(), Some("1000"));
        assert_eq!(py_int("-007").as_deref(), Some("-7"));
        assert_eq!(py_int("-0").as_deref(), Some("0"));
        assert_eq!(
            py_int("123456789012345678901234567890").as_deref(),
            Some("123456789012345678901234567890")
        );
        for bad in ["", "1__0", "_1", "1_", "0x10", "1.0", "1e3", "- 1", "١"] {
            assert_eq!(py_int(bad), None, "{bad:?}");
        }
        assert_eq!(py_float("1e3"), Some(1000.0));
        assert_eq!(py_float(" -.5 "), Some(-0.5));
        assert_eq!(py_float("5."), Some(5.0));
        assert_eq!(py_float("1_0.2_5"), Some(10.25));
        for bad in ["inf", "nan", "1e999", ".", "e5", "1e", "1.2.3", "abc", ""] {
            assert_eq!(py_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn coerce_like_vllm() {
        let int = TypeSet(INTEGER);
        let num = TypeSet(NUMBER);
        assert_eq!(coerce("\n 120 ", int), "120");
        // Not an int: taken as JSON (Python: 1000.0).
        assert_eq!(coerce("1e3", int).parse::<f64>().unwrap(), 1000.0);
        assert_eq!(coerce("abc", int), "\"abc\"");
        assert_eq!(coerce("1.5", int), "1.5");
        assert_eq!(coerce("true", int), "true");
        assert_eq!(coerce("2.0", num), "2");
        assert_eq!(coerce("-0.0", num), "0");
        assert_eq!(coerce("0.1", num), "0.1");
        assert_eq!(coerce("1e20", num), "100000000000000000000");
        assert_eq!(coerce("inf", num), "\"inf\"");
        assert_eq!(coerce(" TRUE ", TypeSet(BOOLEAN)), "true");
        assert_eq!(coerce("0", TypeSet(BOOLEAN)), "false");
        assert_eq!(coerce("yes", TypeSet(BOOLEAN)), "\"yes\"");
        assert_eq!(coerce("NULL", TypeSet(NULL | STRING)), "null");
        assert_eq!(coerce("x", TypeSet(NULL | STRING)), "\"x\"");
        assert_eq!(coerce("[1, {\"a\": null}]", TypeSet(ARRAY)), "[1,{\"a\":null}]");
        assert_eq!(coerce("5", TypeSet(ARRAY)), "5");
        assert_eq!(coerce("[1e999]", TypeSet(ARRAY)), "\"[1e999]\"");
        assert_eq!(coerce("not json", TypeSet(OBJECT)), "\"not json\"");
        assert_eq!(coerce("12", TypeSet::STRING), "\"12\"");
        assert_eq!(coerce("{\"a\": 1}", TypeSet(OTHER)), "{\"a\":1}");
    }
}
