//! Object-store requests counted by kind, so a query that suddenly lists the whole lake (on
//! S3 every LIST page and every GET is paid for and takes a round trip) shows up in a test
//! and in `wxlake -v` output instead of in the bill.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};

/// Objects S3 returns per LIST page: a listing of more costs one more request per page.
const LIST_PAGE: u64 = 1000;

/// Requests made so far, by kind (a snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// GETs of whole objects or of byte ranges (each range of a `get_ranges` counts once:
    /// an upper bound, the S3 client may coalesce adjacent ranges).
    pub get: u64,
    /// HEADs (object metadata only).
    pub head: u64,
    /// LIST pages (one per call, plus one per further [`LIST_PAGE`] objects).
    pub list: u64,
    /// PUTs, single or multipart uploads.
    pub put: u64,
    /// DELETEs, one per object.
    pub delete: u64,
    /// Server-side copies (a rename on S3 is a copy and a delete).
    pub copy: u64,
    /// Objects the LISTs returned: what a query that lists more of the lake than it
    /// reads shows first (below 1,000 objects a whole-table listing is still one LIST).
    pub listed: u64,
}

impl RequestCounts {
    /// Every request of every kind.
    pub fn total(&self) -> u64 {
        self.get + self.head + self.list + self.put + self.delete + self.copy
    }
}

impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GET {} HEAD {} LIST {} PUT {} DELETE {} COPY {} (objects listed {})",
            self.get, self.head, self.list, self.put, self.delete, self.copy, self.listed
        )
    }
}

#[derive(Debug, Default)]
struct Counters {
    get: AtomicU64,
    head: AtomicU64,
    list: AtomicU64,
    put: AtomicU64,
    delete: AtomicU64,
    copy: AtomicU64,
    listed: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// An object store that counts the requests passed to the store it wraps.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<Counters>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        CountingStore { inner, counters: Arc::default() }
    }

    /// The requests made through this store so far.
    pub fn counts(&self) -> RequestCounts {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RequestCounts {
            get: load(&c.get),
            head: load(&c.head),
            list: load(&c.list),
            put: load(&c.put),
            delete: load(&c.delete),
            copy: load(&c.copy),
            listed: load(&c.listed),
        }
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

/// Counts a listing's pages as its objects stream by (the first page when it starts).
fn counted_listing(
    counters: Arc<Counters>,
    listing: BoxStream<'static, Result<ObjectMeta>>,
) -> BoxStream<'static, Result<ObjectMeta>> {
    bump(&counters.list, 1);
    let mut seen = 0u64;
    listing
        .inspect(move |_| {
            bump(&counters.listed, 1);
            seen += 1;
            if seen % LIST_PAGE == 1 && seen > 1 {
                bump(&counters.list, 1);
            }
        })
        .boxed()
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        bump(&self.counters.put, 1);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        bump(&self.counters.put, 1);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        bump(if options.head { &self.counters.head } else { &self.counters.get }, 1);
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        bump(&self.counters.get, ranges.len() as u64);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let counters = Arc::clone(&self.counters);
        let locations = locations.inspect(move |_| bump(&counters.delete, 1)).boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        counted_listing(Arc::clone(&self.counters), self.inner.list(prefix))
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        counted_listing(Arc::clone(&self.counters), self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        bump(&self.counters.list, 1);
        let res = self.inner.list_with_delimiter(prefix).await?;
        bump(&self.counters.listed, (res.objects.len() + res.common_prefixes.len()) as u64);
        Ok(res)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        bump(&self.counters.copy, 1);
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn counts_each_kind_and_each_list_page() {
        let s = CountingStore::new(Arc::new(InMemory::new()));
        for i in 0..1001 {
            s.put(&Path::from(format!("t/{i}")), PutPayload::from_static(b"x")).await.unwrap();
        }
        s.get(&Path::from("t/0")).await.unwrap();
        s.head(&Path::from("t/0")).await.unwrap();
        let all: Vec<_> = s.list(Some(&Path::from("t"))).try_collect().await.unwrap();
        assert_eq!(all.len(), 1001);
        s.delete(&Path::from("t/0")).await.unwrap();
        s.copy(&Path::from("t/1"), &Path::from("u/1")).await.unwrap();
        let c = s.counts();
        assert_eq!((c.put, c.get, c.head, c.list, c.delete, c.copy), (1001, 1, 1, 2, 1, 1), "{c}");
        assert_eq!(c.listed, 1001);
        assert_eq!(c.total(), 1007);
    }
}
