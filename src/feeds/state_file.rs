//! What a source remembers across restarts (product ids already fetched, resolved grid
//! points, the last forecast version stored): one small JSON file per source under the
//! feeds' state directory (`<state_dir>/feeds/<source>.json`, `serve`'s state directory).
//!
//! Without it a restart would re-fetch every product still listed by api.weather.gov and
//! re-resolve every station's grid point: dozens of requests per station that the public
//! service should not pay for. The file is a cache, not the truth (the lake's natural keys
//! still store a record once): a missing or unreadable file is started afresh with a
//! warning, and a failed write costs only those requests after the next restart.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// One source's state file; `None` path keeps the state in memory only (tests, runs
/// without a state directory).
#[derive(Debug, Clone)]
pub struct StateFile {
    path: Option<PathBuf>,
}

impl StateFile {
    /// `<state_dir>/feeds/<source>.json`, or memory only without a state directory.
    pub fn new(state_dir: Option<&Path>, source: &str) -> Self {
        StateFile { path: state_dir.map(|d| d.join("feeds").join(format!("{source}.json"))) }
    }

    /// Where the state is kept, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The saved state, or the default when there is none (or it cannot be read: logged).
    pub fn load<T: DeserializeOwned + Default>(&self) -> T {
        let Some(path) = &self.path else { return T::default() };
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return T::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "feed state unreadable; starting afresh");
                return T::default();
            }
        };
        serde_json::from_slice(&text).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "feed state is not valid JSON; starting afresh");
            T::default()
        })
    }

    /// Replaces the saved state (write to a temporary file, then rename: a crash leaves
    /// the old state or the new one, never half of one). Failures are logged.
    pub fn save<T: Serialize>(&self, state: &T) {
        let Some(path) = &self.path else { return };
        if let Err(e) = write_atomically(path, state) {
            tracing::warn!(path = %path.display(), error = %e, "feed state not saved");
        }
    }
}

fn write_atomically<T: Serialize>(path: &Path, state: &T) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A temporary file per write (pid, sequence number): two saves of one source that
    // overlap (a poll and a backfill) must not share one and lose its rename.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("json.tmp{}-{seq}", std::process::id()));
    let written = serde_json::to_vec_pretty(state)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&tmp, bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn state_survives_a_new_instance_and_bad_files_start_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(Some(dir.path()), "nws_cli");
        assert_eq!(file.path().unwrap(), dir.path().join("feeds/nws_cli.json"));
        assert!(file.load::<BTreeMap<String, u32>>().is_empty(), "no file yet");
        file.save(&BTreeMap::from([("NYC".to_string(), 1u32)]));
        let again = StateFile::new(Some(dir.path()), "nws_cli").load::<BTreeMap<String, u32>>();
        assert_eq!(again.get("NYC"), Some(&1));

        std::fs::write(file.path().unwrap(), b"{not json").unwrap();
        assert!(file.load::<BTreeMap<String, u32>>().is_empty());

        let memory = StateFile::new(None, "nws_cli");
        memory.save(&BTreeMap::from([("NYC".to_string(), 1u32)]));
        assert!(memory.load::<BTreeMap<String, u32>>().is_empty(), "memory only: nothing saved");
    }
}
