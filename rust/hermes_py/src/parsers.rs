//! Python wrappers for `hermes_core::parsers`: thin pyclasses around the core types.
//!
//! One FFI call per `feed`; events come back as a list of small frozen pyclasses built directly
//! from the core's events (no per-event Python-side work). Strings holding lone surrogates are
//! repaired (U+FFFD, same byte length in UTF-8) and reported as an `invalid_unicode` issue.

use std::borrow::Cow;
use std::sync::Mutex;

use hermes_core::parsers::{self as core, count_chars, Event, IssueKind, Stream, ToolCall, Tools, MAX_ISSUES};
use pyo3::prelude::*;

use crate::errors::{unknown_parser, CoreStateError, ParserUsageError, RenderError, RenderTypeError, ToolSchemaError};
use pyo3::types::{PyDict, PyList, PySlice, PyString};

/// Texts above this size are parsed with the GIL released.
const DETACH_BYTES: usize = 64 * 1024;

/// One extracted tool call.
#[pyclass(name = "ToolCall", module = "hermes_env._core", frozen, get_all)]
#[derive(Clone)]
pub struct PyToolCall {
    id: String,
    name: String,
    arguments: String,
}

#[pymethods]
impl PyToolCall {
    #[new]
    #[pyo3(signature = (name, arguments="{}".to_string(), id=String::new()))]
    fn new(name: String, arguments: String, id: String) -> Self {
        PyToolCall { id, name, arguments }
    }

    /// The OpenAI `tool_calls[i]` entry.
    fn to_openai<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        call_dict(py, &self.id, &self.name, &self.arguments)
    }

    /// Equal when name and arguments are equal (ids are random per stream).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyToolCall>()
            .map(|o| o.get().name == self.name && o.get().arguments == self.arguments)
            .unwrap_or(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCall(id={:?}, name={:?}, arguments={:?})",
            self.id, self.name, self.arguments
        )
    }

    /// Pickle support (multiprocessing, Ray).
    fn __getnewargs__(&self) -> (String, String, String) {
        (self.name.clone(), self.arguments.clone(), self.id.clone())
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str) {
        ("name", "arguments", "id")
    }
}

fn call_dict<'py>(py: Python<'py>, id: &str, name: &str, arguments: &str) -> PyResult<Bound<'py, PyDict>> {
    let func = PyDict::new(py);
    func.set_item("name", name)?;
    func.set_item("arguments", arguments)?;
    let d = PyDict::new(py);
    d.set_item("id", id)?;
    d.set_item("type", "function")?;
    d.set_item("function", func)?;
    Ok(d)
}

/// A problem found in the output (issues never raise).
#[pyclass(name = "ParseIssue", module = "hermes_env._core", frozen, get_all, eq)]
#[derive(Clone, PartialEq)]
pub struct PyParseIssue {
    /// `malformed_json`, `truncated`, `unknown_tool`, ... (see `ISSUE_KINDS`).
    kind: &'static str,
    /// Byte offset (UTF-8) into the whole output.
    offset: usize,
    /// The same position in code points: index into the Python `str`.
    char_offset: usize,
    message: String,
}

#[pymethods]
impl PyParseIssue {
    #[new]
    fn new(kind: &str, offset: usize, char_offset: usize, message: String) -> PyResult<Self> {
        let kind = IssueKind::ALL.iter().find(|k| k.as_str() == kind).ok_or_else(|| {
            let names: Vec<&str> = IssueKind::ALL.iter().map(|k| k.as_str()).collect();
            ParserUsageError::new_err(format!("unknown issue kind {kind:?}; use one of: {}", names.join(", ")))
        })?;
        Ok(PyParseIssue {
            kind: kind.as_str(),
            offset,
            char_offset,
            message,
        })
    }

    fn __getnewargs__(&self) -> (&'static str, usize, usize, String) {
        (self.kind, self.offset, self.char_offset, self.message.clone())
    }

    fn __repr__(&self) -> String {
        format!(
            "ParseIssue(kind={:?}, offset={}, char_offset={}, message={:?})",
            self.kind, self.offset, self.char_offset, self.message
        )
    }
}

