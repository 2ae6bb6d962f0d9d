//! `bench http --auth --token-store memory|file|postgres`: the token store
//! under the OAuth client, each of its operations counted, and the requests
//! the client authorized counted too, so the output shows that the store is
//! off the per-request path (only a first load and refreshes touch it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_stack_auth::client::OAuthClient;
use mcp_stack_auth::store::{
    FileStore, LoginKey, MemoryStore, PostgresOptions, PostgresStore, SealingKey, SealingKeys,
    StoreFuture, StoreLock, StoredAuth, TokenStore,
};
use mcp_stack_transport::http::HttpError;
use mcp_stack_transport::http::auth::{
    AuthChallenge, AuthDecision, AuthFuture, Authorizer, Credentials, RequestTarget,
};

/// Counts of one authorized client: store operations, authorized requests.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) store_ops: AtomicU64,
    pub(crate) requests: AtomicU64,
}

impl Counts {
    /// The line the bench prints.
    pub(crate) fn summary(&self, store: &str) -> String {
        let ops = self.store_ops.load(Ordering::Relaxed);
        let requests = self.requests.load(Ordering::Relaxed);
        let per = if requests == 0 {
            0.0
        } else {
            ops as f64 / requests as f64
        };
        format!(
            "token store ({store}): {ops} store operations over {requests} authorized requests \
             ({per:.6} per request; only the first load and refreshes touch the store)"
        )
    }
}

/// A store whose every operation is counted.
#[derive(Debug)]
pub(crate) struct Counted {
    inner: Arc<dyn TokenStore>,
    counts: Arc<Counts>,
}

impl Counted {
    fn tick(&self) {
        self.counts.store_ops.fetch_add(1, Ordering::Relaxed);
    }
}

impl TokenStore for Counted {
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>> {
        self.tick();
        self.inner.load(identity, server)
    }
    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        self.tick();
        self.inner.save(entry)
    }
    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize> {
        self.tick();
        self.inner.remove(identity, server, issuer)
    }
    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>> {
        self.tick();
        self.inner.list()
    }
    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock> {
        self.tick();
        self.inner.lock(key)
    }
}

/// The OAuth client, its requests counted.
#[derive(Debug)]
pub(crate) struct CountedAuthorizer {
    pub(crate) inner: OAuthClient,
    pub(crate) counts: Arc<Counts>,
}

impl Authorizer for CountedAuthorizer {
    fn credentials<'a>(
        &'a self,
        target: &'a RequestTarget,
    ) -> AuthFuture<'a, Result<Option<Credentials>, HttpError>> {
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.credentials(target)
    }

    fn challenged<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> AuthFuture<'a, Result<AuthDecision, HttpError>> {
        self.inner.challenged(challenge)
    }
}

/// The store `kind` names, counted; `postgres` reads its URL from
/// `MCP_TEST_POSTGRES_URL` and the CA it trusts from `MCP_TEST_POSTGRES_CA`
/// (`.ci/postgres.sh` starts a server and sets both).
pub(crate) async fn open(kind: &str, counts: &Arc<Counts>) -> Result<Counted, String> {
    let inner: Arc<dyn TokenStore> = match kind {
        "memory" => Arc::new(MemoryStore::new()),
        "file" => {
            let dir = std::env::temp_dir().join(format!("mcp-bench-tokens-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            Arc::new(FileStore::new(dir))
        }
        "postgres" => {
            let url = std::env::var("MCP_TEST_POSTGRES_URL").map_err(|_| {
                "--token-store postgres: set MCP_TEST_POSTGRES_URL (e.g. start one with \
                 .ci/postgres.sh, which prints it)"
                    .to_owned()
            })?;
            let key = SealingKey::new("bench", [7; 32]).map_err(|e| e.to_string())?;
            let mut options = PostgresOptions::new(url, SealingKeys::new(key))
                .schema(format!("bench_{}", std::process::id()))
                .application_name("mcp-bench");
            // The CA of a server with TLS on (`.ci/postgres.sh` makes one).
            if let Ok(path) = std::env::var("MCP_TEST_POSTGRES_CA") {
                let pem = std::fs::read_to_string(&path)
                    .map_err(|e| format!("MCP_TEST_POSTGRES_CA: cannot read {path}: {e}"))?;
                options = options.ca_pem(pem);
            }
            Arc::new(
                PostgresStore::connect(options)
                    .await
                    .map_err(|e| e.to_string())?,
            )
        }
        other => {
            return Err(format!(
                "--token-store: unknown `{other}` (known: memory, file, postgres)"
            ));
        }
    };
    Ok(Counted {
        inner,
        counts: counts.clone(),
    })
}
