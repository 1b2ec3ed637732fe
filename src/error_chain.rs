//! An error and its causes as one line, for messages whose useful part is only in a
//! source (`reqwest`'s own message is "error sending request", an S3 code is often in a
//! source). A leaf: it uses no other module, so any may use it.

/// `e`, then each of its sources, joined by `: `.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
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
}
