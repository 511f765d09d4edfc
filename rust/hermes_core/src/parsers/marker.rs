//! Finding a format's markers in streamed text with bounded hold-back.
//!
//! [`MarkerSet::find`] returns the earliest complete marker, or the earliest position from which
//! the text *could* still become a marker once more text arrives (only ever a suffix shorter than
//! the longest marker). Everything before that point can be released at once. Candidate
//! positions are found with `memchr` on the markers' first bytes, so marker-free text is scanned
//! at memory speed.

/// Result of [`MarkerSet::find`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerHit {
    /// `marker` (index into the set) occupies `at..end`.
    Full { at: usize, end: usize, marker: usize },
    /// The text from `at` to the end is a proper prefix of some marker: hold it back.
    Partial { at: usize },
    /// No marker and nothing to hold back.
    None,
}

/// A small set of marker strings.
#[derive(Debug, Clone)]
pub struct MarkerSet {
    markers: Vec<Box<[u8]>>,
    /// Distinct first bytes of the markers.
    firsts: Vec<u8>,
    is_first: [bool; 256],
    max_len: usize,
}

impl MarkerSet {
    /// The first byte of every marker, when they all share one (what a [`Lane::Content`] stops
    /// at).
    ///
    /// [`Lane::Content`]: super::lane::Lane::Content
    pub fn first_byte(&self) -> Option<u8> {
        match self.firsts.as_slice() {
            [b] => Some(*b),
            _ => None,
        }
    }

    /// Empty markers are ignored.
    pub fn new(markers: &[&str]) -> MarkerSet {
        let markers: Vec<Box<[u8]>> = markers
            .iter()
            .filter(|m| !m.is_empty())
            .map(|m| m.as_bytes().to_vec().into_boxed_slice())
            .collect();
        let mut is_first = [false; 256];
        let mut firsts = Vec::new();
        for m in &markers {
            if let Some(&b) = m.first() {
                if !is_first[b as usize] {
                    is_first[b as usize] = true;
                    firsts.push(b);
                }
            }
        }
        let max_len = markers.iter().map(|m| m.len()).max().unwrap_or(0);
        MarkerSet {
            markers,
            firsts,
            is_first,
            max_len,
        }
    }

    /// Length in bytes of the longest marker (the most text ever held back is one less).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The marker at `index`.
    pub fn marker(&self, index: usize) -> &[u8] {
        self.markers.get(index).map(|m| &m[..]).unwrap_or_default()
    }

    /// Next position `>= from` whose byte starts some marker.
    #[inline]
    fn next_candidate(&self, hay: &[u8], from: usize) -> Option<usize> {
        let rest = hay.get(from..)?;
        if rest.len() < 16 {
            // Streaming feeds are often a few bytes: a plain loop beats memchr's setup cost.
            return rest.iter().position(|&x| self.is_first[x as usize]).map(|i| i + from);
        }
        let found = match self.firsts.as_slice() {
            [] => None,
            [a] => memchr::memchr(*a, rest),
            [a, b] => memchr::memchr2(*a, *b, rest),
            [a, b, c] => memchr::memchr3(*a, *b, *c, rest),
            _ => rest.iter().position(|&x| self.is_first[x as usize]),
        };
        found.map(|i| i + from)
    }

    /// `hay` up to the next marker: `(text, Some((end, marker)))` when marker `marker` occupies
    /// `text..end`; `(text, None)` when the rest from `text` may still grow into a marker (hold
    /// it back) or there is none (`text == hay.len()`). `hay[..text]` is plain text either way.
    #[inline]
    pub fn until(&self, hay: &str, eof: bool) -> (usize, Option<(usize, usize)>) {
        match self.find(hay, eof) {
            MarkerHit::Full { at, end, marker } => (at, Some((end, marker))),
            MarkerHit::Partial { at } => (at, None),
            MarkerHit::None => (hay.len(), None),
        }
    }

    /// The earliest marker in `hay`, or the earliest suffix that may still grow into one.
    /// With `eof` (no more text will come) partial matches are not reported.
    /// When several markers match at one position the longest wins; when a longer marker might
    /// still match there, the position is held (`Partial`) until it is decided.
    pub fn find(&self, hay: &str, eof: bool) -> MarkerHit {
        let hay = hay.as_bytes();
        let mut from = 0;
        while let Some(at) = self.next_candidate(hay, from) {
            let rest = &hay[at..];
            let mut full: Option<(usize, usize)> = None;
            let mut partial = false;
            for (i, m) in self.markers.iter().enumerate() {
                if rest.starts_with(m) {
                    if full.is_none_or(|(_, len)| m.len() > len) {
                        full = Some((i, m.len()));
                    }
                } else if !eof && rest.len() < m.len() && m.starts_with(rest) {
                    partial = true;
                }
            }
            // A marker that may still match here is longer than any that already matched
            // (it extends past the end of `hay`), so the position stays undecided.
            if partial {
                return MarkerHit::Partial { at };
            }
            if let Some((marker, len)) = full {
                return MarkerHit::Full {
                    at,
                    end: at + len,
                    marker,
                };
            }
            from = at + 1;
        }
        MarkerHit::None
    }

