//! Writers across processes: the advisory lock that serializes them and the atomic replace
//! that keeps readers from ever seeing a half-written file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::error::{io_error, KeyError};
use super::file::{FileStamp, KEYS_FILE};

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
    let result = (|| {
        let mut file = private_file(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)?;
        Ok(FileStamp::of(&file.metadata()?))
    })();
    result.map_err(|e: io::Error| {
        let _ = std::fs::remove_file(&tmp);
        io_error(path, e)
    })
}

/// The key file holds no secrets, but its owner alone needs to read it.
#[cfg(unix)]
pub(super) fn private_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
pub(super) fn private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create(true).truncate(true).open(path)
}

#[cfg(unix)]
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(super) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}
