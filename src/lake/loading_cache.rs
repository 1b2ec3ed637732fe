//! A keyed in-memory cache of what is read from the lake for the hot paths (raw forecasts,
//! accuracy tables, bracket inputs): an entry is served while it is younger than a TTL and
//! its data version is current, and a missing or stale entry is loaded once: concurrent
//! requests for it wait for that load instead of each running the same lake query.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

struct Slot<V> {
    loaded: Instant,
    version: u64,
    value: Arc<V>,
}

/// See the module docs.
pub struct LoadingCache<K, V> {
    entries: Mutex<HashMap<K, Slot<V>>>,
    /// One gate per key: held while the key loads.
    gates: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K, V> Default for LoadingCache<K, V> {
    fn default() -> Self {
        LoadingCache { entries: Mutex::new(HashMap::new()), gates: Mutex::new(HashMap::new()) }
    }
}

impl<K: Hash + Eq + Clone, V> LoadingCache<K, V> {
    fn fresh(&self, key: &K, version: u64, ttl: Duration) -> Option<Arc<V>> {
        self.entries
            .lock()
            .get(key)
            .filter(|s| s.version == version && s.loaded.elapsed() < ttl)
            .map(|s| Arc::clone(&s.value))
    }

    /// The entry of `key` if it is current (`version`, younger than `ttl`), else the result
    /// of `load`, stored. Only one load per key runs at a time.
    pub async fn get_or_load<F, Fut, E>(&self, key: &K, version: u64, ttl: Duration, load: F) -> Result<Arc<V>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        if let Some(v) = self.fresh(key, version, ttl) {
            return Ok(v);
        }
        let gate = Arc::clone(self.gates.lock().entry(key.clone()).or_default());
        let _loading = gate.lock().await;
        if let Some(v) = self.fresh(key, version, ttl) {
            return Ok(v);
        }
        let value = Arc::new(load().await?);
        self.entries.lock().insert(key.clone(), Slot { loaded: Instant::now(), version, value: Arc::clone(&value) });
        Ok(value)
    }

    /// The entry of `key` of this `version`, current or not (true: younger than `ttl`),
    /// without loading it: a caller that must not wait for a load serves it and refreshes
    /// it elsewhere.
    pub fn peek(&self, key: &K, version: u64, ttl: Duration) -> Option<(Arc<V>, bool)> {
        self.entries
            .lock()
            .get(key)
            .filter(|s| s.version == version)
            .map(|s| (Arc::clone(&s.value), s.loaded.elapsed() < ttl))
    }

    /// The entry of `key` whatever its version and age (a load that refreshes an entry
    /// from what changed since reads it).
    pub fn latest(&self, key: &K) -> Option<Arc<V>> {
        self.entries.lock().get(key).map(|s| Arc::clone(&s.value))
    }

    /// Stores `value` as `key`'s entry, loaded now.
    pub fn insert(&self, key: K, version: u64, value: V) {
        self.entries.lock().insert(key, Slot { loaded: Instant::now(), version, value: Arc::new(value) });
    }

    /// Forgets `key`'s entry (the next request loads it again).
    pub fn remove(&self, key: &K) {
        self.entries.lock().remove(key);
    }

    /// Drops the least recently loaded entries while the entries weigh more than `max`
    /// (the newest entry always stays). Call it from a load, not per request.
    pub fn evict(&self, weight: impl Fn(&V) -> usize, max: usize) {
        let mut map = self.entries.lock();
        let mut total: usize = map.values().map(|s| weight(&s.value)).sum();
        while total > max && map.len() > 1 {
            let Some(oldest) = map.iter().min_by_key(|(_, s)| s.loaded).map(|(k, _)| k.clone()) else { break };
            if let Some(s) = map.remove(&oldest) {
                total -= weight(&s.value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Ten concurrent requests for a missing key run one load; a new version reloads.
    #[tokio::test]
    async fn concurrent_misses_load_once() {
        let cache: Arc<LoadingCache<&str, usize>> = Arc::new(LoadingCache::default());
        let loads = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let (cache, loads) = (Arc::clone(&cache), Arc::clone(&loads));
            tasks.push(tokio::spawn(async move {
                let v = cache
                    .get_or_load(&"k", 1, Duration::from_secs(60), || async {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok::<_, ()>(loads.fetch_add(1, Ordering::SeqCst) + 100)
                    })
                    .await
                    .unwrap();
                *v
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), 100);
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        let v = cache.get_or_load(&"k", 2, Duration::from_secs(60), || async { Ok::<_, ()>(7) }).await.unwrap();
        assert_eq!(*v, 7, "a new data version is a miss");
        let v = cache.get_or_load(&"k", 2, Duration::ZERO, || async { Ok::<_, ()>(8) }).await.unwrap();
        assert_eq!(*v, 8, "an expired entry is a miss");
    }

    #[tokio::test]
    async fn eviction_keeps_the_newest() {
        let cache: LoadingCache<u8, usize> = LoadingCache::default();
        for k in 0..3u8 {
            cache.get_or_load(&k, 0, Duration::from_secs(60), || async { Ok::<_, ()>(10) }).await.unwrap();
        }
        cache.evict(|v| *v, 15);
        let loads = AtomicUsize::new(0);
        let load = || async {
            loads.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(10)
        };
        cache.get_or_load(&2, 0, Duration::from_secs(60), load).await.unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 0, "the newest entry stayed");
        cache.get_or_load(&0, 0, Duration::from_secs(60), load).await.unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 1, "the oldest was evicted");
    }
}
