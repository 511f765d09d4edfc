//! Helpers for the format unit tests: run a parser over every chunking of a text and check the
//! streaming invariants against `parse`.
#![allow(clippy::unwrap_used)]

use crate::parsers::{get_parser, Event, ParseResult, Parser, Tools};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};

/// The tools the format tests use: typed parameters of the kinds the XML formats convert.
pub const TOOLS: &str = r#"[
  {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {
     "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": ["integer", "null"]}}}}},
  {"type": "function", "function": {"name": "terminal", "parameters": {"type": "object", "properties": {
     "command": {"type": "string"}, "timeout": {"type": "number"}, "force": {"type": "boolean"},
     "env": {"type": "object"}, "args": {"type": "array"}}}}},
  {"type": "function", "function": {"name": "list_processes", "parameters": {"type": "object", "properties": {}}}}
]"#;

pub fn parser(name: &str) -> Parser {
    get_parser(name, Tools::from_json(TOOLS).unwrap()).unwrap()
}

/// Feed `text` in the pieces between `cuts` (char boundaries) and return the events and result.
pub fn run(p: &Parser, text: &str, cuts: &[usize]) -> (Vec<Event>, ParseResult) {
    let mut s = p.stream();
    let mut events = Vec::new();
    let mut last = 0;
    for &c in cuts.iter().chain(std::iter::once(&text.len())) {
        if c < last || !text.is_char_boundary(c) {
            continue;
        }
        events.extend(s.feed(&text[last..c]));
        last = c;
    }
    events.extend(s.finish());
    (events, s.result())
}

/// Concatenated content and per-call arguments from events, checking their order rules.
pub fn check_events(events: &[Event], r: &ParseResult) {
    let mut content = String::new();
    let mut args: Vec<String> = Vec::new();
    let mut open = None;
    for e in events {
        match e {
            Event::Content(t) => content.push_str(t),
            Event::ToolCallStart { index, name, .. } => {
                assert!(open.is_none());
                assert_eq!(*index, args.len());
                assert_eq!(&r.tool_calls[*index].name, name);
                args.push(String::new());
                open = Some(*index);
            }
            Event::ToolCallArgsDelta { index, text } => {
                assert_eq!(open, Some(*index));
                args[*index].push_str(text);
            }
            Event::ToolCallEnd { index } => {
                assert_eq!(open, Some(*index));
                open = None;
            }
        }
    }
    assert!(open.is_none());
    assert_eq!(content, r.content.clone().unwrap_or_default());
    assert_eq!(args.len(), r.tool_calls.len());
    for (a, c) in args.iter().zip(&r.tool_calls) {
        assert_eq!(a, &c.arguments);
    }
}

/// Parse `text` whole, then streamed cut at every single point and one character at a time; all
/// must agree. Returns the whole-text result.
pub fn every_split(name: &str, text: &str) -> ParseResult {
    every_split_of(&parser(name), name, text)
}

fn every_split_of(p: &Parser, name: &str, text: &str) -> ParseResult {
    let whole = p.parse(text);
    for cut in 0..=text.len() {
        if text.is_char_boundary(cut) {
            let (events, r) = run(p, text, &[cut]);
            check_events(&events, &r);
            assert!(r.same_as(&whole), "{name}: cut at {cut}:\n{r:?}\nvs\n{whole:?}");
        }
    }
    let all: Vec<usize> = (1..text.len()).collect();
    let (events, r) = run(p, text, &all);
    check_events(&events, &r);
    assert!(r.same_as(&whole), "{name}: one char at a time:\n{r:?}\nvs\n{whole:?}");
    whole
}

/// `r` took no call from `text` and kept all of it as content.
pub fn assert_all_content(r: &ParseResult, text: &str) {
    assert!(r.tool_calls.is_empty(), "{text:?}: {r:?}");
    assert_eq!(r.content.as_deref(), Some(text));
}

/// The arguments of call `i` as a JSON value.
pub fn args(r: &ParseResult, i: usize) -> serde_json::Value {
    serde_json::from_str(&r.tool_calls[i].arguments).unwrap()
}

/// Issue kinds, in order.
pub fn kinds(r: &ParseResult) -> Vec<&'static str> {
    r.issues.iter().map(|i| i.kind.as_str()).collect()
}

