//! Word-at-a-time byte tests (SWAR: eight bytes in one `u64`) for the bulk decoders'
//! innermost loops, where a branch per byte was the cost.

/// `0x01` in every byte: `ONES * b` repeats byte `b` eight times.
pub const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that is nonzero, and no other bit. Adding within the
/// low seven bits never carries into the next byte, so every byte is judged alone (the
/// common `x - ONES` form can flag bytes above a zero byte).
pub fn nonzero_bytes(x: u64) -> u64 {
    const LOW7: u64 = !HIGHS;
    (((x & LOW7) + LOW7) | x) & HIGHS
}

/// The high bit of each byte of `word` that equals `byte`.
pub fn bytes_equal(word: u64, byte: u8) -> u64 {
    !nonzero_bytes(word ^ (ONES * u64::from(byte))) & HIGHS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_exactly_the_matching_bytes() {
        let cases: [[u8; 8]; 4] =
            [*b"a,b,,c,d", [0, 1, 0x80, 0xff, b',', 0x2d, 0x2b, 0], *b",,,,,,,,", [0x2c ^ 0x80, 0, 0, 0, 0, 0, 0, 0]];
        for word in cases {
            let got = bytes_equal(u64::from_le_bytes(word), b',');
            let want = word.iter().enumerate().filter(|(_, b)| **b == b',').fold(0u64, |m, (i, _)| m | 0x80 << (8 * i));
            assert_eq!(got, want, "{word:?}");
            let zeros = !nonzero_bytes(u64::from_le_bytes(word)) & HIGHS;
            let want = word.iter().enumerate().filter(|(_, b)| **b == 0).fold(0u64, |m, (i, _)| m | 0x80 << (8 * i));
            assert_eq!(zeros, want, "{word:?}");
        }
    }
}
