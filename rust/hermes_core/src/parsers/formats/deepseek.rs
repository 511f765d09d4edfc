//! DeepSeek-V3 (vLLM `deepseek_v3`) and DeepSeek-V3.1 (vLLM `deepseek_v31`): rows of the
//! [`sectioned`](super::sectioned) format.
//!
//! ```text
//! V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>\n...<｜tool▁calls▁end｜>
//! V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//! ```
//!
//! Content, as vLLM returns it: V3 keeps the text before the section and any text after it
//! verbatim; V3.1 keeps the text before verbatim and drops whitespace after the calls (other
//! text after them is kept, vLLM drops it). Arguments are scanned as JSON, so the markers inside
//! a JSON string are text (vLLM's regex cuts V3.1 arguments there). The V3 fence may be
//! missing (`NAME\n{..}`); the call then still parses.
//!
//! Hold-back: a marker's length of plain text, and a call's header (type and name) until the
//! arguments begin. vLLM reports `tools_called: true` with no calls when the section marker
//! appears without a complete call; here that text stays content with a `truncated` /
//! `malformed_markup` issue.

use std::sync::Arc;

use crate::parsers::stream::{Format, FormatStream};
use crate::parsers::tools::Tools;
use crate::parsers::types::{RenderError, ToolCall};

use super::sectioned::{Header, SectionSpec, Sectioned};
use super::shared::{render_args, Driven};

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";

const V3: SectionSpec = SectionSpec {
    section_begin: CALLS_BEGIN,
    section_end: CALLS_END,
    call_begin: CALL_BEGIN,
    sep: SEP,
    call_end: CALL_END,
    header: Header::TypeThenNameLine,
    strip_edges: false,
    drop_tail_ws: false,
};

const V31: SectionSpec = SectionSpec {
    header: Header::Name,
    drop_tail_ws: true,
    ..V3
};

struct DeepSeek {
    spec: SectionSpec,
}

impl Format for DeepSeek {
    fn stream(&self, _tools: &Arc<Tools>) -> Box<dyn FormatStream> {
        Box::new(Driven::new(Sectioned::new(self.spec)))
    }

    fn render(&self, calls: &[ToolCall], content: Option<&str>) -> Result<String, RenderError> {
        let content = content.unwrap_or("");
        if content.contains(CALLS_BEGIN) {
            return Err(RenderError(format!(
                "content contains {CALLS_BEGIN:?}, which would be read back as tool calls"
            )));
        }
        let mut out = String::from(content);
        if calls.is_empty() {
            return Ok(out);
        }
        out.push_str(CALLS_BEGIN);
        for (i, call) in calls.iter().enumerate() {
            let name = call.name.as_str();
            let v3 = self.spec.header == Header::TypeThenNameLine;
            let bad_char = if v3 {
                name.contains(['\n', '`', '{', '<'])
            } else {
                name.contains('<')
            };
            if name.trim().is_empty() || name.trim() != name || bad_char {
                return Err(RenderError(format!(
                    "call {i}: tool name {name:?} cannot be written in this format (it must be non-empty, \
                     without surrounding whitespace{})",
                    if v3 { ", newlines, '`', '{' or '<'" } else { " or '<'" }
                )));
            }
            let args = render_args(i, call)?;
            if i > 0 && v3 {
                out.push('\n');
            }
            out.push_str(CALL_BEGIN);
            if v3 {
                out.push_str("function");
                out.push_str(SEP);
                out.push_str(name);
                out.push_str("\n```json\n");
                out.push_str(args);
                out.push_str("\n```");
            } else {
                out.push_str(name);
                out.push_str(SEP);
                out.push_str(args);
            }
            out.push_str(CALL_END);
        }
        out.push_str(CALLS_END);
        Ok(out)
    }
}

pub fn deepseek_v3() -> Arc<dyn Format> {
    Arc::new(DeepSeek { spec: V3 })
}

pub fn deepseek_v31() -> Arc<dyn Format> {
    Arc::new(DeepSeek { spec: V31 })
}
