//! Writers across processes: the advisory lock that serializes them and the atomic replace
//! (through [`crate::durable`]) that keeps readers from ever seeing a half-written file.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::error::{io_error, KeyError};
use super::file::{FileStamp, KEYS_FILE};
use crate::durable::{self, Access};

/// Blocks until this process holds the exclusive advisory lock; released when dropped.
pub(super) fn lock_exclusive(path: &Path) -> Result<File, KeyError> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(|e| io_error(path, e))?;
    file.lock().map_err(|e| io_error(path, e))?;
    Ok(file)
}

/// Writes `bytes` to a private temp file, syncs it, renames it over `path` and syncs the
/// directory, so a crash leaves either the old or the new file. Returns the new file's stamp.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<FileStamp, KeyError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let tmp = dir.join(format!(".{KEYS_FILE}.tmp.{}", std::process::id()));
    let file = durable::replace(path, &tmp, bytes, Access::Owner).map_err(|e| io_error(path, e.source))?;
    Ok(FileStamp::of(&file.metadata().map_err(|e| io_error(path, e))?))
}