impl From<&core::ParseIssue> for PyParseIssue {
    fn from(i: &core::ParseIssue) -> Self {
        PyParseIssue {
            kind: i.kind.as_str(),
            offset: i.offset,
            char_offset: i.char_offset,
            message: i.message.clone(),
        }
    }
}

/// Everything extracted from one output.
#[pyclass(name = "ParseResult", module = "hermes_env._core", frozen)]
pub struct PyParseResult {
    content: Option<Py<PyString>>,
    tool_calls: Vec<Py<PyToolCall>>,
    issues: Vec<Py<PyParseIssue>>,
    issues_omitted: usize,
}

impl PyParseResult {
    fn build(py: Python<'_>, r: &core::ParseResult) -> PyResult<Self> {
        let content = r.content.as_deref().map(|c| PyString::new(py, c).unbind());
        Self::build_with_content(py, r, content)
    }

    fn build_with_content(py: Python<'_>, r: &core::ParseResult, content: Option<Py<PyString>>) -> PyResult<Self> {
        let tool_calls = r
            .tool_calls
            .iter()
            .map(|c| {
                Py::new(
                    py,
                    PyToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    },
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        let issues = r
            .issues
            .iter()
            .map(|i| Py::new(py, PyParseIssue::from(i)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyParseResult {
            content,
            tool_calls,
            issues,
            issues_omitted: r.issues_omitted,
        })
    }
}

#[pymethods]
impl PyParseResult {
    /// Build a result by hand (tests, replays); parsers build theirs.
    #[new]
    #[pyo3(signature = (content=None, tool_calls=Vec::new(), issues=Vec::new(), issues_omitted=0))]
    fn new(
        content: Option<Py<PyString>>,
        tool_calls: Vec<Py<PyToolCall>>,
        issues: Vec<Py<PyParseIssue>>,
        issues_omitted: usize,
    ) -> Self {
        PyParseResult {
            content,
            tool_calls,
            issues,
            issues_omitted,
        }
    }

    #[allow(clippy::type_complexity)]
    fn __getnewargs__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Option<Py<PyString>>, Bound<'py, PyList>, Bound<'py, PyList>, usize)> {
        Ok((
            self.content(py),
            self.tool_calls(py)?,
            self.issues(py)?,
            self.issues_omitted,
        ))
    }

    /// Issues found after the first `MAX_ISSUES` (counted, not stored in `issues`).
    #[getter]
    fn issues_omitted(&self) -> usize {
        self.issues_omitted
    }

    /// Text outside calls, or None.
    #[getter]
    fn content(&self, py: Python<'_>) -> Option<Py<PyString>> {
        self.content.as_ref().map(|c| c.clone_ref(py))
    }

    #[getter]
    fn tool_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.tool_calls.iter().map(|c| c.clone_ref(py)))
    }

    #[getter]
    fn issues<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.issues.iter().map(|c| c.clone_ref(py)))
    }

    #[getter]
    fn tools_called(&self) -> bool {
        !self.tool_calls.is_empty()
    }

    /// The OpenAI assistant message: `{"role", "content", "tool_calls"?}` (`tool_calls` only
    /// when there are calls, as OpenAI's API returns it).
    fn to_message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("role", "assistant")?;
        d.set_item("content", self.content(py))?;
        if !self.tool_calls.is_empty() {
            let calls = PyList::empty(py);
            for c in &self.tool_calls {
                let c = c.get();
                calls.append(call_dict(py, &c.id, &c.name, &c.arguments)?)?;
            }
            d.set_item("tool_calls", calls)?;
        }
        Ok(d)
    }

    /// Equal when content, call names and arguments, and issues are equal (not the random ids).
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.cast::<PyParseResult>() else {
            return Ok(false);
        };
        let o = o.get();
        let content_eq = match (&self.content, &o.content) {
            (None, None) => true,
            (Some(a), Some(b)) => a.bind(py).as_any().eq(b.bind(py))?,
            _ => false,
        };
        let calls_eq = self.tool_calls.len() == o.tool_calls.len()
            && self.tool_calls.iter().zip(&o.tool_calls).all(|(a, b)| {
                let (a, b) = (a.get(), b.get());
                a.name == b.name && a.arguments == b.arguments
            });
        let issues_eq = self.issues_omitted == o.issues_omitted
            && self.issues.len() == o.issues.len()
            && self.issues.iter().zip(&o.issues).all(|(a, b)| a.get() == b.get());
        Ok(content_eq && calls_eq && issues_eq)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let calls: Vec<String> = self.tool_calls.iter().map(|c| c.get().__repr__()).collect();
        let issues: Vec<String> = self.issues.iter().map(|c| c.get().__repr__()).collect();
        let content = match &self.content {
            Some(c) => c.bind(py).repr()?.to_string(),
            None => "None".to_owned(),
        };
        let omitted = match self.issues_omitted {
            0 => String::new(),
            n => format!(", issues_omitted={n}"),
        };
        Ok(format!(
            "ParseResult(content={content}, tool_calls=[{}], issues=[{}]{omitted})",
            calls.join(", "),
            issues.join(", ")
        ))
    }
}

