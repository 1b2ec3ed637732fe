//! What the server's own listeners share (the REST port's `api::listener`, the stream's
//! `stream::tls`): how a failed `accept` is taken. Below both, so neither imports the other.

use std::io;
use std::time::Duration;

use tracing::{debug, warn};

/// How long the accept loop pauses after a resource error.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Per-connection errors (the peer went away) are routine; resource errors (out of file
/// descriptors) would spin the accept loop, so they pause it briefly. `listener` names the
/// loop in the log (`http`, `stream`).
pub async fn accept_failed(listener: &'static str, e: io::Error) {
    match e.kind() {
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted => {
            debug!(listener, error = %e, "accept failed")
        }
        _ => {
            warn!(listener, error = %e, "accept failed, pausing");
            tokio::time::sleep(ACCEPT_PAUSE).await;
        }
    }
}
