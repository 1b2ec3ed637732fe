//! A schema with some tables of its own over another's: the live tables over the lake's
//! schema ([`super::live_tables`]), and the server's own `pg_settings` over
//! `datafusion-pg-catalog`'s `pg_catalog` ([`super::server_settings`]), without changing
//! the sessions those schemas come from.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::error::Result;

/// A schema that answers with its own tables first, then with `base`'s.
#[derive(Debug)]
pub struct OverlaySchema {
    base: Arc<dyn SchemaProvider>,
    extra: HashMap<String, Arc<dyn TableProvider>>,
}

impl OverlaySchema {
    pub fn new(base: Arc<dyn SchemaProvider>, extra: HashMap<String, Arc<dyn TableProvider>>) -> Self {
        OverlaySchema { base, extra }
    }
}

#[async_trait]
impl SchemaProvider for OverlaySchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.base.table_names();
        names.extend(self.extra.keys().filter(|k| !self.base.table_exist(k)).cloned());
        names.sort();
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        match self.extra.get(name) {
            Some(t) => Ok(Some(Arc::clone(t))),
            None => self.base.table(name).await,
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.extra.contains_key(name) || self.base.table_exist(name)
    }
}