/// Every prefix of `text` (a truncated output), fed in two pieces cut at `cut(prefix_len)`:
/// no panic, events in order, same result as `parse`. `check` sees each prefix's result.
pub fn every_prefix(name: &str, text: &str, cut: fn(usize) -> usize, mut check: impl FnMut(usize, &ParseResult)) {
    let p = parser(name);
    for end in (0..=text.len()).filter(|&e| text.is_char_boundary(e)) {
        let prefix = &text[..end];
        let (events, r) = run(&p, prefix, &[cut(end)]);
        check_events(&events, &r);
        assert!(r.same_as(&p.parse(prefix)), "{name}: prefix {end} streamed differs");
        check(end, &r);
    }
}

/// Strings made of `fragments` (markers, values, text), for marker-soup properties.
pub fn soup(fragments: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(fragments), 0..40).prop_map(|v| v.concat())
}

/// The marker-soup property: `text` cut at `cuts` streams to the same result as `parse`, events
/// in order, and every call's arguments are JSON.
pub fn soup_holds(name: &str, text: &str, mut cuts: Vec<usize>) -> Result<ParseResult, TestCaseError> {
    let p = parser(name);
    let whole = p.parse(text);
    cuts.sort_unstable();
    let (events, r) = run(&p, text, &cuts);
    check_events(&events, &r);
    prop_assert!(r.same_as(&whole), "{:?}\n{:?}\n{:?}", text, r, whole);
    for c in &r.tool_calls {
        prop_assert!(
            serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok(),
            "{:?}",
            c.arguments
        );
    }
    Ok(whole)
}

/// The typed formats' marker-soup property: texts made of `fragments` (256 cases), cut
/// anywhere, keep [`soup_holds`]'s invariants for parser `name` with [`TOOLS`].
#[track_caller]
pub fn marker_soup(name: &str, fragments: &'static [&'static str]) {
    run_soup(fragments, 256, 10, |text, cuts| soup_holds(name, text, cuts).map(drop));
}

/// Run `check` over marker soups of `fragments` with up to `max_cuts` cuts. Failure seeds are
/// kept next to the calling test's file, as `proptest!` keeps them.
#[track_caller]
fn run_soup(
    fragments: &'static [&'static str],
    cases: u32,
    max_cuts: usize,
    check: impl Fn(&str, Vec<usize>) -> Result<(), TestCaseError>,
) {
    let config = ProptestConfig {
        cases,
        source_file: Some(std::panic::Location::caller().file()),
        ..ProptestConfig::default()
    };
    let strategy = (soup(fragments), prop::collection::vec(0usize..300, 0..max_cuts));
    if let Err(e) = TestRunner::new(config).run(&strategy, |(text, cuts)| check(&text, cuts)) {
        panic!("{e}");
    }
}

/// The same checks for a parser built without tools (the JSON formats' tests: no typed values,
/// no unknown-tool issues).
pub mod untyped {
    use super::{check_events, run};
    use crate::parsers::{get_parser, ParseResult, Parser, Tools};

    pub use super::assert_all_content;

    pub fn parser(name: &str) -> Parser {
        get_parser(name, Tools::none()).unwrap()
    }

    /// [`super::every_split`] without tools.
    pub fn every_split(name: &str, text: &str) -> ParseResult {
        super::every_split_of(&parser(name), name, text)
    }

    /// The marker-soup property of the `names` parsers: texts made of `fragments` (200 cases),
    /// cut anywhere, keep [`soup_holds`]'s invariants.
    #[track_caller]
    pub fn marker_soup(names: &[&str], fragments: &'static [&'static str]) {
        super::run_soup(fragments, 200, 8, |text, cuts| {
            for name in names {
                soup_holds(name, text, &cuts);
            }
            Ok(())
        });
    }

    /// The invariants every format keeps on any input: no panic, events in order, split
    /// invariance, nothing lost when no call was taken.
    pub fn soup_holds(name: &str, text: &str, cuts: &[usize]) {
        let p = parser(name);
        let whole = p.parse(text);
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(text.len())).collect();
        cuts.sort_unstable();
        let (events, r) = run(&p, text, &cuts);
        check_events(&events, &r);
        assert!(
            r.same_as(&whole),
            "{name}: {text:?} cut at {cuts:?}: {r:?} vs {whole:?}"
        );
        if whole.tool_calls.is_empty() {
            let nonws = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            assert_eq!(
                nonws(whole.content.as_deref().unwrap_or("")),
                nonws(text),
                "{name}: text lost"
            );
        }
    }
}
