//! API keys: creation, revocation and authentication (spec 5; DESIGN "Auth").
//!
//! Keys live in `<state_dir>/keys.json`. Only the SHA-256 of each secret is stored: the secret
//! (`wx_` + 40 base62 characters, about 238 random bits) is shown once, at creation. A fast,
//! unsalted hash is enough for secrets of that entropy (nothing to brute-force), and it keeps
//! authentication cheap on every request, where bcrypt/argon2 would cost milliseconds.
//!
//! The server and the CLI (`wxlake keys revoke ...`) are different processes sharing the file.
//! Every write takes an advisory lock on `<state_dir>/keys.lock`, re-reads the file, applies its
//! change and replaces the file atomically (temp file + fsync + rename), so no process loses
//! another's update and no reader ever sees a half-written file. Every reader checks the file's
//! identity (inode, length, mtime) at most once per check interval (1 s by default) on the
//! authentication path and reloads when it changed, so a revocation reaches a running server
//! within about a second, without a restart.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, SubsecRound, Utc};
use rand::distr::Alphanumeric;
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};

use crate::lake::durable::{self, Access};

/// Name of the key file inside the state directory.
pub const KEYS_FILE: &str = "keys.json";
/// Name of the advisory lock file that serializes writers across processes.
pub const LOCK_FILE: &str = "keys.lock";
/// How often, at most, the authentication path looks at the file for changes.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Every secret starts with this, so leaked keys are recognizable by secret scanners.
const SECRET_PREFIX: &str = "wx_";
/// Random base62 characters after `wx_`.
const SECRET_RANDOM_CHARS: usize = 40;
/// Characters of the secret kept in the record (`wx_` + 5), so operators can tell keys apart
/// and revoke by what they see in a client's config; 5 of 40 characters leak ~30 of ~238 bits.
const STORED_PREFIX_LEN: usize = 8;
/// Shortest secret prefix accepted by [`KeyStore::revoke`] (`wx_` + 4).
const MIN_REVOKE_PREFIX: usize = 7;
/// Longer inputs cannot be keys; refusing them early bounds the hashing work per request.
const MAX_SECRET_LEN: usize = 256;
/// Current layout of `keys.json`.
const FILE_VERSION: u32 = 1;
/// Even when the file looks unchanged, reload this often: some file systems keep mtimes in
/// whole seconds and recycle inodes, so the stamp alone could miss a quick second write.
const FULL_RELOAD: Duration = Duration::from_secs(30);

/// Failures of the key store. Messages name the file and never contain a whole secret.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a valid key file: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("unknown tier '{0}' (expected professional, developer, enterprise or testing)")]
    UnknownTier(String),
    #[error("invalid user '{0}': expected 1-128 characters without control characters")]
    InvalidUser(String),
    #[error("no key matches '{0}'")]
    NotFound(String),
    #[error("'{0}' matches more than one key; give the key id")]
    Ambiguous(String),
    #[error("key {0} is revoked")]
    Revoked(String),
}

/// Account tier of a key; decides rate limits ([`super::limits`]) and endpoint access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Professional,
    Developer,
    Enterprise,
    /// Referenced but not described by the spec; treated like Professional everywhere.
    Testing,
}

impl Tier {
    /// All tiers, for help texts and table-driven tests.
    pub const ALL: [Tier; 4] = [Tier::Professional, Tier::Developer, Tier::Enterprise, Tier::Testing];

    /// The lowercase name used in the key file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Professional => "professional",
            Tier::Developer => "developer",
            Tier::Enterprise => "enterprise",
            Tier::Testing => "testing",
        }
    }

    /// Whether the accuracy, nearby-stations and pacing endpoints are open to this tier
    /// (spec 5.6: Developer and Enterprise only; others get 403).
    pub fn has_premium_endpoints(self) -> bool {
        matches!(self, Tier::Developer | Tier::Enterprise)
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = KeyError;

    /// Case-insensitive, surrounding blanks ignored: `Professional`, `DEVELOPER`, ` testing`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Tier::ALL.into_iter().find(|tier| tier.as_str().eq_ignore_ascii_case(t)).ok_or_else(|| {
            let shown: String = t.chars().take(32).collect();
            KeyError::UnknownTier(shown)
        })
    }
}