/// Plain text for the message's `content`.
#[pyclass(name = "ContentDelta", module = "hermes_env._core", frozen, get_all, eq)]
#[derive(PartialEq)]
pub struct PyContentDelta {
    text: String,
}

#[pymethods]
impl PyContentDelta {
    #[new]
    fn new(text: String) -> Self {
        PyContentDelta { text }
    }
    /// `choices[0].delta` of an OpenAI streaming chunk.
    fn to_openai_delta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("content", &self.text)?;
        Ok(d)
    }
    fn __repr__(&self) -> String {
        format!("ContentDelta({:?})", self.text)
    }
    fn __getnewargs__(&self) -> (String,) {
        (self.text.clone(),)
    }

    #[classattr]
    fn __match_args__() -> (&'static str,) {
        ("text",)
    }
}

/// A call begins (once per call, before its arguments).
#[pyclass(name = "ToolCallStart", module = "hermes_env._core", frozen, get_all)]
pub struct PyToolCallStart {
    index: usize,
    id: String,
    name: String,
}

#[pymethods]
impl PyToolCallStart {
    #[new]
    fn new(index: usize, id: String, name: String) -> Self {
        PyToolCallStart { index, id, name }
    }
    fn to_openai_delta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let call = call_dict(py, &self.id, &self.name, "")?;
        call.set_item("index", self.index)?;
        tool_calls_delta(py, call)
    }
    /// Equal when index and name are equal (ids are random per stream).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyToolCallStart>()
            .map(|o| o.get().index == self.index && o.get().name == self.name)
            .unwrap_or(false)
    }
    fn __repr__(&self) -> String {
        format!(
            "ToolCallStart(index={}, id={:?}, name={:?})",
            self.index, self.id, self.name
        )
    }
    fn __getnewargs__(&self) -> (usize, String, String) {
        (self.index, self.id.clone(), self.name.clone())
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str) {
        ("index", "id", "name")
    }
}

fn tool_calls_delta<'py>(py: Python<'py>, call: Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("tool_calls", PyList::new(py, [call])?)?;
    Ok(d)
}

/// The next piece of call `index`'s arguments.
#[pyclass(name = "ToolCallArgsDelta", module = "hermes_env._core", frozen, get_all, eq)]
#[derive(PartialEq)]
pub struct PyToolCallArgsDelta {
    index: usize,
    text: String,
}

#[pymethods]
impl PyToolCallArgsDelta {
    #[new]
    fn new(index: usize, text: String) -> Self {
        PyToolCallArgsDelta { index, text }
    }
    fn to_openai_delta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let func = PyDict::new(py);
        func.set_item("arguments", &self.text)?;
        let call = PyDict::new(py);
        call.set_item("index", self.index)?;
        call.set_item("function", func)?;
        tool_calls_delta(py, call)
    }
    fn __repr__(&self) -> String {
        format!("ToolCallArgsDelta(index={}, text={:?})", self.index, self.text)
    }
    fn __getnewargs__(&self) -> (usize, String) {
        (self.index, self.text.clone())
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("index", "text")
    }
}

/// Call `index` is complete.
#[pyclass(name = "ToolCallEnd", module = "hermes_env._core", frozen, get_all, eq)]
#[derive(PartialEq)]
pub struct PyToolCallEnd {
    index: usize,
}

