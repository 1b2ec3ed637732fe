//! `keys.json` on disk: its layout, how it is read and validated, and the identity stamp
//! that tells a reader it changed.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::error::{corrupt, corrupt_json, io_error, KeyError};
use super::record::parse_digest;
use super::record::KeyRecord;

/// Name of the key file inside the state directory.
pub const KEYS_FILE: &str = "keys.json";
/// Name of the advisory lock file that serializes writers across processes.
pub const LOCK_FILE: &str = "keys.lock";
/// Current layout of `keys.json`.
pub(super) const FILE_VERSION: u32 = 1;
/// Layout of `keys.json`; the version lets a later layout refuse to be misread.
#[derive(Serialize, Deserialize)]
pub(super) struct KeyFile {
    version: u32,
    keys: Vec<KeyRecord>,
}

/// Identity of the key file as loaded; a change in any field means "reload".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileStamp {
    pub(super) fn of(meta: &std::fs::Metadata) -> Self {
        FileStamp { len: meta.len(), modified: meta.modified().ok(), inode: inode(meta) }
    }
}

#[cfg(unix)]
pub(super) fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
pub(super) fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// A parsed, validated key file.
pub(super) struct Loaded {
    pub(super) records: Vec<KeyRecord>,
    pub(super) digests: Vec<[u8; 32]>,
    pub(super) stamp: Option<FileStamp>,
}

pub(super) fn file_stamp(path: &Path) -> Result<Option<FileStamp>, KeyError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(FileStamp::of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Reads and validates the key file; a missing file is an empty store. The stamp comes from
/// the open handle, so it describes exactly the bytes read even if the file is replaced
/// meanwhile.
pub(super) fn read_key_file(path: &Path) -> Result<Loaded, KeyError> {
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
    let parsed: KeyFile = serde_json::from_slice(&bytes).map_err(|e| corrupt_json(path, e))?;
    if parsed.version != FILE_VERSION {
        let reason = format!("layout version {} (this build reads version {FILE_VERSION})", parsed.version);
        return Err(corrupt(path, reason));
    }
    let digests = digests(path, &parsed.keys)?;
    Ok(Loaded { records: parsed.keys, digests, stamp: Some(stamp) })
}

/// Parses every record's hash and checks ids and hashes are unique.
pub(super) fn digests(path: &Path, records: &[KeyRecord]) -> Result<Vec<[u8; 32]>, KeyError> {
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

pub(super) fn serialize(records: &[KeyRecord]) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Out<'a> {
        version: u32,
        keys: &'a [KeyRecord],
    }
    let mut bytes = serde_json::to_vec_pretty(&Out { version: FILE_VERSION, keys: records })?;
    bytes.push(b'\n');
    Ok(bytes)
}
