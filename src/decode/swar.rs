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

/// The first (up to) eight bytes as a little-endian word, zero-padded (byte `i` of `b` is byte `i` of
/// the word). Two overlapping loads instead of a copy into a buffer: a variable-length copy
/// is a `memcpy` call, and the wide load after it stalls on store forwarding.
pub fn load_le(b: &[u8]) -> u64 {
    let n = b.len();
    let u32_at = |i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    match n {
        0 => 0,
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        3 => u64::from(u16::from_le_bytes([b[0], b[1]])) | u64::from(b[2]) << 16,
        // The two halves overlap where n < 8; the shared bytes are the same either way.
        4..=7 => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
        // Longer input: its first eight bytes.
        _ => u32_at(0) | u32_at(4) << 32,
    }
}

/// The high bit of each byte of `word` that equals `byte`.
pub fn bytes_equal(word: u64, byte: u8) -> u64 {
    !nonzero_bytes(word ^ (ONES * u64::from(byte))) & HIGHS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_le_pads_with_zeros() {
        let text = b"0123456789";
        for n in 0..=8 {
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(&text[..n]);
            assert_eq!(load_le(&text[..n]), u64::from_le_bytes(word), "{n}");
        }
    }

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
