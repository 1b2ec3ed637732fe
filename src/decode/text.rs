//! Input bytes as text, for every decoder.

use std::borrow::Cow;

/// The input as text: borrowed when it is valid UTF-8, else with invalid sequences
/// replaced by U+FFFD. `String::from_utf8_lossy` alone walks valid input chunk by chunk,
/// several times slower than the validator that answers the common case here.
pub fn utf8_text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_text_is_borrowed_and_invalid_bytes_are_replaced() {
        assert!(matches!(utf8_text("KNYC 12°".as_bytes()), Cow::Borrowed("KNYC 12°")));
        assert_eq!(utf8_text(b"KN\xffYC"), "KN\u{fffd}YC");
    }
}
