//! All object-store wiring lives here: turning the lake URL into a store, the root path
//! inside it, and the URL prefix DataFusion resolves table paths against.
//!
//! An `s3://bucket/prefix` lake is configured by the usual `AWS_*` environment
//! (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_ALLOW_HTTP` for a plain-HTTP endpoint, and
//! `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`: requests are path-style unless it is `true`). The
//! store retries briefly: a wrong endpoint or a missing bucket should be an error in
//! seconds, not after the client's default minutes of backoff.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, RetryConfig};
use url::Url;

use super::requests::CountingStore;
use super::LakeError;
use crate::error_chain::error_chain;

/// Retries of one S3 request: enough for a throttled or briefly unavailable endpoint.
const S3_RETRIES: usize = 4;
/// Time after which a failing S3 request is not retried any more.
const S3_RETRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

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
    let url = Url::parse(lake).map_err(|e| LakeError::setup(format!("lake URL '{lake}': {e}"), e))?;
    match url.scheme() {
        "s3" => {
            let bucket = url.host_str().ok_or_else(|| bad("missing bucket"))?;
            let base_url = Url::parse(&format!("s3://{bucket}"))
                .map_err(|e| LakeError::setup(format!("lake URL '{lake}': {e}"), e))?;
            let root = Path::from(url.path().trim_matches('/'));
            Ok(LakeLocation { base_url, root, local_dir: None })
        }
        other => Err(bad(&format!("unsupported scheme '{other}' (use file:// or s3://)"))),
    }
}

fn local_location(path: &str) -> Result<LakeLocation, LakeError> {
    let p = std::path::Path::new(if path.is_empty() { "." } else { path });
    let dir = |e: std::io::Error| LakeError::setup(format!("lake dir {}: {e}", p.display()), e);
    std::fs::create_dir_all(p).map_err(dir)?;
    let abs = std::fs::canonicalize(p).map_err(dir)?;
    let root = Path::from_absolute_path(&abs).map_err(|e| LakeError::setup(e.to_string(), e))?;
    let base_url = Url::parse("file:///").map_err(|e| LakeError::setup(e.to_string(), e))?;
    Ok(LakeLocation { base_url, root, local_dir: Some(abs) })
}

/// Builds the store for a location, every request counted.
pub fn open_store(loc: &LakeLocation) -> Result<Arc<CountingStore>, LakeError> {
    let inner: Arc<dyn ObjectStore> = match loc.base_url.scheme() {
        "file" => Arc::new(LocalFileSystem::new()),
        "s3" => s3_store(loc.base_url.host_str().unwrap_or_default())?,
        other => return Err(LakeError::Config(format!("unsupported scheme {other}"))),
    };
    Ok(Arc::new(CountingStore::new(inner)))
}

/// Deletes `p`, treating "already gone" as done.
pub(crate) async fn delete_if_present(store: &dyn ObjectStore, p: &Path) -> Result<(), object_store::Error> {
    match store.delete(p).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The raw store of one S3 bucket, configured by the `AWS_*` environment (module docs).
pub fn s3_store(bucket: &str) -> Result<Arc<dyn ObjectStore>, LakeError> {
    let retry = RetryConfig { max_retries: S3_RETRIES, retry_timeout: S3_RETRY_TIMEOUT, ..Default::default() };
    let store = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(retry)
        .build()
        .map_err(|e| LakeError::setup(format!("s3 store for bucket '{bucket}': {e}"), e))?;
    Ok(Arc::new(store))
}

/// The object stores a query's files are read through: the lake's own (registered at its
/// URL by `query::runtime_env`) and, for an `s3://` bucket a plan names that this process
/// did not open, a store for that bucket built from the `AWS_*` environment as the lake's
/// own is. A cluster executor started without `--lake` (or with another lake) runs plans
/// whose files the scheduler took from an S3 table's snapshot: it reads them by name, so
/// the raw bucket store serves, where DataFusion's default registry failed every task with
/// "No suitable object store found".
#[derive(Debug, Default)]
pub struct LakeStores {
    known: datafusion::execution::object_store::DefaultObjectStoreRegistry,
}

impl datafusion::execution::object_store::ObjectStoreRegistry for LakeStores {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        let known = self.known.get_store(url);
        match (known, url.scheme(), url.host_str()) {
            (Err(_), "s3", Some(bucket)) => {
                let store = s3_store(bucket).map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
                tracing::info!(bucket, endpoint = %s3_endpoint(), "reading a bucket this process did not open");
                self.known.register_store(url, Arc::clone(&store));
                Ok(store)
            }
            (known, _, _) => known,
        }
    }
}

