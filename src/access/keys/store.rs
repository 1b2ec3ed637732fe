//! The key store of one process: a snapshot of the file indexed for authentication, reloaded
//! when the file changes, and read-modify-write under the locks for every change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{SubsecRound, Utc};
use parking_lot::{Mutex, RwLock};
use rand::Rng;

use super::error::{corrupt_json, io_error, KeyError};
use super::file::{digests, file_stamp, read_key_file, serialize, FileStamp, KEYS_FILE, LOCK_FILE};
use super::lock::{lock_exclusive, write_atomic};
use super::record::KeyRecord;
use super::record::{new_secret, redact, resolve, sha256, to_hex, validate_user, MAX_SECRET_LEN, STORED_PREFIX_LEN};
use super::tier::Tier;

/// How often, at most, the authentication path looks at the file for changes.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Even when the file looks unchanged, reload this often: some file systems keep mtimes in
/// whole seconds and recycle inodes, so the stamp alone could miss a quick second write.
pub(super) const FULL_RELOAD: Duration = Duration::from_secs(30);

/// An immutable view of the file, swapped whole on reload so readers never see a mix.
#[derive(Default)]
struct Snapshot {
    /// Every record in file order, revoked ones included, for listing.
    records: Vec<Arc<KeyRecord>>,
    /// Active keys by raw SHA-256 of the secret: the authentication index.
    active: HashMap<[u8; 32], Arc<KeyRecord>>,
}

impl Snapshot {
    /// Builds the index; `digests` are the parsed `hash` fields, one per record.
    fn build(records: Vec<KeyRecord>, digests: Vec<[u8; 32]>) -> Self {
        let records: Vec<Arc<KeyRecord>> = records.into_iter().map(Arc::new).collect();
        let active =
            records.iter().zip(digests).filter(|(r, _)| r.is_active()).map(|(r, d)| (d, Arc::clone(r))).collect();
        Snapshot { records, active }
    }
}

/// What was loaded last, guarded together so two reloads cannot interleave.
struct LoadState {
    stamp: Option<FileStamp>,
    loaded_at: Instant,
}

/// The key store of one process. Share it behind an `Arc`; all methods take `&self`.
pub struct KeyStore {
    path: PathBuf,
    lock_path: PathBuf,
    snapshot: RwLock<Arc<Snapshot>>,
    load: Mutex<LoadState>,
    /// Serializes this process's writers (the file lock serializes processes).
    write_guard: Mutex<()>,
    epoch: Instant,
    /// Milliseconds since `epoch` at which the authentication path next looks at the file.
    next_check_ms: AtomicU64,
    check_interval_ms: u64,
    last_reload_error: Mutex<Option<String>>,
}

