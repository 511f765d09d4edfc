//! Properties every registered parser keeps (the Rust side of tests/parsers/): no panic on any
//! input, split invariance (any chunking gives the same events' concatenations and the same
//! result as `parse`), render/parse round trip, deep nesting.
#![allow(clippy::unwrap_used)]

use hermes_core::parsers::{get_parser, list_parsers, Event, ParseResult, Parser, ToolCall, Tools};
use proptest::prelude::*;

/// Feed `text` cut at `cuts` (byte offsets, moved to char boundaries); returns events and result.
fn run(parser: &Parser, text: &str, cuts: &[usize]) -> (Vec<Event>, ParseResult) {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c.min(text.len());
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    let mut s = parser.stream();
    let mut events = Vec::new();
    for w in points.windows(2) {
        events.extend(s.feed(&text[w[0]..w[1]]));
    }
    events.extend(s.finish());
    (events, s.result())
}

/// The parsers' streaming invariants.
fn check_events(events: &[Event], r: &ParseResult) {
    let mut content = String::new();
    let mut args: Vec<String> = Vec::new();
    let mut open: Option<usize> = None;
    for e in events {
        match e {
            Event::Content(t) => content.push_str(t),
            Event::ToolCallStart { index, id, name } => {
                assert_eq!(*index, args.len(), "starts in index order");
                assert!(open.is_none(), "start while call {open:?} is open");
                assert_eq!(&r.tool_calls[*index].id, id);
                assert_eq!(&r.tool_calls[*index].name, name);
                args.push(String::new());
                open = Some(*index);
            }
            Event::ToolCallArgsDelta { index, text } => {
                assert_eq!(open, Some(*index), "arguments only inside start..end");
                args[*index].push_str(text);
            }
            Event::ToolCallEnd { index } => {
                assert_eq!(open, Some(*index));
                open = None;
            }
        }
    }
    assert!(open.is_none(), "finish closes the open call");
    assert_eq!(content, r.content.clone().unwrap_or_default());
    assert_eq!(args.len(), r.tool_calls.len());
    for (a, c) in args.iter().zip(&r.tool_calls) {
        assert_eq!(a, &c.arguments);
    }
}

fn parsers() -> Vec<Parser> {
    list_parsers()
        .into_iter()
        .map(|n| get_parser(n, Tools::none()).unwrap())
        .collect()
}

/// Tool names for generated calls; every tool takes the same typed parameters, so formats whose
/// values are untyped text (qwen3_coder, glm) convert them back by schema.
const TOOL_NAMES: &[&str] = &["read_file", "write_file", "terminal", "web_search", "todo"];

fn typed_parsers() -> Vec<Parser> {
    let tools: Vec<serde_json::Value> = TOOL_NAMES
        .iter()
        .map(|n| {
            serde_json::json!({"type": "function", "function": {"name": n, "parameters": {"type": "object",
                "properties": {"s": {"type": "string"}, "n": {"type": "integer"}, "nested": {"type": "object"}}}}})
        })
        .collect();
    let tools = Tools::from_value(&serde_json::Value::Array(tools)).unwrap();
    list_parsers()
        .into_iter()
        .map(|n| get_parser(n, tools.clone()).unwrap())
        .collect()
}

/// Pieces that exercise every parser's markers, JSON states and UTF-8 handling.
const FRAGMENTS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<longcat_tool_call>",
    "</longcat_tool_call>",
    "<tool_",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\u00e9",
    "\"name\"",
    "\"arguments\"",
    ":",
    ",",
    " ",
    "\n",
    "x",
    "1",
    "-2.5e3",
    "true",
    "null",
    "é",
    "😀",
    "中",
    "<",
    ">",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "<function=f>",
    "<parameter=a>",
    "</parameter>",
    "</function>",
    "<｜tool▁calls▁begin｜>",
    "<|tool_calls_section_begin|>",
    "<arg_key>",
    "<arg_value>",
];