#[pymethods]
impl PyToolCallEnd {
    #[new]
    fn new(index: usize) -> Self {
        PyToolCallEnd { index }
    }
    /// OpenAI's stream has no end-of-call delta: an empty delta (the call ends implicitly).
    fn to_openai_delta<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        PyDict::new(py)
    }
    fn __repr__(&self) -> String {
        format!("ToolCallEnd(index={})", self.index)
    }
    fn __getnewargs__(&self) -> (usize,) {
        (self.index,)
    }

    #[classattr]
    fn __match_args__() -> (&'static str,) {
        ("index",)
    }
}

fn event_to_py(py: Python<'_>, e: Event) -> PyResult<Py<PyAny>> {
    Ok(match e {
        Event::Content(text) => Py::new(py, PyContentDelta { text })?.into_any(),
        Event::ToolCallStart { index, id, name } => Py::new(py, PyToolCallStart { index, id, name })?.into_any(),
        Event::ToolCallArgsDelta { index, text } => Py::new(py, PyToolCallArgsDelta { index, text })?.into_any(),
        Event::ToolCallEnd { index } => Py::new(py, PyToolCallEnd { index })?.into_any(),
    })
}

fn events_to_list<'py>(py: Python<'py>, events: &mut Vec<Event>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for e in events.drain(..) {
        list.append(event_to_py(py, e)?)?;
    }
    Ok(list)
}

/// A Python str as UTF-8, its length in code points, and where lone surrogates were replaced
/// with U+FFFD: `(byte offset, char offset)` of the first `MAX_ISSUES`, and how many more.
struct Text<'a> {
    text: Cow<'a, str>,
    chars: usize,
    replaced: Vec<(usize, usize)>,
    more_replaced: usize,
}

fn text_of<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    let chars = s.len()?;
    if let Ok(t) = s.to_str() {
        return Ok(Text {
            text: Cow::Borrowed(t),
            chars,
            replaced: Vec::new(),
            more_replaced: 0,
        });
    }
    // Lone surrogates: "surrogatepass" encodes each as ED A0..BF xx; U+FFFD is EF BF BD, the
    // same length, so byte offsets of everything else stay exact.
    let bytes = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
    let mut bytes: Vec<u8> = bytes.extract()?;
    let mut replaced = Vec::new();
    let mut more_replaced = 0;
    let mut i = 0;
    let mut chars_before = 0;
    let mut counted_to = 0;
    while i + 2 < bytes.len() {
        if bytes[i] == 0xED && (0xA0..=0xBF).contains(&bytes[i + 1]) {
            if replaced.len() < MAX_ISSUES {
                chars_before += count_chars(&bytes[counted_to..i]);
                counted_to = i;
                replaced.push((i, chars_before));
            } else {
                more_replaced += 1;
            }
            bytes[i..i + 3].copy_from_slice("\u{FFFD}".as_bytes());
            i += 3;
        } else {
            i += 1;
        }
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Text {
        text: Cow::Owned(text),
        chars,
        replaced,
        more_replaced,
    })
}

fn report_replaced(stream: &mut Stream, t: &Text<'_>) {
    for &(b, c) in &t.replaced {
        stream.report_ahead(
            IssueKind::InvalidUnicode,
            b,
            c,
            "lone surrogate code point in the text (not valid Unicode); replaced with U+FFFD",
        );
    }
    stream.count_omitted_issues(t.more_replaced);
}

/// Content made of more slices than this is built from its UTF-8 instead.
const MAX_CONTENT_SLICES: usize = 16;

/// Byte spans of `text` as code-point spans (one pass up to the last span's end).
fn char_spans(text: &str, spans: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(spans.len());
    let (mut at_byte, mut at_char) = (0, 0);
    let mut to_char = |b: usize| {
        let b = b.min(bytes.len());
        if b >= at_byte {
            at_char += count_chars(&bytes[at_byte..b]);
        } else {
            at_char -= count_chars(&bytes[b..at_byte]);
        }
        at_byte = b;
        at_char
    };
    for &(a, b) in spans {
        let ca = to_char(a);
        let cb = to_char(b);
        out.push((ca, cb));
    }
    out
}

