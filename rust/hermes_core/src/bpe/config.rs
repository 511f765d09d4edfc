//! Reading `tokenizer.json`: the parts [`super::ByteLevelBpe`] reproduces, or why not.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use unicode_normalization::{is_nfc_quick, IsNormalized};

use super::merges::{Merges, Model};
use super::pretokenize::Splitter;
use super::Unsupported;

/// The regex of `ByteLevel(use_regex=true)` (GPT-2's), as `tokenizers` writes it.
pub(super) const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Added tokens, in two leftmost-longest automatons as `tokenizers`' `AddedVocabulary` keeps them.
pub(super) struct AddedTokens {
    pub raw: Option<AhoCorasick>,
    pub raw_ids: Vec<u32>,
    pub normalized: Option<AhoCorasick>,
    pub normalized_ids: Vec<u32>,
}

pub(super) struct Config {
    pub added: AddedTokens,
    pub nfc: bool,
    pub splitter: Splitter,
    pub merges: Merges,
}

fn unsupported(what: impl Into<String>) -> Unsupported {
    Unsupported(what.into())
}

fn get<'a>(object: &'a Map<String, Value>, key: &str) -> &'a Value {
    object.get(key).unwrap_or(&Value::Null)
}

fn is_true(object: &Map<String, Value>, key: &str) -> bool {
    get(object, key).as_bool() == Some(true)
}

fn type_of(object: &Map<String, Value>) -> &str {
    get(object, "type").as_str().unwrap_or("")
}

impl Config {
    pub fn parse(json: &str) -> Result<Config, Unsupported> {
        let root: Value = serde_json::from_str(json).map_err(|e| unsupported(format!("not JSON: {e}")))?;
        let root = root
            .as_object()
            .ok_or_else(|| unsupported("tokenizer.json is not an object"))?;
        for key in ["truncation", "padding"] {
            if !get(root, key).is_null() {
                return Err(unsupported(format!("{key} is enabled")));
            }
        }
        let nfc = normalizer_is_nfc(get(root, "normalizer"))?;
        let patterns = split_patterns(get(root, "pre_tokenizer"))?;
        let splitter = Splitter::new(&patterns)?;
        let model = get(root, "model").as_object().ok_or_else(|| unsupported("no model"))?;
        let merges = Merges::new(&read_model(model)?)?;
        let added = added_tokens(get(root, "added_tokens"), nfc)?;
        Ok(Config {
            added,
            nfc,
            splitter,
            merges,
        })
    }
}

/// `true` for an NFC normalizer, `false` for none; anything else is unsupported.
fn normalizer_is_nfc(normalizer: &Value) -> Result<bool, Unsupported> {
    let Some(object) = normalizer.as_object() else {
        return if normalizer.is_null() {
            Ok(false)
        } else {
            Err(unsupported("unreadable normalizer"))
        };
    };
    match type_of(object) {
        "NFC" => Ok(true),
        "Sequence" => {
            let mut nfc = false;
            for inner in get(object, "normalizers").as_array().into_iter().flatten() {
                nfc |= normalizer_is_nfc(inner)?;
            }
            Ok(nfc)
        }
        other => Err(unsupported(format!("normalizer {other:?} (only NFC or none)"))),
    }
}

/// The regexes of the pre-tokenizer, in order: `Split(Regex, Isolated)` steps, then a final
/// `ByteLevel` (its GPT-2 regex when `use_regex`).
fn split_patterns(pre: &Value) -> Result<Vec<String>, Unsupported> {
    let object = pre
        .as_object()
        .ok_or_else(|| unsupported("no pre-tokenizer (byte-level BPE needs ByteLevel)"))?;
    let steps: Vec<&Map<String, Value>> = if type_of(object) == "Sequence" {
        get(object, "pretokenizers")
            .as_array()
            .ok_or_else(|| unsupported("pre-tokenizer Sequence without a list"))?
            .iter()
            .map(|v| v.as_object().ok_or_else(|| unsupported("unreadable pre-tokenizer")))
            .collect::<Result<_, _>>()?
    } else {
        vec![object]
    };
    let mut patterns = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match type_of(step) {
            "Split" => {
                if get(step, "behavior").as_str() != Some("Isolated") || is_true(step, "invert") {
                    return Err(unsupported("Split pre-tokenizer other than Isolated, not inverted"));
                }
                let regex = get(step, "pattern").get("Regex").and_then(Value::as_str);
                patterns.push(regex.ok_or_else(|| unsupported("Split on a plain string"))?.to_owned());
            }
            "ByteLevel" if i + 1 == steps.len() => {
                if is_true(step, "add_prefix_space") {
                    return Err(unsupported("ByteLevel with add_prefix_space"));
                }
                // tokenizers' default for use_regex is true.
                if get(step, "use_regex").as_bool() != Some(false) {
                    patterns.push(GPT2_PATTERN.to_owned());
                }
            }
            other => {
                return Err(unsupported(format!(
                    "pre-tokenizer {other:?} (only Split steps, then ByteLevel)"
                )))
            }
        }
    }
    if steps.last().map(|s| type_of(s)) != Some("ByteLevel") {
        return Err(unsupported("the pre-tokenizer does not end with ByteLevel"));
    }
    Ok(patterns)
}