fn fragment_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic_and_split_invariant(
        text in "\\PC{0,80}",
        cuts in prop::collection::vec(0usize..100, 0..8),
    ) {
        for p in parsers() {
            let whole = p.parse(&text);
            let (events, r) = run(&p, &text, &cuts);
            check_events(&events, &r);
            prop_assert!(r.same_as(&whole), "{}: {:?} vs {:?}", p.name(), r, whole);
        }
    }

    #[test]
    fn marker_soup_split_invariant(
        text in fragment_text(),
        cuts in prop::collection::vec(0usize..400, 0..12),
    ) {
        for p in parsers() {
            let whole = p.parse(&text);
            let (events, r) = run(&p, &text, &cuts);
            check_events(&events, &r);
            prop_assert!(r.same_as(&whole), "{}: {:?} vs {:?}", p.name(), r, whole);
            if r.tool_calls.is_empty() {
                // Nothing was taken for a call: every non-whitespace char is content.
                let nonws = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
                prop_assert_eq!(nonws(r.content.as_deref().unwrap_or("")), nonws(&text));
            }
        }
    }

    #[test]
    fn render_parse_round_trip(
        content in "[^<]{0,20}",
        calls in prop::collection::vec((prop::sample::select(TOOL_NAMES), "\\PC{0,20}", any::<i64>()), 0..4),
        cuts in prop::collection::vec(0usize..300, 0..6),
    ) {
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .map(|(name, s, n)| ToolCall {
                id: String::new(),
                name: name.to_owned(),
                arguments: serde_json::json!({"s": s, "n": n, "nested": {"end": "</tool_call>"}}).to_string(),
            })
            .collect();
        for p in typed_parsers() {
            let content = if content.is_empty() { None } else { Some(content.as_str()) };
            let Ok(text) = p.render(&calls, content) else { continue };
            let (events, r) = run(&p, &text, &cuts);
            check_events(&events, &r);
            prop_assert_eq!(r.content.as_deref(), content, "{}", p.name());
            prop_assert_eq!(r.tool_calls.len(), calls.len());
            for (a, b) in r.tool_calls.iter().zip(&calls) {
                prop_assert_eq!(&a.name, &b.name);
                let va: serde_json::Value = serde_json::from_str(&a.arguments).unwrap();
                let vb: serde_json::Value = serde_json::from_str(&b.arguments).unwrap();
                prop_assert_eq!(va, vb);
            }
            prop_assert!(r.issues.is_empty(), "{}: {:?}", p.name(), r.issues);
        }
    }
}

/// Every two-piece split of a realistic output gives the same result (jiter's every-prefix
/// pattern applied to streaming).
#[test]
fn every_split_point_same_result() {
    let text = "Let me look. é😀\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a</tool_call>b\", \
                \"n\": [1, -2.5e3, {\"k\": \"\\u00e9\\\"\"}]}}\n</tool_call>\n<tool_call>\n{\"arguments\": {}, \"name\": \"x\"}}\n\
                </tool_call>\ntrailing <tool_call>{\"name\": \"cut\", \"arguments\": {\"q\": \"abc";
    let p = get_parser("hermes", Tools::none()).unwrap();
    let whole = p.parse(text);
    assert_eq!(whole.tool_calls.len(), 3);
    for cut in 0..=text.len() {
        if !text.is_char_boundary(cut) {
            continue;
        }
        let (events, r) = run(&p, text, &[cut]);
        check_events(&events, &r);
        assert!(r.same_as(&whole), "cut at {cut}: {r:?}");
    }
    let all: Vec<usize> = (0..text.len()).collect();
    let (events, r) = run(&p, text, &all);
    check_events(&events, &r);
    assert!(r.same_as(&whole));
}

#[test]
fn hundred_thousand_levels_of_nesting() {
    let depth = 100_000;
    let args = "[".repeat(depth) + &"]".repeat(depth);
    let text = format!("<tool_call>{{\"name\": \"deep\", \"arguments\": {{\"a\": {args}}}}}</tool_call>");
    for p in parsers() {
        let r = p.parse(&text);
        if p.name() == "hermes" {
            assert_eq!(r.tool_calls.len(), 1);
            assert_eq!(r.tool_calls[0].arguments.len(), args.len() + 7);
            assert!(r.issues.is_empty());
        }
        let unclosed = format!(
            "<tool_call>{{\"name\": \"deep\", \"arguments\": {}",
            "{\"a\":".repeat(depth)
        );
        let r = p.parse(&unclosed);
        let _ = r.issues.len();
    }
}

#[test]
fn issues_carry_kind_and_offset() {
    let p = get_parser(
        "hermes",
        Tools::from_json(r#"[{"type":"function","function":{"name":"ok"}}]"#).unwrap(),
    )
    .unwrap();
    let text = "é<tool_call>{\"name\": \"nope\", \"arguments\": {\"a\": 1,}}</tool_call>";
    let r = p.parse(text);
    let kinds: Vec<&str> = r.issues.iter().map(|i| i.kind.as_str()).collect();
    assert_eq!(kinds, ["unknown_tool", "malformed_json"]);
    let bad = &r.issues[1];
    assert_eq!(&text[bad.offset..bad.offset + 1], "}");
    assert_eq!(bad.char_offset, text[..bad.offset].chars().count());
    assert_eq!(r.tool_calls[0].arguments, "{\"a\": 1,}}");
}

/// Positions of text held back across chunks (a marker split between feeds) stay exact.
#[test]
fn positions_of_held_text_are_exact() {
    let tools = Tools::from_json(r#"[{"type":"function","function":{"name":"ok"}}]"#).unwrap();
    let p = get_parser("hermes", tools).unwrap();
    let text = "éé😀<tool_call>{\"name\":\"zz\",\"arguments\":{}}</tool_call>";
    let whole = p.parse(text);
    assert_eq!(whole.issues.len(), 1);
    let issue = &whole.issues[0];
    assert_eq!((issue.offset, issue.char_offset), (8, 3));
    for cut in (0..=text.len()).filter(|&c| text.is_char_boundary(c)) {
        let (_, r) = run(&p, text, &[cut, cut + 3]);
        assert_eq!(r.issues, whole.issues, "cut at {cut}");
    }
}
