//! All object-store wiring lives here: turning the lake URL into a store, the root path
//! inside it, and the URL prefix DataFusion resolves table paths against.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::ObjectStore;
use url::Url;

use super::visibility::VisibleStore;
use super::LakeError;

/// The default lake location (relative to the working directory).
pub const DEFAULT_LAKE: &str = "file://./data/lake";

/// Where the lake lives.
#[derive(Debug, Clone)]
pub struct LakeLocation {
    /// `scheme://authority` the store is registered under in DataFusion.
    pub base_url: Url,
    /// Root path of the lake inside the store.
    pub root: Path,
    /// A local directory for the lake, when it is on the local filesystem.
    pub local_dir: Option<std::path::PathBuf>,
}

/// Parses a lake URL: `file://./rel`, `file:///abs`, a bare path, or `s3://bucket/prefix`.
pub fn parse_location(lake: &str) -> Result<LakeLocation, LakeError> {
    let bad = |reason: &str| LakeError::Config(format!("lake URL '{lake}': {reason}"));
    if let Some(rest) = lake.strip_prefix("file://") {
        return local_location(rest);
    }
    if !lake.contains("://") {
        return local_location(lake);
    }
    let url = Url::parse(lake).map_err(|e| bad(&e.to_string()))?;
    match url.scheme() {
        "s3" => {
            let bucket = url.host_str().ok_or_else(|| bad("missing bucket"))?;
            let base_url = Url::parse(&format!("s3://{bucket}")).map_err(|e| bad(&e.to_string()))?;
            let root = Path::from(url.path().trim_matches('/'));
            Ok(LakeLocation { base_url, root, local_dir: None })
        }
        other => Err(bad(&format!("unsupported scheme '{other}' (use file:// or s3://)"))),
    }
}

fn local_location(path: &str) -> Result<LakeLocation, LakeError> {
    let p = std::path::Path::new(if path.is_empty() { "." } else { path });
    std::fs::create_dir_all(p).map_err(|e| LakeError::Config(format!("lake dir {}: {e}", p.display())))?;
    let abs = std::fs::canonicalize(p).map_err(|e| LakeError::Config(format!("lake dir {}: {e}", p.display())))?;
    let root = Path::from_absolute_path(&abs).map_err(|e| LakeError::Config(e.to_string()))?;
    let base_url = Url::parse("file:///").map_err(|e| LakeError::Config(e.to_string()))?;
    Ok(LakeLocation { base_url, root, local_dir: Some(abs) })
}

/// Builds the raw store for a location and wraps it so uncommitted files stay invisible.
pub fn open_store(loc: &LakeLocation) -> Result<Arc<VisibleStore>, LakeError> {
    let inner: Arc<dyn ObjectStore> = match loc.base_url.scheme() {
        "file" => Arc::new(LocalFileSystem::new()),
        "s3" => {
            let bucket = loc.base_url.host_str().unwrap_or_default();
            Arc::new(
                AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()
                    .map_err(|e| LakeError::Config(format!("s3 store: {e}")))?,
            )
        }
        other => return Err(LakeError::Config(format!("unsupported scheme {other}"))),
    };
    Ok(Arc::new(VisibleStore::new(inner, loc.root.clone().join("_txn"))))
}

/// URL of a path inside the store, as DataFusion's ListingTableUrl wants it (with a
/// trailing slash so it is treated as a directory).
pub fn dir_url(loc: &LakeLocation, path: &Path) -> String {
    let base = loc.base_url.as_str().trim_end_matches('/');
    format!("{base}/{path}/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lake");
        let loc = parse_location(&format!("file://{}", p.display())).unwrap();
        assert!(loc.local_dir.unwrap().ends_with("lake"));
        assert_eq!(loc.base_url.as_str(), "file:///");
        let s3 = parse_location("s3://my-bucket/wx/lake").unwrap();
        assert_eq!(s3.base_url.as_str(), "s3://my-bucket");
        assert_eq!(s3.root.as_ref(), "wx/lake");
        assert_eq!(dir_url(&s3, &s3.root.clone().join("observations")), "s3://my-bucket/wx/lake/observations/");
        assert!(parse_location("ftp://x/y").is_err());
    }
}