impl KeyStore {
    /// Opens (creating the directory if needed) the store in `dir`. A missing `keys.json` is
    /// an empty store; an unreadable or malformed one is an error, never silently emptied.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, KeyError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let path = dir.join(KEYS_FILE);
        let loaded = read_key_file(&path)?;
        let check_interval_ms = millis(DEFAULT_CHECK_INTERVAL);
        Ok(KeyStore {
            lock_path: dir.join(LOCK_FILE),
            snapshot: RwLock::new(Arc::new(Snapshot::build(loaded.records, loaded.digests))),
            load: Mutex::new(LoadState { stamp: loaded.stamp, loaded_at: Instant::now() }),
            write_guard: Mutex::new(()),
            epoch: Instant::now(),
            next_check_ms: AtomicU64::new(check_interval_ms),
            check_interval_ms,
            last_reload_error: Mutex::new(None),
            path,
        })
    }

    /// Sets how often, at most, [`authenticate`](Self::authenticate) looks for file changes
    /// (zero: on every call, for tests).
    pub fn with_check_interval(mut self, interval: Duration) -> Self {
        self.check_interval_ms = millis(interval);
        self.next_check_ms = AtomicU64::new(self.check_interval_ms);
        self
    }

    /// Path of `keys.json`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates a key and returns its record and the secret. The secret is not stored anywhere:
    /// the caller must show it now (the CLI prints it alone on stdout).
    pub fn create(&self, tier: Tier, user: &str, admin: bool, stream: bool) -> Result<(KeyRecord, String), KeyError> {
        let user = validate_user(user)?;
        self.modify(|records| {
            let mut rng = rand::rng();
            let (secret, hash) = loop {
                let secret = new_secret(&mut rng);
                let hash = to_hex(&sha256(&secret));
                if !records.iter().any(|r| r.hash.eq_ignore_ascii_case(&hash)) {
                    break (secret, hash);
                }
            };
            let id = loop {
                let id = format!("k_{:08x}", rng.random::<u32>());
                if !records.iter().any(|r| r.id == id) {
                    break id;
                }
            };
            let record = KeyRecord {
                id,
                user,
                tier,
                admin,
                stream,
                created_at: Utc::now().trunc_subsecs(0),
                revoked_at: None,
                prefix: secret.get(..STORED_PREFIX_LEN).unwrap_or_default().to_string(),
                hash,
            };
            records.push(record.clone());
            Ok((record, secret))
        })
    }

    /// Every key, revoked ones included, in creation order.
    pub fn list(&self) -> Vec<KeyRecord> {
        self.maybe_reload();
        self.current().records.iter().map(|r| KeyRecord::clone(r)).collect()
    }

    /// Revokes the key named by its id, its whole secret, or a prefix of the secret of at
    /// least 7 characters (`wx_` + 4) that names exactly one key. Revoking a revoked key
    /// changes nothing and returns it, so scripts may repeat a revocation.
    pub fn revoke(&self, id_or_secret_prefix: &str) -> Result<KeyRecord, KeyError> {
        self.modify(|records| {
            let i = resolve(records, id_or_secret_prefix)?;
            let Some(record) = records.get_mut(i) else {
                return Err(KeyError::NotFound(redact(id_or_secret_prefix)));
            };
            if record.revoked_at.is_none() {
                record.revoked_at = Some(Utc::now().trunc_subsecs(0));
            }
            Ok(record.clone())
        })
    }

    /// Enables the push stream for a key (same lookup as [`revoke`](Self::revoke)).
    pub fn enable_stream(&self, id: &str) -> Result<KeyRecord, KeyError> {
        self.set_stream(id, true)
    }

    /// Enables or disables the push stream for an active key.
    pub fn set_stream(&self, id: &str, enabled: bool) -> Result<KeyRecord, KeyError> {
        self.modify(|records| {
            let i = resolve(records, id)?;
            let Some(record) = records.get_mut(i) else {
                return Err(KeyError::NotFound(redact(id)));
            };
            if !record.is_active() {
                return Err(KeyError::Revoked(record.id.clone()));
            }
            record.stream = enabled;
            Ok(record.clone())
        })
    }

    /// The active key whose secret this is, or `None` (unknown, revoked, or malformed).
    ///
    /// The hot path: one SHA-256 of the input, a hash-map lookup under a read lock and, at
    /// most once per check interval, a `stat` of the key file. Secrets are never compared as
    /// strings, so response time reveals nothing about how much of a guess was right.
    pub fn authenticate(&self, secret: &str) -> Option<Arc<KeyRecord>> {
        if secret.is_empty() || secret.len() > MAX_SECRET_LEN {
            return None;
        }
        self.maybe_reload();
        let digest = sha256(secret);
        let snapshot = self.snapshot.read();
        snapshot.active.get(&digest).cloned()
    }

    /// Looks at the file now and reloads it if it changed; returns whether it reloaded. On a
    /// malformed file the previous keys stay in force and the error is returned (and kept for
    /// [`last_reload_error`](Self::last_reload_error)).
    pub fn reload_now(&self) -> Result<bool, KeyError> {
        let due = self.elapsed_ms().saturating_add(self.check_interval_ms);
        self.next_check_ms.store(due, Ordering::Relaxed);
        self.reload()
    }

    /// Why the last automatic reload failed, if it did (for health checks and logs).
    pub fn last_reload_error(&self) -> Option<String> {
        self.last_reload_error.lock().clone()
    }

    fn current(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read())
    }

    fn elapsed_ms(&self) -> u64 {
        millis(self.epoch.elapsed())
    }

    /// Cheap unless a check is due: one clock read and one atomic load. Only the caller that
    /// wins the compare-exchange looks at the file; the others go on with the current keys.
    fn maybe_reload(&self) {
        let now = self.elapsed_ms();
        let due = self.next_check_ms.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let next = now.saturating_add(self.check_interval_ms);
        if self.next_check_ms.compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            // The error is kept in `last_reload_error`; the previous keys stay in force.
            let _ = self.reload();
        }
    }

    /// Reloads when the file changed; on failure the previous keys stay in force and the
    /// error is kept.
    fn reload(&self) -> Result<bool, KeyError> {
        let result = self.reload_if_changed();
        let mut last = self.last_reload_error.lock();
        *last = result.as_ref().err().map(ToString::to_string);
        result
    }

    fn reload_if_changed(&self) -> Result<bool, KeyError> {
        let mut load = self.load.lock();
        let stamp = file_stamp(&self.path)?;
        if stamp == load.stamp && load.loaded_at.elapsed() < FULL_RELOAD {
            return Ok(false);
        }
        let loaded = read_key_file(&self.path)?;
        self.install(Snapshot::build(loaded.records, loaded.digests));
        *load = LoadState { stamp: loaded.stamp, loaded_at: Instant::now() };
        Ok(true)
    }

    fn install(&self, snapshot: Snapshot) {
        *self.snapshot.write() = Arc::new(snapshot);
    }

    /// Read-modify-write under the process mutex and the cross-process file lock: re-reads the
    /// file so a change made by another process since our last load is kept, applies `change`,
    /// writes atomically, and installs the result as this process's view.
    fn modify<T>(&self, change: impl FnOnce(&mut Vec<KeyRecord>) -> Result<T, KeyError>) -> Result<T, KeyError> {
        let _guard = self.write_guard.lock();
        let _lock = lock_exclusive(&self.lock_path)?;
        let mut load = self.load.lock();
        let mut records = read_key_file(&self.path)?.records;
        let out = change(&mut records)?;
        let digests = digests(&self.path, &records)?;
        let bytes = serialize(&records).map_err(|e| corrupt_json(&self.path, e))?;
        let stamp = write_atomic(&self.path, &bytes)?;
        self.install(Snapshot::build(records, digests));
        *load = LoadState { stamp: Some(stamp), loaded_at: Instant::now() };
        Ok(out)
    }
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