impl<'de> Deserialize<'de> for Tier {
    /// Accepts any case, so a hand-edited `"Enterprise"` in the key file still loads.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One key as stored in `keys.json` (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Short public id (`k_` + 8 hex), safe to log and to pass to `keys revoke`.
    pub id: String,
    pub user: String,
    pub tier: Tier,
    /// May use administrative endpoints.
    #[serde(default)]
    pub admin: bool,
    /// Enabled for the push stream (spec 5.7: "the key must be enabled").
    #[serde(default)]
    pub stream: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
    /// First characters of the secret (`wx_` + 5), to recognize a key seen in a client config.
    #[serde(default)]
    pub prefix: String,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
}

impl KeyRecord {
    /// A revoked key never authenticates again.
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// Layout of `keys.json`; the version lets a later layout refuse to be misread.
#[derive(Serialize, Deserialize)]
struct KeyFile {
    version: u32,
    keys: Vec<KeyRecord>,
}

/// Identity of the key file as loaded; a change in any field means "reload".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        FileStamp { len: meta.len(), modified: meta.modified().ok(), inode: inode(meta) }
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

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
        let snapshot = self.snapshot.read().unwrap_or_else(PoisonError::into_inner);
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
        self.last_reload_error.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn current(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(PoisonError::into_inner))
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
        let mut last = self.last_reload_error.lock().unwrap_or_else(PoisonError::into_inner);
        *last = result.as_ref().err().map(ToString::to_string);
        result
    }

    fn reload_if_changed(&self) -> Result<bool, KeyError> {
        let mut load = self.load.lock().unwrap_or_else(PoisonError::into_inner);
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
        *self.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(snapshot);
    }

    /// Read-modify-write under the process mutex and the cross-process file lock: re-reads the
    /// file so a change made by another process since our last load is kept, applies `change`,
    /// writes atomically, and installs the result as this process's view.
    fn modify<T>(&self, change: impl FnOnce(&mut Vec<KeyRecord>) -> Result<T, KeyError>) -> Result<T, KeyError> {
        let _guard = self.write_guard.lock().unwrap_or_else(PoisonError::into_inner);
        let _lock = lock_exclusive(&self.lock_path)?;
        let mut load = self.load.lock().unwrap_or_else(PoisonError::into_inner);
        let mut records = read_key_file(&self.path)?.records;
        let out = change(&mut records)?;
        let digests = digests(&self.path, &records)?;
        let bytes = serialize(&records).map_err(|e| corrupt(&self.path, e.to_string()))?;
        let stamp = write_atomic(&self.path, &bytes)?;
        self.install(Snapshot::build(records, digests));
        *load = LoadState { stamp: Some(stamp), loaded_at: Instant::now() };
        Ok(out)
    }
}

/// Index of the one record named by `query` (see [`KeyStore::revoke`]).
fn resolve(records: &[KeyRecord], query: &str) -> Result<usize, KeyError> {
    let query = query.trim();
    if let Some(i) = records.iter().position(|r| r.id == query) {
        return Ok(i);
    }
    if query.len() <= MAX_SECRET_LEN {
        let hash = to_hex(&sha256(query));
        if let Some(i) = records.iter().position(|r| r.hash.eq_ignore_ascii_case(&hash)) {
            return Ok(i);
        }
    }
    // Only the stored prefix of a longer input can be compared.
    let probe = query.get(..query.len().min(STORED_PREFIX_LEN)).unwrap_or_default();
    if probe.len() < MIN_REVOKE_PREFIX || !probe.starts_with(SECRET_PREFIX) {
        return Err(KeyError::NotFound(redact(query)));
    }
    let mut hits = records.iter().enumerate().filter(|(_, r)| r.prefix.starts_with(probe)).map(|(i, _)| i);
    match (hits.next(), hits.next()) {
        (Some(i), None) => Ok(i),
        (Some(_), Some(_)) => Err(KeyError::Ambiguous(redact(query))),
        (None, _) => Err(KeyError::NotFound(redact(query))),
    }
}

