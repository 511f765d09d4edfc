//! Lanes (see `parsers::lane`): the driver passes text inside argument strings on without calling
//! the format. These tests check that every format with string arguments opens one on a long
//! argument, that streaming through lanes gives exactly the events and result of `parse` at every
//! chunk size, and that a lane hands its state (after a backslash, a held newline) back to the
//! format when a chunk is refused.
#![allow(clippy::unwrap_used)]

use hermes_core::parsers::{get_parser, list_parsers, Event, IssueKind, Lane, ParseResult, Parser, ToolCall, Tools};

fn tools() -> Tools {
    let tool = serde_json::json!([{"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}]);
    Tools::from_value(&tool).unwrap()
}

/// A code-like argument: escapes of every simple kind, a control byte, non-ASCII, `<`, newlines
/// (one at the end, which XML formats treat as framing only when it is the value's last).
const CODE: &str =
    "def f(x):\n\treturn {\"k\": 'it\\'s', \"p\": r'C:\\\\tmp'}  # é😀 中 a < b\n\u{1}\u{8}\u{c}\rend/\n";

fn calls() -> Vec<ToolCall> {
    let args = serde_json::json!({"path": "src/a.py", "content": CODE.repeat(4)});
    let call = ToolCall {
        id: String::new(),
        name: "write_file".into(),
        arguments: args.to_string(),
    };
    vec![call.clone(), call]
}

/// Feed `text` in pieces of `size` bytes (moved to char boundaries); events, result and whether
/// a lane was open after some feed.
fn stream(p: &Parser, text: &str, size: usize) -> (Vec<Event>, ParseResult, bool) {
    let mut s = p.stream();
    let mut events = Vec::new();
    let mut laned = false;
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events.extend(s.feed(&text[at..end]));
        laned |= s.lane() != Lane::Off;
        at = end;
    }
    events.extend(s.finish());
    (events, s.result(), laned)
}

/// Concatenated content and per-call argument text of `events`.
fn spelled(events: &[Event]) -> (String, Vec<String>) {
    let mut content = String::new();
    let mut args: Vec<String> = Vec::new();
    for e in events {
        match e {
            Event::Content(t) => content.push_str(t),
            Event::ToolCallStart { .. } => args.push(String::new()),
            Event::ToolCallArgsDelta { index, text } => args[*index].push_str(text),
            Event::ToolCallEnd { .. } => {}
        }
    }
    (content, args)
}

#[test]
fn every_format_with_string_arguments_opens_a_lane_and_streams_as_parse() {
    for name in list_parsers() {
        let p = get_parser(name, tools()).unwrap();
        // `auto` writes no format of its own: it reads qwen3_coder's here (its lanes are the
        // format's, opened through auto).
        let writer = get_parser(if name == "auto" { "qwen3_coder" } else { name }, tools()).unwrap();
        // Two calls where the format can write them (internlm writes one per turn).
        let calls = calls();
        let text = writer
            .render(&calls, None)
            .or_else(|_| writer.render(&calls[..1], None))
            .unwrap();
        let whole = p.parse(&text);
        assert!(
            !whole.tool_calls.is_empty() && whole.issues.is_empty(),
            "{name}: {whole:?}"
        );
        for size in 1..=9 {
            let (events, r, laned) = stream(&p, &text, size);
            assert!(r.same_as(&whole), "{name} in {size}-byte chunks: {r:?}\nvs {whole:?}");
            let (content, args) = spelled(&events);
            assert_eq!(content, whole.content.clone().unwrap_or_default(), "{name} {size}");
            let expected: Vec<&str> = whole.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
            assert_eq!(args, expected, "{name} {size}");
            assert!(laned, "{name} {size}: no lane opened");
        }
    }
}

/// Feed `pieces` one by one; the result must equal `parse` of their concatenation, issues (kind
/// and offsets) included.
fn same_as_parse(name: &str, pieces: &[&str]) -> ParseResult {
    let p = get_parser(name, tools()).unwrap();
    let text = pieces.concat();
    let whole = p.parse(&text);
    let mut s = p.stream();
    for piece in pieces {
        s.feed(piece);
    }
    s.finish();
    let r = s.result();
    assert!(r.same_as(&whole), "{name} {pieces:?}: {r:?}\nvs {whole:?}");
    r
}

#[test]
fn a_json_string_lane_hands_an_open_escape_back_to_the_format() {
    let open = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"abcd";
    // The lane takes `ef\`, then refuses `u00e9` (a \u escape is the format's) and `x` (not an
    // escape): the format must know it is right after a backslash.
    let r = same_as_parse("hermes", &[open, "ef\\", "u00e9\"}}\n</tool_call>"]);
    assert!(r.issues.is_empty(), "{r:?}");
    assert_eq!(r.tool_calls[0].arguments, "{\"content\": \"abcdef\\u00e9\"}");
    let r = same_as_parse("hermes", &[open, "ef\\", "x\"}}\n</tool_call>"]);
    assert_eq!(r.issues[0].kind, IssueKind::MalformedJson);
    // The same in an array format and a section format.
    let r = same_as_parse(
        "mistral",
        &[
            "[TOOL_CALLS][{\"name\": \"write_file\", \"arguments\": {\"content\": \"ab",
            "cd\\",
            "\"\"}}]",
        ],
    );
    assert_eq!(r.tool_calls[0].arguments, "{\"content\": \"abcd\\\"\"}");
    // Output cut right after the backslash the lane took: truncated, as in `parse`.
    let r = same_as_parse("hermes", &[open, "ef\\"]);
    assert_eq!(r.issues[0].kind, IssueKind::Truncated);
}

#[test]
fn a_raw_string_lane_hands_a_held_newline_back_to_the_format() {
    let open = "<tool_call>\n<function=write_file>\n<parameter=content>\nline one";
    // `two\n` ends in the value's possible framing newline; the end marker follows in a refused
    // chunk, so the newline is framing; then one where it is not.
    let r = same_as_parse(
        "qwen3_coder",
        &[open, " two\n", "</parameter>\n</function>\n</tool_call>"],
    );
    assert_eq!(r.tool_calls[0].arguments, "{\"content\": \"line one two\"}");
    let r = same_as_parse(
        "qwen3_coder",
        &[open, " two\n", "\n", "x<y\n</parameter>\n</function>\n</tool_call>"],
    );
    assert_eq!(r.tool_calls[0].arguments, "{\"content\": \"line one two\\n\\nx<y\"}");
}

#[test]
fn a_deferring_lane_hands_its_text_to_the_format_at_a_stop_byte_and_at_the_end() {
    let open = "[write_file(path='a.py', content='x = 1";
    // Collected while inside the string; the quote that ends it comes in the last piece.
    let r = same_as_parse("pythonic", &[open, "\\n", "y = 2", "')]"]);
    assert_eq!(
        r.tool_calls[0].arguments,
        "{\"path\": \"a.py\", \"content\": \"x = 1\\ny = 2\"}"
    );
    // Cut inside the string: the collected text reaches the format at finish (kept as content).
    let r = same_as_parse("pythonic", &[open, "\\n", "y = 2"]);
    assert_eq!(r.issues[0].kind, IssueKind::Truncated);
    assert_eq!(
        r.content.as_deref(),
        Some("[write_file(path='a.py', content='x = 1\\ny = 2")
    );
}

#[test]
fn positions_stay_exact_while_text_is_deferred() {
    let p = get_parser("pythonic", tools()).unwrap();
    let mut s = p.stream();
    let pieces = ["[write_file(path='a.py', content='", "é😀", "中x", "yz"];
    for piece in pieces {
        s.feed(piece);
    }
    assert!(matches!(s.lane(), Lane::Defer { .. }));
    s.report_ahead(IssueKind::InvalidUnicode, 1, 1, "after the fed text");
    let fed = pieces.concat();
    let issue = s.result().issues.pop().unwrap();
    assert_eq!(issue.offset, fed.len() + 1);
    assert_eq!(issue.char_offset, fed.chars().count() + 1);
}

#[test]
fn positions_stay_exact_after_text_a_lane_left_uncounted() {
    // Non-ASCII argument text passes in a JSON-string lane (its code points are counted later,
    // in bulk); an issue after it and a report ahead of the next chunk must still be exact.
    let open = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"";
    let r = same_as_parse("hermes", &[open, "é😀中", "x", "é", "\\x\"}}\n</tool_call>"]);
    assert_eq!(r.issues[0].kind, IssueKind::MalformedJson);
    let p = get_parser("hermes", tools()).unwrap();
    let mut s = p.stream();
    for piece in [open, "é😀中", "xé"] {
        s.feed(piece);
    }
    assert!(matches!(s.lane(), Lane::JsonString { .. }));
    s.report_ahead(IssueKind::InvalidUnicode, 0, 0, "ahead");
    let fed = [open, "é😀中", "xé"].concat();
    let issue = s.result().issues.pop().unwrap();
    assert_eq!((issue.offset, issue.char_offset), (fed.len(), fed.chars().count()));
}

mod random {
    //! Random outputs with the bytes lanes decide on (quotes, backslashes, newlines, `<`, `</`,
    //! whitespace, non-ASCII) inside and around calls of every format, fed in small chunks.
    use super::*;
    use proptest::prelude::*;

    /// Argument text: runs of the bytes a lane must stop at, escape, or hold.
    fn arg_text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "a", "bc ", " ", "\n", "\n\n", "\t", "\"", "'", "\\", "\\n", "\\\\", "<", "</", "</p", "<x", ">", "é",
            "😀", "中", "\u{1}", "\r\n", "{", "}", "(", ")", "[", "]", ",", "=", "#", "\"\"\"", "'''", "\u{3000}",
        ]);
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    /// Prose around the calls (may end in whitespace the formats hold).
    fn prose() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!["Hi", " ", "\n", "ok.", "é", "\u{3000}", "\t"]),
            0..8,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn rendered_outputs_stream_as_parse_in_small_chunks(
            content in prose(),
            args in prop::collection::vec((arg_text(), arg_text()), 1..3),
            size in 1usize..10,
            cuts in prop::collection::vec(0usize..2000, 0..6),
        ) {
            let calls: Vec<ToolCall> = args
                .iter()
                .map(|(path, body)| ToolCall {
                    id: String::new(),
                    name: "write_file".into(),
                    arguments: serde_json::json!({"path": path, "content": body}).to_string(),
                })
                .collect();
            for name in list_parsers() {
                let p = get_parser(name, tools()).unwrap();
                let content = (!content.is_empty()).then_some(content.as_str());
                let text = match p.render(&calls, content) {
                    Ok(t) => t,
                    // Formats refuse what they cannot express; the prose alone then.
                    Err(_) => content.unwrap_or("").to_owned(),
                };
                // The output itself, and the output with raw tail text after it.
                for text in [text.clone(), format!("{text}{}", args[0].1)] {
                    let whole = p.parse(&text);
                    let (events, r, _) = stream(&p, &text, size);
                    prop_assert!(r.same_as(&whole), "{} in {}-byte chunks of {:?}:\n{:?}\nvs {:?}", name, size, text, r, whole);
                    let (content, args) = spelled(&events);
                    prop_assert_eq!(content, whole.content.clone().unwrap_or_default());
                    let expected: Vec<String> = whole.tool_calls.iter().map(|c| c.arguments.clone()).collect();
                    prop_assert_eq!(args, expected);
                    // Irregular cuts too.
                    let mut s = p.stream();
                    let mut points: Vec<usize> = cuts.iter().map(|&c| c.min(text.len())).filter(|&c| text.is_char_boundary(c)).collect();
                    points.extend([0, text.len()]);
                    points.sort_unstable();
                    points.dedup();
                    for w in points.windows(2) {
                        s.feed(&text[w[0]..w[1]]);
                    }
                    s.finish();
                    prop_assert!(s.result().same_as(&whole), "{} cut at {:?}", name, points);
                }
            }
        }
    }
}
