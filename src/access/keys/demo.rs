//! The demo's keys: one per tier, minted by the first `serve --demo` and shown again by
//! every later one, instead of four new keys per start.
//!
//! `keys.json` holds hashes only, so the secrets themselves are kept in
//! `<state_dir>/demo-keys.json`, readable by its owner only (0600, written like
//! `keys.json`: temp file, fsync, rename). It is a demo's convenience on a demo state
//! directory; a production server never writes it. A kept key that no longer authenticates
//! (revoked, or removed from `keys.json`) is replaced by a new one of its tier, and the
//! file rewritten.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{corrupt_json, io_error, KeyError};
use super::record::KeyRecord;
use super::store::KeyStore;
use super::tier::Tier;
use crate::durable::{self, Access};

/// The file of the demo's secrets, in the state directory.
pub const DEMO_KEYS_FILE: &str = "demo-keys.json";

/// One demo key as shown at start.
#[derive(Debug, Clone)]
pub struct DemoKey {
    pub record: KeyRecord,
    pub secret: String,
}

/// `demo-keys.json`: the secret per tier.
#[derive(Debug, Default, Serialize, Deserialize)]
struct DemoKeyFile {
    keys: Vec<Kept>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    tier: Tier,
    secret: String,
}

impl KeyStore {
    /// The demo's key of every tier (the Enterprise one admin and stream-enabled, every
    /// one stream-enabled), reusing those kept in `demo-keys.json` that still authenticate
    /// and minting the others.
    pub fn demo_keys(&self) -> Result<Vec<DemoKey>, KeyError> {
        let path = demo_file(self.path());
        let kept = read(&path)?;
        let mut out = Vec::with_capacity(Tier::ALL.len());
        let mut changed = false;
        for tier in Tier::ALL {
            let reused = kept.keys.iter().filter(|k| k.tier == tier).find_map(|k| {
                let record = self.authenticate(&k.secret)?;
                (record.tier == tier).then(|| DemoKey { record: KeyRecord::clone(&record), secret: k.secret.clone() })
            });
            let key = match reused {
                Some(k) => k,
                None => {
                    changed = true;
                    let admin = tier == Tier::Enterprise;
                    let (record, secret) = self.create(tier, &format!("demo-{}", tier.as_str()), admin, true)?;
                    DemoKey { record, secret }
                }
            };
            out.push(key);
        }
        if changed {
            let file = DemoKeyFile {
                keys: out.iter().map(|k| Kept { tier: k.record.tier, secret: k.secret.clone() }).collect(),
            };
            let bytes = serde_json::to_vec_pretty(&file).map_err(|e| corrupt_json(&path, e))?;
            let tmp = path.with_file_name(format!(".{DEMO_KEYS_FILE}.tmp.{}", std::process::id()));
            durable::replace(&path, &tmp, &bytes, Access::Owner).map_err(|e| io_error(&path, e.source))?;
        }
        Ok(out)
    }
}

/// `demo-keys.json` next to `keys.json`.
fn demo_file(keys_json: &Path) -> PathBuf {
    keys_json.with_file_name(DEMO_KEYS_FILE)
}

/// The kept secrets; none when the file is missing. A malformed file is an error (never
/// silently replaced: it may hold the only copy of keys a user's clients use).
fn read(path: &Path) -> Result<DemoKeyFile, KeyError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| corrupt_json(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DemoKeyFile::default()),
        Err(e) => Err(io_error(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_keys_are_reused_and_a_revoked_one_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = KeyStore::open(dir.path()).unwrap();
        let first = store.demo_keys().unwrap();
        assert_eq!(first.iter().map(|k| k.record.tier).collect::<Vec<_>>(), Tier::ALL.to_vec());
        assert!(first.iter().all(|k| k.record.stream));
        assert_eq!(first.iter().filter(|k| k.record.admin).count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(DEMO_KEYS_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        // Another process (a restart) gets the same secrets, and no key is minted.
        let again = KeyStore::open(dir.path()).unwrap();
        let second = again.demo_keys().unwrap();
        let secrets = |keys: &[DemoKey]| keys.iter().map(|k| k.secret.clone()).collect::<Vec<_>>();
        assert_eq!(secrets(&second), secrets(&first));
        assert_eq!(again.list().len(), 4);

        // A revoked demo key is replaced; the others stay.
        again.revoke(&first[1].record.id).unwrap();
        let third = again.demo_keys().unwrap();
        assert_ne!(third[1].secret, first[1].secret);
        assert_eq!(
            (third[0].secret.as_str(), third[2].secret.as_str()),
            (first[0].secret.as_str(), first[2].secret.as_str())
        );
        assert_eq!(KeyStore::open(dir.path()).unwrap().demo_keys().unwrap()[1].secret, third[1].secret);

        std::fs::write(dir.path().join(DEMO_KEYS_FILE), b"{oops").unwrap();
        assert!(matches!(again.demo_keys(), Err(KeyError::Corrupt { .. })));
    }
}