fn read_model(model: &Map<String, Value>) -> Result<Model, Unsupported> {
    if type_of(model) != "BPE" {
        return Err(unsupported(format!("model {:?} (only BPE)", type_of(model))));
    }
    if get(model, "dropout").as_f64().is_some_and(|d| d != 0.0) {
        return Err(unsupported("BPE dropout"));
    }
    if is_true(model, "byte_fallback") {
        return Err(unsupported("BPE byte_fallback"));
    }
    for key in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if get(model, key).as_str().is_some_and(|s| !s.is_empty()) {
            return Err(unsupported(format!("BPE {key}")));
        }
    }
    let vocab_json = get(model, "vocab")
        .as_object()
        .ok_or_else(|| unsupported("BPE without a vocab"))?;
    let mut vocab = FxHashMap::default();
    for (token, id) in vocab_json {
        let id = id
            .as_u64()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| unsupported("a vocab id is not a u32"))?;
        vocab.insert(token.clone(), id);
    }
    let mut merges = Vec::new();
    for entry in get(model, "merges").as_array().into_iter().flatten() {
        let pair = match entry {
            Value::String(line) => {
                let mut parts = line.split(' ');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(a), Some(b), None) => (a.to_owned(), b.to_owned()),
                    _ => return Err(unsupported(format!("merge {line:?} is not two tokens"))),
                }
            }
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(a), Value::String(b)] => (a.clone(), b.clone()),
                _ => return Err(unsupported("a merge is not two tokens")),
            },
            _ => return Err(unsupported("unreadable merges")),
        };
        merges.push(pair);
    }
    Ok(Model {
        vocab,
        merges,
        ignore_merges: is_true(model, "ignore_merges"),
    })
}

/// The added tokens; `nfc`: the normalizer is NFC, which `tokenizers` also applies to a normalized
/// token's content before matching it.
fn added_tokens(list: &Value, nfc: bool) -> Result<AddedTokens, Unsupported> {
    let (mut raw, mut raw_ids, mut normalized, mut normalized_ids) = (vec![], vec![], vec![], vec![]);
    for token in list.as_array().into_iter().flatten() {
        let token = token.as_object().ok_or_else(|| unsupported("unreadable added token"))?;
        let content = get(token, "content").as_str().unwrap_or("");
        let id = get(token, "id").as_u64().and_then(|i| u32::try_from(i).ok());
        let id = id.ok_or_else(|| unsupported(format!("added token {content:?} has no u32 id")))?;
        if ["single_word", "lstrip", "rstrip"].iter().any(|k| is_true(token, k)) {
            return Err(unsupported(format!(
                "added token {content:?} with single_word/lstrip/rstrip"
            )));
        }
        if content.is_empty() {
            continue;
        }
        if is_true(token, "normalized") {
            if nfc && is_nfc_quick(content.chars()) != IsNormalized::Yes {
                return Err(unsupported(format!("normalized added token {content:?} is not NFC")));
            }
            normalized.push(content.to_owned());
            normalized_ids.push(id);
        } else {
            raw.push(content.to_owned());
            raw_ids.push(id);
        }
    }
    Ok(AddedTokens {
        raw: automaton(&raw)?,
        raw_ids,
        normalized: automaton(&normalized)?,
        normalized_ids,
    })
}

fn automaton(patterns: &[String]) -> Result<Option<AhoCorasick>, Unsupported> {
    if patterns.is_empty() {
        return Ok(None);
    }
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns)
        .map(Some)
        .map_err(|e| unsupported(format!("added tokens: {e}")))
}