/// What an error message may show of user input that might be a secret.
fn redact(s: &str) -> String {
    if s.starts_with(SECRET_PREFIX) && s.len() > STORED_PREFIX_LEN {
        let head: String = s.chars().take(STORED_PREFIX_LEN).collect();
        format!("{head}...")
    } else {
        s.chars().take(64).collect()
    }
}

fn validate_user(user: &str) -> Result<String, KeyError> {
    let user = user.trim();
    let ok = !user.is_empty() && user.chars().count() <= 128 && !user.chars().any(char::is_control);
    if ok {
        Ok(user.to_string())
    } else {
        Err(KeyError::InvalidUser(user.chars().take(64).filter(|c| !c.is_control()).collect()))
    }
}

fn new_secret(rng: &mut impl Rng) -> String {
    let mut s = String::with_capacity(SECRET_PREFIX.len() + SECRET_RANDOM_CHARS);
    s.push_str(SECRET_PREFIX);
    s.extend(rng.sample_iter(Alphanumeric).take(SECRET_RANDOM_CHARS).map(char::from));
    s
}

fn sha256(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Parses 64 hex digits (either case) into a digest.
fn parse_digest(digits: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn io_error(path: &Path, source: io::Error) -> KeyError {
    KeyError::Io { path: path.to_path_buf(), source }
}

fn corrupt(path: &Path, reason: String) -> KeyError {
    KeyError::Corrupt { path: path.to_path_buf(), reason }
}

/// A parsed, validated key file.
struct Loaded {
    records: Vec<KeyRecord>,
    digests: Vec<[u8; 32]>,
    stamp: Option<FileStamp>,
}

fn file_stamp(path: &Path) -> Result<Option<FileStamp>, KeyError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(FileStamp::of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Reads and validates the key file; a missing file is an empty store. The stamp comes from
/// the open handle, so it describes exactly the bytes read even if the file is replaced
/// meanwhile.
fn read_key_file(path: &Path) -> Result<Loaded, KeyError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Loaded { records: Vec::new(), digests: Vec::new(), stamp: None })
        }
        Err(e) => return Err(io_error(path, e)),
    };
    let stamp = FileStamp::of(&file.metadata().map_err(|e| io_error(path, e))?);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| io_error(path, e))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(corrupt(path, "the file is empty".into()));
    }
    let parsed: KeyFile = serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e.to_string()))?;
    if parsed.version != FILE_VERSION {
        let reason = format!("layout version {} (this build reads version {FILE_VERSION})", parsed.version);
        return Err(corrupt(path, reason));
    }
    let digests = digests(path, &parsed.keys)?;
    Ok(Loaded { records: parsed.keys, digests, stamp: Some(stamp) })
}

/// Parses every record's hash and checks ids and hashes are unique.
fn digests(path: &Path, records: &[KeyRecord]) -> Result<Vec<[u8; 32]>, KeyError> {
    let mut ids = HashSet::with_capacity(records.len());
    let mut seen = HashSet::with_capacity(records.len());
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let name = format!("key {} ({})", i + 1, r.id.chars().take(32).collect::<String>());
            if r.id.is_empty() || !ids.insert(r.id.as_str()) {
                return Err(corrupt(path, format!("{name}: empty or duplicate id")));
            }
            let digest =
                parse_digest(&r.hash).ok_or_else(|| corrupt(path, format!("{name}: hash is not 64 hex digits")))?;
            if !seen.insert(digest) {
                return Err(corrupt(path, format!("{name}: same hash as an earlier key")));
            }
            Ok(digest)
        })
        .collect()
}