/// The concatenation of `text[a:b]` for each code-point span.
fn slices_of(text: &Bound<'_, PyString>, spans: &[(usize, usize)]) -> PyResult<Py<PyString>> {
    let py = text.py();
    if let [(a, b)] = spans {
        if *a == 0 && *b == text.len()? {
            return Ok(text.clone().unbind());
        }
    }
    let parts = spans
        .iter()
        .map(|&(a, b)| text.get_item(PySlice::new(py, a as isize, b as isize, 1)))
        .collect::<PyResult<Vec<_>>>()?;
    let joined = PyString::new(py, "").call_method1("join", (parts,))?;
    Ok(joined.cast_into::<PyString>()?.unbind())
}

/// A parser for one format and one request's tools.
#[pyclass(name = "Parser", module = "hermes_env._core", frozen)]
pub struct PyParser {
    inner: core::Parser,
}

#[pymethods]
impl PyParser {
    /// The vLLM `--tool-call-parser` name.
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// Parse a whole model output.
    fn parse(&self, py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<PyParseResult> {
        let t = text_of(text)?;
        let run = |t: &Text<'_>| {
            let mut s = self.inner.stream();
            report_replaced(&mut s, t);
            s.feed_into(&t.text, Some(t.chars), None);
            s.finish_into(None);
            // Content that is a few slices of the input is cut from the caller's str below:
            // a str slice is a memcpy, while building a str from UTF-8 decodes it again.
            let spans = match (&t.text, s.content_spans()) {
                (Cow::Borrowed(_), Some(spans)) if spans.len() <= MAX_CONTENT_SLICES => {
                    Some(char_spans(&t.text, spans))
                }
                _ => None,
            };
            (s.into_result(), spans)
        };
        let (result, spans) = if t.text.len() >= DETACH_BYTES {
            py.detach(|| run(&t))
        } else {
            run(&t)
        };
        let content = match (&result.content, spans) {
            (None, _) => None,
            (Some(_), Some(spans)) => Some(slices_of(text, &spans)?),
            (Some(c), None) => Some(PyString::new(py, c).unbind()),
        };
        PyParseResult::build_with_content(py, &result, content)
    }

    /// A fresh incremental parser for one output.
    fn stream(&self) -> PyParseStream {
        PyParseStream {
            state: Mutex::new(StreamState {
                stream: self.inner.stream(),
                events: Vec::new(),
            }),
        }
    }

    /// The raw text a model would write for `content` followed by `tool_calls` (ToolCall objects
    /// or dicts `{"name", "arguments": dict | str}`, also OpenAI's `{"function": {...}}` shape).
    #[pyo3(signature = (tool_calls, content=None))]
    fn render(&self, py: Python<'_>, tool_calls: &Bound<'_, PyAny>, content: Option<&str>) -> PyResult<String> {
        let calls = calls_from_py(py, tool_calls)?;
        self.inner
            .render(&calls, content)
            .map_err(|e| RenderError::new_err(format!("{} cannot render this: {e}", self.inner.name())))
    }

    fn __repr__(&self) -> String {
        format!("Parser({:?}, tools={})", self.inner.name(), self.inner.tools().len())
    }
}

fn calls_from_py(py: Python<'_>, tool_calls: &Bound<'_, PyAny>) -> PyResult<Vec<ToolCall>> {
    let json = py.import("json")?;
    let mut calls = Vec::new();
    for (i, item) in tool_calls.try_iter()?.enumerate() {
        let item = item?;
        if let Ok(c) = item.cast::<PyToolCall>() {
            let c = c.get();
            calls.push(ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            });
            continue;
        }
        let Ok(d) = item.cast::<PyDict>() else {
            return Err(RenderTypeError::new_err(format!(
                "tool_calls[{i}] is a {}; pass ToolCall objects or dicts {{\"name\": ..., \"arguments\": ...}}",
                item.get_type().name()?
            )));
        };
        let func = match d.get_item("function")? {
            Some(f) => f
                .cast_into::<PyDict>()
                .map_err(|_| RenderTypeError::new_err(format!("tool_calls[{i}][\"function\"] must be a dict")))?,
            None => d.clone(),
        };
        let name: String = func
            .get_item("name")?
            .ok_or_else(|| {
                RenderError::new_err(format!(
                    "tool_calls[{i}] has no \"name\"; pass ToolCall objects or dicts {{\"name\": ..., \"arguments\": ...}}"
                ))
            })?
            .extract()
            .map_err(|_| RenderTypeError::new_err(format!("tool_calls[{i}][\"name\"] must be a str")))?;
        let arguments = match func.get_item("arguments")? {
            None => "{}".to_owned(),
            Some(a) if a.is_instance_of::<PyString>() => a.extract()?,
            Some(a) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item("ensure_ascii", false)?;
                json.call_method("dumps", (a,), Some(&kwargs))?.extract()?
            }
        };
        let id = func
            .get_item("id")?
            .or(d.get_item("id")?)
            .and_then(|v| v.extract().ok())
            .unwrap_or_default();
        calls.push(ToolCall { id, name, arguments });
    }
    Ok(calls)
}