    /// Length of the longest marker that `rest` is a proper prefix of (0 if none).
    fn longest_extension(&self, rest: &[u8]) -> usize {
        self.markers
            .iter()
            .filter(|m| rest.len() < m.len() && m.starts_with(rest))
            .map(|m| m.len())
            .max()
            .unwrap_or(0)
    }

    /// Where held-back text would start in `hay`: the earliest suffix that is a proper prefix of a
    /// marker (`hay.len()` when none). Ignores complete markers.
    pub fn hold_from(&self, hay: &str) -> usize {
        let bytes = hay.as_bytes();
        let start = bytes.len().saturating_sub(self.max_len.saturating_sub(1));
        let mut from = start;
        while let Some(at) = self.next_candidate(bytes, from) {
            if self.longest_extension(&bytes[at..]) > 0 {
                return at;
            }
            from = at + 1;
        }
        bytes.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn full_partial_none() {
        let m = MarkerSet::new(&["<tool_call>", "</tool_call>"]);
        assert_eq!(
            m.find("ab <tool_call> x", false),
            MarkerHit::Full {
                at: 3,
                end: 14,
                marker: 0
            }
        );
        assert_eq!(
            m.find("a < b </tool_call>", false),
            MarkerHit::Full {
                at: 6,
                end: 18,
                marker: 1
            }
        );
        assert_eq!(m.find("text <tool_ca", false), MarkerHit::Partial { at: 5 });
        assert_eq!(m.find("text <tool_ca", true), MarkerHit::None);
        assert_eq!(m.find("text <", false), MarkerHit::Partial { at: 5 });
        assert_eq!(m.find("a <b> c", false), MarkerHit::None);
        assert_eq!(m.find("", false), MarkerHit::None);
        assert_eq!(m.hold_from("abc </tool"), 4);
        assert_eq!(m.hold_from("abc"), 3);
    }

    #[test]
    fn longest_wins_and_undecided_is_held() {
        let m = MarkerSet::new(&["[A]", "[A]B"]);
        assert_eq!(m.find("x[A]", false), MarkerHit::Partial { at: 1 });
        assert_eq!(
            m.find("x[A]", true),
            MarkerHit::Full {
                at: 1,
                end: 4,
                marker: 0
            }
        );
        assert_eq!(
            m.find("x[A]B", false),
            MarkerHit::Full {
                at: 1,
                end: 5,
                marker: 1
            }
        );
        assert_eq!(
            m.find("x[A]C", false),
            MarkerHit::Full {
                at: 1,
                end: 4,
                marker: 0
            }
        );
    }

    #[test]
    fn many_first_bytes_and_unicode() {
        let m = MarkerSet::new(&["<a>", "[b]", "{c}", "<｜tool▁sep｜>"]);
        assert_eq!(
            m.find("zz{c}", false),
            MarkerHit::Full {
                at: 2,
                end: 5,
                marker: 2
            }
        );
        let s = "héllo <｜tool▁";
        assert_eq!(m.find(s, false), MarkerHit::Partial { at: 7 });
        assert!(s.is_char_boundary(7));
    }

    /// Every prefix of a text: the released part never contains a marker start, and
    /// whatever is held is a proper prefix of a marker (jiter's every-prefix pattern).
    #[test]
    fn every_prefix_holds_at_most_a_marker_prefix() {
        let m = MarkerSet::new(&["<tool_call>", "</tool_call>"]);
        let text = "a <b <tool_call>{} </tool_call> <tool_";
        for i in 0..=text.len() {
            let prefix = &text[..i];
            match m.find(prefix, false) {
                MarkerHit::Partial { at } => {
                    let held = &prefix[at..];
                    assert!(held.len() < m.max_len());
                    assert!("<tool_call>".starts_with(held) || "</tool_call>".starts_with(held));
                }
                MarkerHit::Full { at, end, .. } => assert!(matches!(&prefix[at..end], "<tool_call>" | "</tool_call>")),
                MarkerHit::None => assert_eq!(m.hold_from(prefix), prefix.len()),
            }
        }
    }
}