fn serialize(records: &[KeyRecord]) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Out<'a> {
        version: u32,
        keys: &'a [KeyRecord],
    }
    let mut bytes = serde_json::to_vec_pretty(&Out { version: FILE_VERSION, keys: records })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Blocks until this process holds the exclusive advisory lock; released when dropped.
fn lock_exclusive(path: &Path) -> Result<File, KeyError> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(|e| io_error(path, e))?;
    file.lock().map_err(|e| io_error(path, e))?;
    Ok(file)
}

/// Writes `bytes` to a private temp file, syncs it, renames it over `path` and syncs the
/// directory, so a crash leaves either the old or the new file. Returns the new file's stamp.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<FileStamp, KeyError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let tmp = dir.join(format!(".{KEYS_FILE}.tmp.{}", std::process::id()));
    let file = durable::replace(path, &tmp, bytes, Access::Owner).map_err(|e| io_error(path, e.source))?;
    Ok(FileStamp::of(&file.metadata().map_err(|e| io_error(path, e))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    fn store(dir: &Path) -> KeyStore {
        KeyStore::open(dir).expect("open key store")
    }

    #[test]
    fn sha256_matches_the_fips_180_2_test_vector() {
        // FIPS 180-2, appendix B.1: SHA-256("abc").
        assert_eq!(to_hex(&sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let d = parse_digest("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD").unwrap();
        assert_eq!(d, sha256("abc"));
        assert!(parse_digest("ba78").is_none());
        assert!(parse_digest(&"g".repeat(64)).is_none());
        assert!(parse_digest(&"é".repeat(32)).is_none());
    }

    #[test]
    fn tiers_parse_case_insensitively_and_serialize_lowercase() {
        assert_eq!("Professional".parse::<Tier>().unwrap(), Tier::Professional);
        assert_eq!("DEVELOPER".parse::<Tier>().unwrap(), Tier::Developer);
        assert_eq!(" enterprise ".parse::<Tier>().unwrap(), Tier::Enterprise);
        assert_eq!("testing".parse::<Tier>().unwrap(), Tier::Testing);
        assert!(matches!("gold".parse::<Tier>(), Err(KeyError::UnknownTier(t)) if t == "gold"));
        assert!("".parse::<Tier>().is_err());
        assert_eq!(serde_json::to_string(&Tier::Enterprise).unwrap(), "\"enterprise\"");
        assert_eq!(serde_json::from_str::<Tier>("\"Enterprise\"").unwrap(), Tier::Enterprise);
        assert!(serde_json::from_str::<Tier>("\"platinum\"").is_err());
        assert!(Tier::Developer.has_premium_endpoints() && Tier::Enterprise.has_premium_endpoints());
        assert!(!Tier::Professional.has_premium_endpoints() && !Tier::Testing.has_premium_endpoints());
    }

    #[test]
    fn create_returns_a_secret_that_authenticates() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (rec, secret) = keys.create(Tier::Developer, "alice", false, true).unwrap();
        assert!(secret.starts_with("wx_"));
        assert_eq!(secret.len(), 43);
        assert!(secret[3..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert!(rec.id.starts_with("k_") && rec.id.len() == 10);
        assert!(rec.id[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(rec.prefix, &secret[..8]);
        assert_eq!(rec.hash, to_hex(&sha256(&secret)));
        assert_eq!((rec.tier, rec.user.as_str(), rec.admin, rec.stream), (Tier::Developer, "alice", false, true));
        let auth = keys.authenticate(&secret).expect("fresh key authenticates");
        assert_eq!(*auth, rec);
        assert!(keys.authenticate("").is_none());
        assert!(keys.authenticate("wx_nope").is_none());
        assert!(keys.authenticate(&secret[..42]).is_none());
        assert!(keys.authenticate(&format!("{secret} ")).is_none());
        assert!(keys.authenticate(&"x".repeat(10_000)).is_none());
    }

    #[test]
    fn two_keys_get_distinct_secrets_ids_and_list_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (a, sa) = keys.create(Tier::Professional, "a", false, false).unwrap();
        let (b, sb) = keys.create(Tier::Enterprise, "b", true, false).unwrap();
        assert_ne!(sa, sb);
        assert_ne!(a.id, b.id);
        assert_eq!(keys.list(), vec![a.clone(), b.clone()]);
        assert_eq!(keys.authenticate(&sb).unwrap().id, b.id);
        assert_eq!(keys.authenticate(&sa).unwrap().id, a.id);
    }

    #[test]
    fn invalid_users_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        assert!(matches!(keys.create(Tier::Testing, "  ", false, false), Err(KeyError::InvalidUser(_))));
        assert!(matches!(keys.create(Tier::Testing, "a\nb", false, false), Err(KeyError::InvalidUser(_))));
        assert!(matches!(keys.create(Tier::Testing, &"u".repeat(129), false, false), Err(KeyError::InvalidUser(_))));
        assert!(keys.list().is_empty());
        assert!(!keys.path().exists(), "a refused create writes nothing");
    }

    #[test]
    fn revoke_by_id_keeps_the_record_and_stops_authentication() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (rec, secret) = keys.create(Tier::Professional, "bob", false, false).unwrap();
        let revoked = keys.revoke(&rec.id).unwrap();
        assert_eq!(revoked.id, rec.id);
        let at = revoked.revoked_at.expect("revocation time set");
        assert!(keys.authenticate(&secret).is_none());
        let listed = keys.list();
        assert_eq!(listed.len(), 1);
        assert!(!listed[0].is_active());
        // Repeating is harmless and keeps the first revocation time.
        assert_eq!(keys.revoke(&rec.id).unwrap().revoked_at, Some(at));
    }

    #[test]
    fn revoke_by_secret_or_secret_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (a, sa) = keys.create(Tier::Professional, "a", false, false).unwrap();
        let (b, sb) = keys.create(Tier::Professional, "b", false, false).unwrap();
        assert_eq!(keys.revoke(&sa).unwrap().id, a.id);
        assert!(keys.authenticate(&sa).is_none());
        assert!(keys.authenticate(&sb).is_some());
        // A prefix longer than the stored one compares the stored part.
        assert_eq!(keys.revoke(&sb[..12]).unwrap().id, b.id);
        assert!(keys.authenticate(&sb).is_none());
    }

    #[test]
    fn revoke_reports_unknown_short_and_ambiguous_queries() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
        assert!(matches!(keys.revoke("k_00000000"), Err(KeyError::NotFound(_))));
        assert!(matches!(keys.revoke(&secret[..6]), Err(KeyError::NotFound(_))), "prefix too short");
        assert!(keys.authenticate(&secret).is_some());
        // Error messages never carry a whole secret.
        let wrong = format!("wx_{}", "Z".repeat(40));
        let msg = keys.revoke(&wrong).unwrap_err().to_string();
        assert!(!msg.contains(&wrong), "{msg}");

        // Two keys sharing a prefix: the prefix is ambiguous, the ids are not.
        let text = std::fs::read_to_string(keys.path()).unwrap();
        drop(keys);
        let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut second = file["keys"][0].clone();
        second["id"] = "k_deadbeef".into();
        second["hash"] = to_hex(&sha256("other")).into();
        file["keys"].as_array_mut().unwrap().push(second);
        std::fs::write(dir.path().join(KEYS_FILE), file.to_string()).unwrap();
        let keys = store(dir.path());
        assert!(matches!(keys.revoke(&secret[..8]), Err(KeyError::Ambiguous(_))));
        assert_eq!(keys.revoke("k_deadbeef").unwrap().id, "k_deadbeef");
        assert!(keys.authenticate(&secret).is_some());
    }

    #[test]
    fn enable_stream_persists_and_refuses_revoked_keys() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let (rec, secret) = keys.create(Tier::Enterprise, "carol", false, false).unwrap();
        assert!(!keys.authenticate(&secret).unwrap().stream);
        assert!(keys.enable_stream(&rec.id).unwrap().stream);
        assert!(keys.authenticate(&secret).unwrap().stream);
        drop(keys);
        let keys = store(dir.path());
        assert!(keys.authenticate(&secret).unwrap().stream);
        assert!(!keys.set_stream(&rec.id, false).unwrap().stream);
        keys.revoke(&rec.id).unwrap();
        assert!(matches!(keys.enable_stream(&rec.id), Err(KeyError::Revoked(id)) if id == rec.id));
        assert!(matches!(keys.enable_stream("k_nothere"), Err(KeyError::NotFound(_))));
    }

    #[test]
    fn keys_persist_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (a, sa, b) = {
            let keys = store(dir.path());
            let (a, sa) = keys.create(Tier::Developer, "dave", true, true).unwrap();
            let (b, _) = keys.create(Tier::Testing, "erin", false, false).unwrap();
            keys.revoke(&b.id).unwrap();
            (a, sa, b)
        };
        let keys = store(dir.path());
        let listed = keys.list();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0], a);
        assert_eq!(listed[1].id, b.id);
        assert!(listed[1].revoked_at.is_some());
        assert_eq!(*keys.authenticate(&sa).unwrap(), a);
    }

    #[test]
    fn secrets_are_not_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path());
        let secrets: Vec<String> =
            (0..3).map(|i| keys.create(Tier::Professional, &format!("u{i}"), false, false).unwrap().1).collect();
        let text = std::fs::read_to_string(keys.path()).unwrap();
        for s in &secrets {
            assert!(!text.contains(s.as_str()));
            assert!(!text.contains(&s[8..]), "only the 8-character prefix may be stored");
            assert!(text.contains(&to_hex(&sha256(s))));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(keys.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temp files left behind: {leftovers:?}");
    }

    #[test]
    fn corrupt_files_give_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        let hash = to_hex(&sha256("s"));
        let record = |id: &str, hash: &str| {
            format!(
                r#"{{"id":"{id}","user":"u","tier":"developer","created_at":"2024-01-01T00:00:00Z","hash":"{hash}"}}"#
            )
        };
        let cases = [
            ("{not json".to_string(), "key"),
            (String::new(), "empty"),
            ("\u{0}\u{1}binary\u{ff}".to_string(), "key"),
            (r#"{"version":2,"keys":[]}"#.to_string(), "version 2"),
            (format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", "abc")), "hash is not 64 hex"),
            (
                format!(r#"{{"version":1,"keys":[{},{}]}}"#, record("k_1", &hash), record("k_1", &to_hex(&[7; 32]))),
                "duplicate id",
            ),
            (format!(r#"{{"version":1,"keys":[{},{}]}}"#, record("k_1", &hash), record("k_2", &hash)), "same hash"),
            (
                format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", &hash).replace("developer", "gold")),
                "unknown tier 'gold'",
            ),
        ];
        for (text, expected) in cases {
            std::fs::write(&path, &text).unwrap();
            let err = KeyStore::open(dir.path()).err().unwrap_or_else(|| panic!("{text:?} opened"));
            assert!(matches!(err, KeyError::Corrupt { .. }), "{text:?}: {err:?}");
            let msg = err.to_string();
            assert!(msg.contains("keys.json") && msg.contains(expected), "{text:?}: {msg}");
        }
        // A well-formed record in any tier case loads.
        std::fs::write(
            &path,
            format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", &hash).replace("developer", "Developer")),
        )
        .unwrap();
        let keys = store(dir.path());
        assert_eq!(keys.authenticate("s").unwrap().tier, Tier::Developer);
    }

    #[test]
    fn a_file_corrupted_while_running_keeps_the_old_keys_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path()).with_check_interval(Duration::ZERO);
        let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
        std::fs::write(keys.path(), "{\"version\":1,\"keys\":[").unwrap();
        assert!(keys.authenticate(&secret).is_some(), "previous keys stay in force");
        assert!(keys.last_reload_error().unwrap().contains("keys.json"));
        assert!(matches!(keys.reload_now(), Err(KeyError::Corrupt { .. })));
        assert!(matches!(keys.create(Tier::Professional, "b", false, false), Err(KeyError::Corrupt { .. })));
        assert_eq!(std::fs::read_to_string(keys.path()).unwrap(), "{\"version\":1,\"keys\":[");
    }

    #[test]
    fn another_process_revoking_is_seen_after_reload() {
        let dir = tempfile::tempdir().unwrap();
        let server = store(dir.path());
        let (rec, secret) = server.create(Tier::Developer, "a", false, false).unwrap();
        assert!(server.authenticate(&secret).is_some());
        let cli = store(dir.path());
        cli.revoke(&rec.id).unwrap();
        // Within the check interval the server still uses its snapshot...
        assert!(server.authenticate(&secret).is_some());
        // ...and the next check picks the change up.
        assert!(server.reload_now().unwrap());
        assert!(server.authenticate(&secret).is_none());
        assert!(!server.reload_now().unwrap(), "unchanged file is not reloaded");
    }

    #[test]
    fn checks_on_the_authentication_path_see_other_processes_changes() {
        let dir = tempfile::tempdir().unwrap();
        let server = store(dir.path()).with_check_interval(Duration::ZERO);
        let cli = store(dir.path());
        let (rec, secret) = cli.create(Tier::Enterprise, "a", false, false).unwrap();
        assert!(server.authenticate(&secret).is_some(), "new keys appear");
        cli.revoke(&rec.id).unwrap();
        assert!(server.authenticate(&secret).is_none(), "revoked keys disappear");
    }

    #[test]
    fn revocation_reaches_a_running_store_within_two_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let server = store(dir.path());
        let (rec, secret) = server.create(Tier::Professional, "a", false, false).unwrap();
        assert!(server.authenticate(&secret).is_some());
        let start = Instant::now();
        store(dir.path()).revoke(&rec.id).unwrap();
        while server.authenticate(&secret).is_some() {
            assert!(start.elapsed() < Duration::from_secs(2), "revocation not seen after 2 s");
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn concurrent_writers_in_separate_stores_lose_no_update() {
        let dir = tempfile::tempdir().unwrap();
        let a = store(dir.path());
        let b = store(dir.path());
        // b's snapshot is stale when it writes; its write must keep a's key.
        let (ka, _) = a.create(Tier::Professional, "a", false, false).unwrap();
        let (kb, _) = b.create(Tier::Professional, "b", false, false).unwrap();
        a.revoke(&kb.id).unwrap();
        let ids: Vec<String> = store(dir.path()).list().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![ka.id.clone(), kb.id.clone()]);

        let handles: Vec<_> = (0..4)
            .map(|t| {
                let dir = dir.path().to_path_buf();
                thread::spawn(move || {
                    let keys = KeyStore::open(&dir).unwrap();
                    (0..5)
                        .map(|i| keys.create(Tier::Developer, &format!("t{t}-{i}"), false, false).unwrap().1)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let secrets: Vec<String> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let keys = store(dir.path());
        assert_eq!(keys.list().len(), 2 + 20);
        assert!(secrets.iter().all(|s| keys.authenticate(s).is_some()));
        assert!(keys.list()[1].revoked_at.is_some(), "the earlier revocation survived");
    }

    #[test]
    fn deleting_the_file_empties_a_running_store() {
        let dir = tempfile::tempdir().unwrap();
        let keys = store(dir.path()).with_check_interval(Duration::ZERO);
        let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
        std::fs::remove_file(keys.path()).unwrap();
        assert!(keys.authenticate(&secret).is_none());
        assert!(keys.list().is_empty());
    }
}
