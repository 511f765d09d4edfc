//! UTF-8 code-point counting: issue offsets and lane positions are given in characters too, for
//! Python's `str` indices, so every feed counts the characters it passes.

/// Number of Unicode code points in `s` (counts the bytes that start a character).
#[inline]
pub fn count_chars(s: &[u8]) -> usize {
    if s.len() < 32 {
        return count_chars_short(s);
    }
    // Per block of 255 bytes the count fits a u8, which lets the loop vectorise 16+ bytes wide.
    s.chunks(255)
        .map(|block| block.iter().fold(0u8, |n, &b| n + u8::from((b as i8) >= -0x40)) as usize)
        .sum()
}

/// Continuation bytes (`0b10xx_xxxx`) among the 8 bytes of `w`: bit 7 set and bit 6 clear.
#[inline]
fn continuation_bytes(w: u64) -> usize {
    // One bit per continuation byte, moved to bit 0 of its byte; the multiply sums the 8 bytes
    // into the top byte (at most 8, no carry). `count_ones` is a ~15-instruction software
    // routine on the baseline x86-64 target (no `popcnt`).
    let flags = (w & !(w << 1) & 0x8080_8080_8080_8080) >> 7;
    (flags.wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
}

/// [`count_chars`] for the few bytes of a streamed chunk: whole 8-byte words, then the tail as
/// one word overlapping the last one (its already-counted bytes shifted out), so a 4-byte feed
/// costs a handful of instructions instead of a loop over bytes.
#[inline]
fn count_chars_short(s: &[u8]) -> usize {
    let n = s.len();
    if n < 4 {
        return s.iter().filter(|&&b| (b as i8) >= -0x40).count();
    }
    if n <= 8 {
        // Two overlapping 4-byte words cover 4..=8 bytes; drop the overlap from the second.
        let (Some(a), Some(b)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) else {
            return 0;
        };
        let lo = u64::from(u32::from_le_bytes(*a));
        let hi = u64::from(u32::from_le_bytes(*b)) >> (8 * (8 - n));
        let w = lo | (hi << 32);
        // ASCII (most code and prose): every byte is a character.
        if w & 0x8080_8080_8080_8080 == 0 {
            return n;
        }
        return n - continuation_bytes(w);
    }
    let mut cont = 0;
    let words = s.chunks_exact(8);
    let tail = words.remainder().len();
    for w in words {
        if let Some(w) = w.first_chunk::<8>() {
            cont += continuation_bytes(u64::from_le_bytes(*w));
        }
    }
    if tail > 0 {
        if let Some(w) = s.last_chunk::<8>() {
            cont += continuation_bytes(u64::from_le_bytes(*w) >> (8 * (8 - tail)));
        }
    }
    n - cont
}

#[cfg(test)]
mod tests {
    use super::count_chars;

    #[test]
    fn count_chars_matches_std_at_every_length() {
        let text = "aé😀中\u{80}b\u{7ff}\u{800}\u{ffff}\u{10000}xyz".repeat(40);
        let bytes = text.as_bytes();
        for start in 0..8 {
            for end in start..bytes.len().min(start + 600) {
                let slice = &bytes[start..end];
                let expected = slice.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
                assert_eq!(count_chars(slice), expected, "{start}..{end}");
            }
        }
    }
}
