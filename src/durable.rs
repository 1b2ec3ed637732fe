//! Crash-safe updates of small local files (the WAL checkpoint, the API key file, the event
//! log's id reservation): the two steps each of them needs, written once.
//!
//! A rename is atomic but not durable until the directory holding it is fsynced, and the
//! renamed file's bytes are durable only if they were fsynced before the rename. So a
//! replacement writes a temporary file, fsyncs it, renames it over the target and fsyncs the
//! directory ([`replace`]); after a crash the target holds either the old or the new bytes,
//! never a mix. Creating or deleting a file needs the same directory fsync ([`sync_dir`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Which step of a [`replace`] failed, on which path.
#[derive(Debug, Error)]
#[error("{step} {}: {source}", path.display())]
pub struct DurableError {
    /// `create`, `write`, `fsync` or `rename`.
    pub step: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Who may read a replaced file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The process's umask decides.
    Default,
    /// Owner only (mode 0600 on Unix), set on the temporary file before any byte is written.
    Owner,
}

/// Makes a create, rename or delete in `dir` durable. A no-op where directories cannot be
/// opened for fsync (not Unix).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Replaces `path` with `bytes` through `tmp` (in the same directory): write and fsync
/// `tmp`, rename it over `path`, fsync the directory. On failure the temporary file is
/// removed and `path` is left as it was (or, if only the directory fsync failed, already
/// replaced but perhaps not durable). Returns the new file, still open.
pub fn replace(path: &Path, tmp: &Path, bytes: &[u8], access: Access) -> Result<File, DurableError> {
    let fail = |step, path: &Path| {
        let path = path.to_path_buf();
        move |source| DurableError { step, path, source }
    };
    let result = (|| {
        let mut file = create(tmp, access).map_err(fail("create", tmp))?;
        file.write_all(bytes).map_err(fail("write", tmp))?;
        file.sync_all().map_err(fail("fsync", tmp))?;
        std::fs::rename(tmp, path).map_err(fail("rename", path))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        sync_dir(dir).map_err(fail("fsync", dir))?;
        Ok(file)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}

fn create(path: &Path, access: Access) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if access == Access::Owner {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = access;
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_swaps_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let (path, tmp) = (dir.path().join("state"), dir.path().join("state.tmp"));
        std::fs::write(&path, b"old and longer").unwrap();
        replace(&path, &tmp, b"new", Access::Default).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!tmp.exists());
    }

    #[cfg(unix)]
    #[test]
    fn owner_access_is_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let file = replace(&path, &dir.path().join(".keys.tmp"), b"{}", Access::Owner).unwrap();
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_failed_step_names_it_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        std::fs::write(&path, b"old").unwrap();
        // The temporary file's directory does not exist: the create step fails.
        let tmp = dir.path().join("missing").join("state.tmp");
        let err = replace(&path, &tmp, b"new", Access::Default).unwrap_err();
        assert_eq!((err.step, err.path.as_path()), ("create", tmp.as_path()));
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }
}
