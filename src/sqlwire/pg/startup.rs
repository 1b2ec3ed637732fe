//! pgwire authentication: the client's password is the API key, whatever the user name.
//! The password travels in the clear inside the connection, so a connection that is
//! neither TLS nor from loopback is refused before the password is asked for.

use std::fmt::Debug;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion_postgres::pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, DefaultServerParameterProvider,
    StartupHandler,
};
use datafusion_postgres::pgwire::api::{
    ClientInfo, ConnectionGuard, ConnectionHandle, ConnectionManager, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::startup::Authentication;
use datafusion_postgres::pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use futures::{Sink, SinkExt};

use super::cancel::{Cancels, Registration};
use super::hooks::fatal;
use super::lazy::SessionSlot;
use crate::access::Access;
use crate::sqlwire::access::authorize;
use crate::sqlwire::bounded::CancelSignal;
use crate::sqlwire::error::WireError;

/// One connection's startup: asks for the password, checks it as an API key.
pub struct KeyStartup {
    pub access: Access,
    /// Set to the key's id once authenticated (the session's planner reads it).
    pub key_id: Arc<OnceLock<String>>,
    /// The key itself, re-checked before every query (revocation, rate limits).
    pub secret: Arc<OnceLock<String>>,
    pub params: DefaultServerParameterProvider,
    pub manager: Arc<ConnectionManager>,
    /// The server's one generator of backend ids (a CancelRequest names one).
    pub pids: Arc<RandomPidSecretKeyGenerator>,
    /// Where a CancelRequest finds this connection's [`CancelSignal`].
    pub cancels: Arc<Cancels>,
    pub signal: CancelSignal,
    /// The connection's session, built once the key is accepted.
    pub session: Arc<SessionSlot>,
}

/// Whether the password (the API key) may travel on this connection: over TLS, or in the
/// clear only from this machine.
pub fn clear_text_allowed(secure: bool, peer: IpAddr) -> bool {
    secure || peer.is_loopback() || peer.to_canonical().is_loopback()
}

#[async_trait]
impl StartupHandler for KeyStartup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                if !clear_text_allowed(client.is_secure(), client.socket_addr().ip()) {
                    return Err(fatal(&WireError::ReadOnly(
                        "this server accepts the API key only over TLS from another host: connect with sslmode=require"
                            .to_string(),
                    )));
                }
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client.send(PgWireBackendMessage::Authentication(Authentication::CleartextPassword)).await?;
            }
            PgWireFrontendMessage::PasswordMessageFamily(pwd) => {
                let pwd = pwd.into_password()?;
                let record = authorize(&self.access, Some(&pwd.password)).map_err(|e| fatal(&e))?;
                let _ = self.key_id.set(record.id.clone());
                let _ = self.secret.set(pwd.password);
                self.session.open().map_err(|e| fatal(&e))?;
                let (pid, secret_key) = self.pids.generate(&*client);
                client.set_pid_and_secret_key(pid, secret_key.clone());
                // Registered for CancelRequest (psql's Ctrl-C) from another connection.
                let registration = self.cancels.register(pid, secret_key.to_bytes(), self.signal.clone());
                let (handle, guard) = self.manager.register(pid, secret_key);
                client.session_extensions().insert::<Arc<ConnectionHandle>>(handle);
                client.session_extensions().insert::<ConnectionGuard>(guard);
                client.session_extensions().insert::<Registration>(registration);
                finish_authentication(client, &self.params).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_travels_in_the_clear_only_from_loopback() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(clear_text_allowed(false, ip("127.0.0.1")));
        assert!(clear_text_allowed(false, ip("::1")));
        assert!(clear_text_allowed(false, ip("::ffff:127.0.0.1")));
        assert!(!clear_text_allowed(false, ip("10.0.0.7")));
        assert!(!clear_text_allowed(false, ip("::ffff:192.168.1.2")));
        assert!(!clear_text_allowed(false, ip("2001:db8::1")));
        assert!(clear_text_allowed(true, ip("10.0.0.7")));
        assert!(clear_text_allowed(true, ip("2001:db8::1")));
    }
}