struct StreamState {
    stream: Stream,
    events: Vec<Event>,
}

/// Incremental parser for one output: `feed(delta)` per piece, then `finish()`.
#[pyclass(name = "ParseStream", module = "hermes_env._core")]
pub struct PyParseStream {
    state: Mutex<StreamState>,
}

impl PyParseStream {
    fn state(&mut self) -> PyResult<&mut StreamState> {
        self.state.get_mut().map_err(|_| {
            CoreStateError::new_err(
                "parser stream state is poisoned by an earlier panic; call parser.stream() for a new one",
            )
        })
    }
}

#[pymethods]
impl PyParseStream {
    /// Feed the next piece of output; returns the events it completes (possibly none).
    fn feed<'py>(&mut self, py: Python<'py>, delta: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyList>> {
        let st = self.state()?;
        if st.stream.is_finished() {
            return Err(ParserUsageError::new_err(
                "feed() after finish(): this stream is complete; call parser.stream() for a new output",
            ));
        }
        let t = text_of(delta)?;
        report_replaced(&mut st.stream, &t);
        let StreamState { stream, events } = st;
        stream.feed_into(&t.text, Some(t.chars), Some(events));
        events_to_list(py, events)
    }

    /// End of output: flushes held-back text and closes an unfinished call. Idempotent.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let StreamState { stream, events } = self.state()?;
        stream.finish_into(Some(events));
        events_to_list(py, events)
    }

    /// Everything extracted so far (after `finish()`: equal to `parser.parse(whole_text)`).
    fn result(&mut self, py: Python<'_>) -> PyResult<PyParseResult> {
        let r = self.state()?.stream.result();
        PyParseResult::build(py, &r)
    }

    /// Bytes (UTF-8) fed so far.
    #[getter]
    fn offset(&mut self) -> PyResult<usize> {
        Ok(self.state()?.stream.offset())
    }

    #[getter]
    fn finished(&mut self) -> PyResult<bool> {
        Ok(self.state()?.stream.is_finished())
    }
}

/// How `detect_parser` recognises a format (see `hermes_core::parsers::Detection`).
#[pyclass(name = "Detection", module = "hermes_env._core", frozen, get_all)]
pub struct PyDetection {
    rank: u8,
    looks_for: &'static str,
    markers: Vec<Vec<&'static str>>,
    template: Vec<Vec<&'static str>>,
}

#[pymethods]
impl PyDetection {
    fn __repr__(&self) -> String {
        format!("Detection(rank={}, looks_for={:?})", self.rank, self.looks_for)
    }
}

/// What is known about the format a parser name reads, besides how to parse it (see
/// `hermes_core::parsers::FormatInfo`).
#[pyclass(name = "ParserInfo", module = "hermes_env._core", frozen, get_all)]
pub struct PyParserInfo {
    name: String,
    format: &'static str,
    special_tokens: Vec<&'static str>,
    text_markup: Vec<&'static str>,
    call_syntax: &'static str,
    call_ids: bool,
    detection: Option<Py<PyDetection>>,
}

#[pymethods]
impl PyParserInfo {
    /// Every marker and keyword the format may consume: its special tokens, then its text markup.
    #[getter]
    fn markup(&self) -> Vec<&'static str> {
        self.special_tokens.iter().chain(&self.text_markup).copied().collect()
    }

    fn __repr__(&self) -> String {
        format!("ParserInfo(name='{}', format='{}')", self.name, self.format)
    }
}

