//! Unit tests on small hand-written models; `tests/managed/test_tokenization.py` checks the
//! encoder against `tokenizers` itself on real vocabularies.

use serde_json::{json, Value};

use super::config::GPT2_PATTERN;
use super::merges::byte_char;
use super::ByteLevelBpe;

const QWEN2_PATTERN: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn bl(s: &str) -> String {
    s.bytes().map(byte_char).collect()
}

/// A model whose ids 0..256 are the bytes, then one id per merge, in order.
fn model(merges: &[(&str, &str)], pre: Value) -> Value {
    let mut vocab = serde_json::Map::new();
    for b in 0..=255u8 {
        vocab.insert(byte_char(b).to_string(), json!(b));
    }
    let mut list = vec![];
    for (i, (a, b)) in merges.iter().enumerate() {
        vocab.insert(bl(&format!("{a}{b}")), json!(256 + i));
        list.push(json!([bl(a), bl(b)]));
    }
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [
            {"id": 1000, "content": "<|end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 1001, "content": "<|end|>x", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 1002, "content": "<tool>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
        ],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": pre,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": list},
    })
}

fn split_then_bytes(pattern: &str) -> Value {
    json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
    ]})
}

fn encoder(merges: &[(&str, &str)], pre: Value) -> ByteLevelBpe {
    match ByteLevelBpe::from_tokenizer_json(&model(merges, pre).to_string()) {
        Ok(e) => e,
        Err(e) => panic!("unsupported: {e}"),
    }
}

fn pieces(e: &ByteLevelBpe, text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    e.pre_tokenize(text)
        .iter()
        .map(|&(a, b)| chars[a..b].iter().collect())
        .collect()
}

#[test]
fn merges_lowest_rank_first_and_leftmost_among_equals() {
    let mut e = encoder(&[("b", "c"), ("a", "b"), ("a", "a")], split_then_bytes(QWEN2_PATTERN));
    // (b,c) ranks before (a,b): "abc" -> a + bc.
    assert_eq!(e.encode("abc"), Some(vec![b'a' as u32, 256]));
    // "aaa": the leftmost (a,a) merges first.
    assert_eq!(e.encode("aaa"), Some(vec![258, b'a' as u32]));
    assert_eq!(e.encode("aaaa"), Some(vec![258, 258]));
    // Cached pieces give the same ids.
    assert_eq!(
        e.encode("aaa aaa"),
        Some(vec![258, b'a' as u32, b' ' as u32, 258, b'a' as u32])
    );
}

#[test]
fn added_tokens_split_leftmost_longest_raw_before_normalized() {
    let mut e = encoder(&[], split_then_bytes(QWEN2_PATTERN));
    assert_eq!(e.encode("a<|end|>b"), Some(vec![b'a' as u32, 1000, b'b' as u32]));
    assert_eq!(e.encode("<|end|>x<tool>"), Some(vec![1001, 1002]));
    assert_eq!(e.encode("<|end|><|end|>"), Some(vec![1000, 1000]));
}

#[test]
fn lookahead_tail_backs_off_one_space_before_a_word() {
    let e = encoder(&[], split_then_bytes(QWEN2_PATTERN));
    assert_eq!(pieces(&e, "a   b"), ["a", "  ", " b"]);
    assert_eq!(pieces(&e, "a \n  b"), ["a", " \n", " ", " b"]);
    assert_eq!(pieces(&e, "x  "), ["x", "  "]);
    assert_eq!(pieces(&e, "it's  1"), ["it", "'s", " ", " ", "1"]);
    assert_eq!(pieces(&e, "\t\tfoo()"), ["\t", "\tfoo", "()"]);
    let gpt2 = encoder(
        &[],
        json!({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}),
    );
    assert_eq!(pieces(&gpt2, "a   b12  "), ["a", "  ", " b", "12", "  "]);
    assert!(GPT2_PATTERN.ends_with(r"|\s+(?!\S)|\s+"));
}

#[test]
fn only_vouched_non_ascii_characters_are_encoded() {
    let mut e = encoder(&[], split_then_bytes(QWEN2_PATTERN));
    assert_eq!(e.encode("héllo"), None);
    assert_eq!(e.unknown_chars("héllo é"), vec!['é']);
    e.set_char('é', true);
    assert_eq!(e.encode("héllo").map(|v| v.len()), Some(6));
    e.set_char('é', false);
    assert_eq!(e.encode("héllo"), None);
    assert!(e.unknown_chars("héllo").is_empty());
    // A segment NFC would change is left to the reference tokenizer.
    e.set_char('\u{301}', true);
    assert_eq!(e.encode("e\u{301}"), None);
}

#[test]
fn refuses_what_it_does_not_reproduce() {
    let refused = |pre: Value| ByteLevelBpe::from_tokenizer_json(&model(&[], pre).to_string()).err();
    for pattern in [
        r"\w+",
        r"(?=a)b",
        r"^a",
        r"a+?",
        r"[[:alpha:]]",
        r"\p{Greek}",
        r"a*",
        r"\d",
    ] {
        assert!(refused(split_then_bytes(pattern)).is_some(), "{pattern}");
    }
    assert!(refused(json!({"type": "Metaspace"})).is_some());
    assert!(refused(json!({"type": "ByteLevel", "add_prefix_space": true})).is_some());
    let mut m = model(&[], split_then_bytes(QWEN2_PATTERN));
    m["normalizer"] = json!({"type": "NFKC"});
    assert!(ByteLevelBpe::from_tokenizer_json(&m.to_string()).is_err());
    let mut m = model(&[], split_then_bytes(QWEN2_PATTERN));
    m["model"]["byte_fallback"] = json!(true);
    assert!(ByteLevelBpe::from_tokenizer_json(&m.to_string()).is_err());
    assert!(ByteLevelBpe::from_tokenizer_json("{").is_err());
    // tokenizers matches a normalized added token by its NFC form, which this encoder does not compute.
    let mut m = model(&[], split_then_bytes(QWEN2_PATTERN));
    m["added_tokens"][2]["content"] = json!("<e\u{301}>");
    assert!(ByteLevelBpe::from_tokenizer_json(&m.to_string()).is_err());
}
