//! The pre-tokenizer's regex splits (`Split(..., Isolated)`), Oniguruma's semantics on `regex`.
//!
//! Only patterns written in the part of the syntax where both engines agree are accepted:
//! literals, classes, `\p{..}` general categories, `\s \S \r \n \t`, escaped punctuation,
//! `(?:..)`, greedy quantifiers, and `(?i:'s|'t|'re|'ve|'m|'ll|'d)` (GPT-2's contractions). Both
//! engines pick the leftmost match and, there, the first alternative in backtracking order, so
//! they split alike; the one construct `regex` lacks is the lookahead that ends GPT-style
//! patterns, `…|\s+(?!\S)|\s+`, emulated in [`Step::next_match`].

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

use super::Unsupported;

/// The lookahead tail of GPT-style patterns: a whitespace run, less its last character when a
/// non-space follows (that character then starts the next piece, e.g. `" word"`).
const LOOKAHEAD_TAIL: &str = r"|\s+(?!\S)|\s+";

/// Unicode general categories `\p{..}` may name (their tables are what both engines read).
const CATEGORIES: &[&str] = &[
    "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Ps", "Pe", "Pi",
    "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp",
];
const CONTRACTIONS: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";

struct Step {
    /// The pattern, with the lookahead tail reduced to `|\s+`.
    regex: Regex,
    /// The alternatives before the lookahead tail, when the pattern has one.
    head: Option<Regex>,
}

pub(super) struct Splitter {
    steps: Vec<Step>,
}

impl Splitter {
    pub fn new(patterns: &[String]) -> Result<Self, Unsupported> {
        let steps = patterns.iter().map(|p| Step::new(p)).collect::<Result<_, _>>()?;
        Ok(Splitter { steps })
    }

    /// Calls `f` with each piece of `text`, in order (subslices of `text`).
    pub fn split<'t>(&self, text: &'t str, f: &mut impl FnMut(&'t str)) {
        self.split_from(0, text, f);
    }

    fn split_from<'t>(&self, step: usize, text: &'t str, f: &mut impl FnMut(&'t str)) {
        let Some(current) = self.steps.get(step) else {
            f(text);
            return;
        };
        let mut at = 0;
        while at < text.len() {
            let Some((start, end)) = current.next_match(text, at) else {
                break;
            };
            if start > at {
                self.split_from(step + 1, &text[at..start], f);
            }
            self.split_from(step + 1, &text[start..end], f);
            at = end;
        }
        if at < text.len() {
            self.split_from(step + 1, &text[at..], f);
        }
    }
}

impl Step {
    fn new(pattern: &str) -> Result<Self, Unsupported> {
        let (body, lookahead) = match pattern.strip_suffix(LOOKAHEAD_TAIL) {
            Some(body) => (body, true),
            None => (pattern, false),
        };
        check_syntax(body)?; // balanced, so the tail's `|` is a top-level alternative
        let compile = |p: &str| Regex::new(p).map_err(|e| Unsupported(format!("pattern {pattern:?}: {e}")));
        let regex = compile(&if lookahead {
            format!(r"{body}|\s+")
        } else {
            body.to_owned()
        })?;
        if regex.is_match("") {
            return Err(Unsupported(format!("pattern {pattern:?} matches the empty string")));
        }
        let head = if lookahead { Some(compile(body)?) } else { None };
        Ok(Step { regex, head })
    }

    /// The next match at or after byte `at` of `text`, as Oniguruma finds it.
    fn next_match(&self, text: &str, at: usize) -> Option<(usize, usize)> {
        // Pieces usually follow each other: a match anchored at `at` needs only a forward search.
        let anchored = self.regex.search(&Input::new(text).range(at..).anchored(Anchored::Yes));
        let m = match anchored {
            Some(m) => m,
            None => self.regex.search(&Input::new(text).range(at..))?,
        };
        let (start, mut end) = (m.start(), m.end());
        if let Some(head) = &self.head {
            // Only the `\s+` alternative differs: when the earlier alternatives do not match at
            // `start`, Oniguruma's `\s+(?!\S)` backs off one character before a non-space.
            let run = &text[start..end];
            if end < text.len() && run.chars().nth(1).is_some() && run.chars().all(char::is_whitespace) {
                let head_matches_here = head.is_match(Input::new(text).range(start..).anchored(Anchored::Yes));
                if !head_matches_here {
                    end -= run.chars().next_back().map_or(0, char::len_utf8);
                }
            }
        }
        Some((start, end))
    }
}

/// Refuses a pattern using syntax outside the part Oniguruma and `regex` read alike.
fn check_syntax(pattern: &str) -> Result<(), Unsupported> {
    let refuse = |what: &str| Err(Unsupported(format!("pattern {pattern:?}: {what}")));
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut depth = 0usize;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&e) = chars.get(i + 1) else {
                    return refuse("ends with a backslash");
                };
                if e == 'p' || e == 'P' {
                    let close = chars[i..].iter().position(|&x| x == '}').map(|p| p + i);
                    let name: String = match (chars.get(i + 2), close) {
                        (Some('{'), Some(close)) => chars[i + 3..close].iter().collect(),
                        _ => return refuse("\\p without {..}"),
                    };
                    if !CATEGORIES.contains(&name.as_str()) {
                        return refuse(&format!("\\p{{{name}}} is not a general category"));
                    }
                    i = close.unwrap_or(i) + 1;
                    continue;
                }
                if !(matches!(e, 's' | 'S' | 'r' | 'n' | 't') || e.is_ascii_punctuation()) {
                    return refuse(&format!("escape \\{e}"));
                }
                i += 2;
                continue;
            }
            '[' if in_class => {
                if chars.get(i + 1) == Some(&':') {
                    return refuse("POSIX class");
                }
                return refuse("nested class");
            }
            '&' if in_class && chars.get(i + 1) == Some(&'&') => return refuse("class intersection"),
            '[' => {
                in_class = true;
                i += 1;
                // A leading `^` negates, and a `]` right after `[` or `[^` is a literal in both.
                if chars.get(i) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    i += 1;
                }
                continue;
            }
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '(' => {
                let rest: String = chars[i..].iter().collect();
                if rest.starts_with(CONTRACTIONS) {
                    i += CONTRACTIONS.chars().count();
                    continue;
                }
                if chars.get(i + 1) == Some(&'?') && chars.get(i + 2) != Some(&':') {
                    return refuse("a group other than (..) or (?:..)");
                }
                depth += 1;
            }
            ')' => depth = depth.saturating_sub(1),
            '^' | '$' | '.' => return refuse(&format!("{c:?} (anchors and '.' differ between engines)")),
            '?' | '*' | '+' => {
                if matches!(chars.get(i + 1), Some('?' | '+')) {
                    return refuse("lazy or possessive quantifier");
                }
            }
            '}' if matches!(chars.get(i + 1), Some('?' | '+')) => return refuse("lazy or possessive quantifier"),
            _ => {}
        }
        i += 1;
    }
    if in_class || depth != 0 {
        return refuse("unbalanced class or group");
    }
    Ok(())
}
