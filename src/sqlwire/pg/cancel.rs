//! PostgreSQL's CancelRequest (psql's Ctrl-C, JDBC's `Statement.cancel`, psycopg's
//! `Connection.cancel`): it arrives on a new connection naming the backend id and secret
//! the running one was given at startup. [`Cancels`] maps those to the connection's
//! [`CancelSignal`], which stops its running query wherever it is (planning or pulling
//! rows); pgwire's own handler is still told, for the call it can interrupt.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion_postgres::pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use datafusion_postgres::pgwire::messages::cancel::CancelRequest;
use parking_lot::Mutex;

use crate::sqlwire::bounded::CancelSignal;

/// The cancel signals of the open connections, by (backend id, secret).
#[derive(Debug, Default)]
pub struct Cancels {
    open: Mutex<HashMap<(i32, Bytes), CancelSignal>>,
}

/// Keeps a connection's entry in [`Cancels`] while the connection lives.
#[derive(Debug)]
pub struct Registration {
    cancels: Arc<Cancels>,
    key: (i32, Bytes),
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.cancels.open.lock().remove(&self.key);
    }
}

impl Cancels {
    /// Registers the connection `pid`/`secret`; dropping the result unregisters it.
    pub fn register(self: &Arc<Self>, pid: i32, secret: Bytes, signal: CancelSignal) -> Registration {
        let key = (pid, secret);
        self.open.lock().insert(key.clone(), signal);
        Registration { cancels: Arc::clone(self), key }
    }

    /// Signals the connection `pid`/`secret`, if open; whether it was.
    pub fn cancel(&self, pid: i32, secret: &Bytes) -> bool {
        let signal = self.open.lock().get(&(pid, secret.clone())).cloned();
        match signal {
            Some(s) => {
                s.cancel();
                true
            }
            None => false,
        }
    }
}

/// The cancel handler of every connection: ours, then pgwire's.
pub struct CancelQuery {
    pub cancels: Arc<Cancels>,
    pub pgwire: DefaultCancelHandler,
}

#[async_trait]
impl CancelHandler for CancelQuery {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let secret = request.secret_key.to_bytes();
        let found = self.cancels.cancel(request.pid, &secret);
        tracing::info!(pid = request.pid, found, "pgwire cancel request");
        self.pgwire.on_cancel_request(request).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reaches_only_the_named_open_connection() {
        let cancels = Arc::new(Cancels::default());
        let signal = CancelSignal::default();
        let reg = cancels.register(7, Bytes::from_static(b"s3cr"), signal);
        assert!(!cancels.cancel(7, &Bytes::from_static(b"nope")), "a wrong secret cancels nothing");
        assert!(!cancels.cancel(8, &Bytes::from_static(b"s3cr")));
        assert!(cancels.cancel(7, &Bytes::from_static(b"s3cr")));
        drop(reg);
        assert!(!cancels.cancel(7, &Bytes::from_static(b"s3cr")), "a closed connection is forgotten");
    }
}