/// The facts about the format parser `name` reads (an alias: its format's). Unknown name:
/// `UnknownParserError` (a ValueError) listing the available names.
#[pyfunction]
fn parser_info(py: Python<'_>, name: &str) -> PyResult<PyParserInfo> {
    let Some(info) = core::parser_info(name) else {
        return Err(unknown_parser(core::UnknownParserError {
            name: name.to_owned(),
            available: core::list_parsers(),
        }));
    };
    let sets = |sets: &[&'static [&'static str]]| sets.iter().map(|s| s.to_vec()).collect::<Vec<_>>();
    let detection = match info.detection {
        None => None,
        Some(d) => Some(Py::new(
            py,
            PyDetection {
                rank: d.rank,
                looks_for: d.looks_for,
                markers: sets(d.markers),
                template: sets(d.template),
            },
        )?),
    };
    Ok(PyParserInfo {
        name: name.to_owned(),
        format: info.name,
        special_tokens: info.special_tokens.to_vec(),
        text_markup: info.text_markup.to_vec(),
        call_syntax: info.calls.as_str(),
        call_ids: info.call_ids,
        detection,
    })
}

/// The parser name whose markers `text` carries (the first marker of a known format decides),
/// or None: what the `auto` parser would parse `text` as.
#[pyfunction]
fn guess_parser(text: &Bound<'_, PyString>) -> PyResult<Option<&'static str>> {
    Ok(core::guess_parser(&text_of(text)?.text))
}

/// Names of all parsers (vLLM `--tool-call-parser` names), sorted.
#[pyfunction]
fn list_parsers() -> Vec<&'static str> {
    core::list_parsers()
}

/// The parser `name` for a request with `tools` (OpenAI tool schemas: a list of dicts or its
/// JSON text; None for no tools). Unknown name: `UnknownParserError` (a ValueError) listing the
/// available names; tools that are not tool schemas: `ToolSchemaError`.
/// `calls_after_prose=False`: pythonic formats take a call list only at the start of the
/// output, as vLLM does (by default a list of the request's tools after prose is a call list).
#[pyfunction]
#[pyo3(signature = (name, tools=None, *, calls_after_prose=true))]
fn get_parser(
    py: Python<'_>,
    name: &str,
    tools: Option<&Bound<'_, PyAny>>,
    calls_after_prose: bool,
) -> PyResult<PyParser> {
    let tools = match tools {
        None => Tools::none(),
        Some(t) if t.is_none() => Tools::none(),
        Some(t) => {
            let text: String = if t.is_instance_of::<PyString>() {
                t.extract()?
            } else {
                py.import("json")?
                    .call_method1("dumps", (t,))
                    .and_then(|text| text.extract())
                    .map_err(|e: PyErr| {
                        ToolSchemaError::new_err(format!("tools must be JSON-serialisable OpenAI tool schemas: {e}"))
                    })?
            };
            Tools::from_json(&text).map_err(|e| ToolSchemaError::new_err(e.to_string()))?
        }
    };
    let options = core::ParserOptions { calls_after_prose };
    let inner = core::get_parser_with(name, tools, options).map_err(unknown_parser)?;
    Ok(PyParser { inner })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyToolCall>()?;
    m.add_class::<PyParseIssue>()?;
    m.add_class::<PyParseResult>()?;
    m.add_class::<PyContentDelta>()?;
    m.add_class::<PyToolCallStart>()?;
    m.add_class::<PyToolCallArgsDelta>()?;
    m.add_class::<PyToolCallEnd>()?;
    m.add_class::<PyParser>()?;
    m.add_class::<PyParseStream>()?;
    m.add_class::<PyParserInfo>()?;
    m.add_class::<PyDetection>()?;
    m.add_function(wrap_pyfunction!(list_parsers, m)?)?;
    m.add_function(wrap_pyfunction!(get_parser, m)?)?;
    m.add_function(wrap_pyfunction!(guess_parser, m)?)?;
    m.add_function(wrap_pyfunction!(parser_info, m)?)?;
    m.add("MAX_ISSUES", MAX_ISSUES)?;
    m.add(
        "ISSUE_KINDS",
        IssueKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
    )?;
    Ok(())
}
