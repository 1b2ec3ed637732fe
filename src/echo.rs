//! Client input echoed back in an error message, cut short: an error names the value it
//! refuses, but a megabyte of it must not come back. Every front door (REST, the stream)
//! cuts the same way. A leaf: it uses no other module.

/// The longest run of non-blank characters an error message keeps (an echoed parameter).
pub const MAX_ECHO_CHARS: usize = 64;
/// The longest `error` or `details` field (many short echoed words).
pub const MAX_FIELD_CHARS: usize = 512;

/// `text` with every word over [`MAX_ECHO_CHARS`] characters cut to that many plus `…`,
/// and the whole over [`MAX_FIELD_CHARS`] cut the same way. Blanks are kept as they are.
pub fn cut_echoes(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_FIELD_CHARS + 8));
    let mut word = 0usize;
    let mut total = 0usize;
    for c in text.chars() {
        if total >= MAX_FIELD_CHARS {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            word = 0;
        } else {
            word += 1;
            if word > MAX_ECHO_CHARS {
                if word == MAX_ECHO_CHARS + 1 {
                    out.push('…');
                    total += 1;
                }
                continue;
            }
        }
        out.push(c);
        total += 1;
    }
    out
}
