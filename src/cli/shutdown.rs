//! The one shutdown of a long-running command (`serve`, `feeds run`): SIGINT or SIGTERM,
//! seen by every task that waits on it.

/// The server's one shutdown: SIGINT or SIGTERM, seen by every listener.
#[derive(Clone)]
pub struct Shutdown(tokio::sync::watch::Receiver<bool>);

impl Shutdown {
    /// Registers the signal handlers now, not when a listener first polls them: a signal
    /// that arrives before the servers run must still stop them gracefully, not kill the
    /// process (the default action) or reach only one of them.
    pub fn on_signal() -> Self {
        let (tx, rx) = tokio::sync::watch::channel(false);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (int, term) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
            tokio::spawn(async move {
                let wait = |s: std::io::Result<tokio::signal::unix::Signal>| async move {
                    match s {
                        Ok(mut s) => drop(s.recv().await),
                        Err(_) => std::future::pending::<()>().await,
                    }
                };
                tokio::select! { () = wait(int) => {}, () = wait(term) => {} }
                let _ = tx.send(true);
            });
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            let _ = tx.send(true);
        });
        Shutdown(rx)
    }

    /// Resolves once the shutdown is signalled.
    pub fn wait(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.0.clone();
        async move {
            // An error means the sender is gone, which only happens at process exit.
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }
}
