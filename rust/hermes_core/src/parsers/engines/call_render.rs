//! Writing calls back into raw text: the arguments checked to be one JSON value, content that
//! a stripping format cannot write back, and calls as JSON objects or a JSON array of them.

use crate::parsers::json_bytes::is_ws;
use crate::parsers::json_escape::json_string;
use crate::parsers::json_scan::validate;
use crate::parsers::types::{RenderError, ToolCall};

/// For formats whose parser drops whitespace around the call markup (vLLM `strip()`s such
/// content): content that ends in whitespace cannot be written so that it reads back the same.
pub(crate) fn check_stripped_content(content: &str, has_calls: bool, format: &str) -> Result<(), RenderError> {
    if has_calls && content.bytes().last().is_some_and(is_ws) {
        return Err(RenderError(format!(
            "{format} drops whitespace around tool calls, so content ending in whitespace cannot be \
             rendered to read back the same; strip the content first"
        )));
    }
    Ok(())
}

/// A call's arguments for rendering: trimmed, checked to be one JSON value (empty means `{}`).
pub(crate) fn render_args(i: usize, call: &ToolCall) -> Result<&str, RenderError> {
    let args = call.arguments.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    if args.is_empty() {
        return Ok("{}");
    }
    validate(args).map_err(|e| {
        RenderError(format!(
            "call {i} ({}) arguments are not valid JSON ({} at byte {}); pass a JSON object",
            call.name,
            e.kind.description(),
            e.offset
        ))
    })?;
    Ok(args)
}

/// Append `[{"name": .., "arguments": ..}, ...]` for `calls` to `out`.
pub(crate) fn render_call_array(calls: &[ToolCall], out: &mut String) -> Result<(), RenderError> {
    out.push('[');
    render_call_objects(calls, ", ", "arguments", out)?;
    out.push(']');
    Ok(())
}

/// Append `{"name": .., "<args_key>": ..}` for each of `calls` to `out`, joined by `separator`.
pub(crate) fn render_call_objects(
    calls: &[ToolCall],
    separator: &str,
    args_key: &str,
    out: &mut String,
) -> Result<(), RenderError> {
    for (i, call) in calls.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str("{\"name\": ");
        out.push_str(&json_string(&call.name));
        out.push_str(", \"");
        out.push_str(args_key);
        out.push_str("\": ");
        out.push_str(render_args(i, call)?);
        out.push('}');
    }
    Ok(())
}
