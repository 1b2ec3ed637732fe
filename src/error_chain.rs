//! An error and its causes as one line, for messages whose useful part is only in a
//! source (`reqwest`'s own message is "error sending request", an S3 code is often in a
//! source), and for the command line's last word. A leaf: it uses no other module, so any
//! may use it.

/// `e`, then each of its sources, joined by `: `. Most of our errors print their cause
/// (`#[error("...: {source}")]`) and keep it as the source too: a source whose text is
/// already in the line is not repeated (its own sources still follow).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner(#[source] std::io::Error);

    #[test]
    fn every_source_follows_its_error() {
        let e = Outer(Inner(std::io::Error::other("refused")));
        assert_eq!(error_chain(&e), "outer: inner: refused");
        assert_eq!(error_chain(&std::io::Error::other("alone")), "alone");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {0}")]
    struct Printing(#[source] Inner);

    /// A cause the message already prints is said once; what is below it still follows.
    #[test]
    fn a_printed_source_is_not_repeated() {
        let e = Printing(Inner(std::io::Error::other("refused")));
        assert_eq!(error_chain(&e), "outer: inner: refused");
    }
}
