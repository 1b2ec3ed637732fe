//! Decimal text → `f64` for the bulk decoders. Forecast exports carry twenty-odd short
//! decimals per row ("281.35", "-4.2"), and the general parser's setup dominated decoding
//! them; this takes the exact fast path for such numbers and leaves every other spelling
//! (exponents, long mantissas, inf/nan) to `str::parse`, so results are bit-identical.

/// Powers of ten that an `f64` holds exactly (10^0 ..= 10^22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// Largest mantissa an `f64` represents exactly (2^53).
const EXACT_MANTISSA: u64 = 1 << 53;

/// Parses `s` as `str::parse::<f64>` would, with the same result and the same failures.
/// A plain decimal (optional sign, ≤ 16 bytes of digits and at most one dot, a mantissa
/// below 2^53) is an exact integer divided by an exact power of ten: one IEEE division,
/// correctly rounded.
pub fn parse_f64(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    // At most 16 bytes: 15 digits and a dot, or 16 digits checked against 2^53 below.
    if digits.is_empty() || digits.len() > 16 {
        return s.parse().ok();
    }
    let mut mantissa: u64 = 0;
    let mut dot = None;
    for (i, &c) in digits.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d < 10 {
            mantissa = mantissa * 10 + u64::from(d);
        } else if c == b'.' && dot.is_none() {
            dot = Some(i);
        } else {
            return s.parse().ok();
        }
    }
    let frac_digits = dot.map_or(0, |i| digits.len() - i - 1);
    if mantissa >= EXACT_MANTISSA || digits == b"." {
        return s.parse().ok();
    }
    let v = mantissa as f64 / POW10[frac_digits];
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::testrand::xorshift;

    fn same(s: &str) {
        let want = s.parse::<f64>().ok();
        let got = parse_f64(s);
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{s:?}: {got:?} vs {want:?}");
    }

    #[test]
    fn agrees_with_std_on_export_spellings_and_edge_cases() {
        for s in [
            "281.35",
            "-4.2",
            "0",
            "-0",
            "+7",
            "0.1",
            "1.",
            ".5",
            "-.5",
            "12.0",
            "1013.25",
            "999999999999999",
            "9999999999999999",
            "123456789.123456",
            "0.000000000000001",
            "1e5",
            "1E-3",
            "-2.5e+2",
            "inf",
            "-inf",
            "NaN",
            "",
            "-",
            "+",
            ".",
            "1.2.3",
            "1-2",
            "12a",
            " 1",
            "1 ",
            "--1",
            "0x10",
            "١٢",
        ] {
            same(s);
        }
    }

    #[test]
    fn agrees_with_std_on_random_short_text() {
        // Every short spelling over the characters numbers (and near misses) are made of.
        let alphabet = b"0123456789.-+eE \xc3\xa9/:";
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..300_000 {
            let len = (next() % 11) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            same(&String::from_utf8_lossy(&bytes));
        }
        for s in ["00000000", "99999999", "9999999.", ".9999999", "-.0000001", "12345678", "1234567.8"] {
            same(s);
        }
    }

    #[test]
    fn agrees_with_std_bit_for_bit_on_random_decimals() {
        // Every length of mantissa, every dot position, both signs.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let len = 1 + (next() % 17) as usize;
            let mut s: String = (0..len).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
            let dot = (next() % (len as u64 + 2)) as usize;
            if dot <= len {
                s.insert(dot, '.');
            }
            if next().is_multiple_of(2) {
                s.insert(0, '-');
            }
            same(&s);
        }
    }
}