/// The S3 endpoint the environment names (for messages), or AWS's own.
fn s3_endpoint() -> String {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "the AWS S3 endpoint (AWS_ENDPOINT_URL unset)".to_string())
}

/// The S3 error codes that mean the credentials were refused.
const S3_CREDENTIAL_ERRORS: [&str; 5] =
    ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken"];

/// Turns the first failed request of a lake into what an operator can act on: which
/// endpoint could not be reached, which bucket does not exist, that the credentials were
/// refused. Local lakes and other errors pass through unchanged.
pub fn explain(loc: &LakeLocation, e: object_store::Error) -> LakeError {
    if loc.base_url.scheme() != "s3" {
        return e.into();
    }
    let bucket = loc.base_url.host_str().unwrap_or_default();
    let text = error_chain(&e);
    let endpoint = s3_endpoint();
    let msg = if text.contains("URL scheme is not allowed") {
        format!("the S3 endpoint {endpoint} is plain http: set AWS_ALLOW_HTTP=true to allow it (a local test server)")
    } else if text.contains("NoSuchBucket") {
        format!("S3 bucket '{bucket}' does not exist at {endpoint} (create it first)")
    } else if S3_CREDENTIAL_ERRORS.iter().any(|c| text.contains(c)) || text.contains("403 Forbidden") {
        let code = S3_CREDENTIAL_ERRORS.into_iter().find(|c| text.contains(c)).unwrap_or("403 Forbidden");
        format!(
            "S3 refused the credentials for bucket '{bucket}' at {endpoint} ({code}): check AWS_ACCESS_KEY_ID, \
             AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)"
        )
    } else if ["error sending request", "Connection refused", "dns error", "connect error", "timed out"]
        .iter()
        .any(|c| text.contains(c))
    {
        format!(
            "cannot reach the S3 endpoint {endpoint} for bucket '{bucket}': check AWS_ENDPOINT_URL (and \
             AWS_ALLOW_HTTP=true for a plain-http endpoint) ({e})"
        )
    } else {
        return e.into();
    };
    LakeError::Config(msg)
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

    /// A bucket no one registered is opened from the environment (an executor started
    /// without the client's `--lake`); the lake's own registration wins; other schemes
    /// still fail with DataFusion's message.
    #[test]
    fn a_plans_unopened_bucket_is_read_through_the_environments_s3() {
        use datafusion::execution::object_store::ObjectStoreRegistry;
        let stores = LakeStores::default();
        let url = Url::parse("s3://bucket-nobody-opened/lake/observations/").unwrap();
        let store = stores.get_store(&url).expect("built from AWS_*");
        assert!(store.to_string().contains("bucket-nobody-opened"), "{store}");
        let own: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        stores.register_store(&Url::parse("s3://mine").unwrap(), Arc::clone(&own));
        let got = stores.get_store(&Url::parse("s3://mine/x").unwrap()).unwrap();
        assert!(Arc::ptr_eq(&got, &own));
        assert!(stores.get_store(&Url::parse("file:///tmp").unwrap()).is_ok());
        let e = stores.get_store(&Url::parse("gs://other/x").unwrap()).unwrap_err().to_string();
        assert!(e.contains("No suitable object store"), "{e}");
    }

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
