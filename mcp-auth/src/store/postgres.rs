//! [`PostgresStore`]: logins in a PostgreSQL database that many replicas
//! share, sealed at rest ([`SealingKeys`]).
//!
//! * **Schema**: made and migrated by the store when it connects, in one
//!   transaction under a database-wide advisory lock (replicas that start
//!   together migrate once); a version table says which migrations ran.
//! * **Refresh lock**: [`TokenStore::lock`] takes a pooled connection out
//!   of the pool, opens a transaction and takes `pg_advisory_xact_lock` on a
//!   hash of the login's key; the locked login is read and written in that
//!   transaction, and [`StoreLock::release`] commits it. Dropped without
//!   release, or on any error, the connection is closed rather than pooled:
//!   the database rolls the transaction back and frees the lock, as it does
//!   when a replica dies holding it. No timer of ours frees a lock.
//! * **Rows**: one per (identity, server, issuer): the key id, the nonce
//!   and the sealed entry; nothing secret in clear.
//!
//! Connections come from a deadpool pool; only the token path's rare steps
//! (a first load, a refresh, a login) touch the database, never a request.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use sha2::{Digest, Sha256};
use tokio_postgres::Row;

use super::sealed::{Sealed, SealingKeys, describe};
use super::{
    HeldLock, LoginKey, StoreError, StoreFuture, StoreLock, StoredAuth, TokenStore, entry_for,
};

mod tls;

/// The schema's migrations, in order; the version table holds how many ran.
const MIGRATIONS: &[&str] = &["CREATE TABLE IF NOT EXISTS {s}.logins (
        identity   text   NOT NULL,
        server     text   NOT NULL,
        issuer     text   NOT NULL,
        key_id     text   NOT NULL,
        nonce      bytea  NOT NULL,
        sealed     bytea  NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (identity, server, issuer)
    )"];

/// How to reach the database and seal what is kept there.
#[derive(Clone)]
pub struct PostgresOptions {
    url: String,
    schema: String,
    keys: SealingKeys,
    pool_size: usize,
    ca_pem: Option<String>,
    connect_timeout: Duration,
    application_name: String,
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password.
        f.debug_struct("PostgresOptions")
            .field("schema", &self.schema)
            .field("keys", &self.keys)
            .field("pool_size", &self.pool_size)
            .finish_non_exhaustive()
    }
}

impl PostgresOptions {
    /// A `postgres://` URL (or `key=value` settings; `sslmode=require` to
    /// insist on TLS) and the keys logins are sealed with. Tables go in
    /// the schema `mcp_auth`, with up to 8 pooled connections.
    pub fn new(url: impl Into<String>, keys: SealingKeys) -> Self {
        PostgresOptions {
            url: url.into(),
            schema: "mcp_auth".into(),
            keys,
            pool_size: 8,
            ca_pem: None,
            connect_timeout: Duration::from_secs(10),
            application_name: "mcp-stack-auth".into(),
        }
    }

    /// Another schema (lower-case letters, digits and `_`; made if missing).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// At most this many pooled connections (at least 1).
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// The `application_name` its connections show in `pg_stat_activity`
    /// (default `mcp-stack-auth`): a replica's name, say.
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = name.into();
        self
    }

    /// Also trust these CA certificates (PEM): a platform database's own CA.
    pub fn ca_pem(mut self, pem: impl Into<String>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }
}

/// The PostgreSQL token store (see the module docs). Cheap to clone; clones
/// share the pool.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The schema, quoted for SQL.
    schema: String,
    keys: SealingKeys,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.inner.schema)
            .field("keys", &self.inner.keys)
            .field("pool", &self.inner.pool.status())
            .finish()
    }
}

/// A database error as the store reports it.
fn db(e: impl fmt::Display) -> StoreError {
    StoreError::Database {
        message: e.to_string(),
    }
}

fn pg(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(d) => db(format_args!("{} ({})", d.message(), d.code().code())),
        None => db(chain(&e)),
    }
}

/// An error and its causes (`a: b: c`): the pool's and the driver's own
/// messages stop at "error performing TLS handshake", the cause says why;
/// an untrusted certificate gets a word on what to do.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut untrusted = false;
    let mut source = Some(e);
    while let Some(cause) = source {
        untrusted |= is_certificate_error(cause);
        if !std::ptr::addr_eq(cause, e) {
            let more = cause.to_string();
            if !text.ends_with(&more) {
                text.push_str(": ");
                text.push_str(&more);
            }
        }
        source = cause.source();
    }
    if untrusted {
        text.push_str(
            " (the database's certificate is not trusted: give its CA with \
             PostgresOptions::ca_pem, or `sslmode=disable` in the URL where the network is \
             trusted)",
        );
    }
    text
}

/// rustls refused the server's certificate: the error itself, or inside
/// the `io::Error` the TLS stream reports it in.
fn is_certificate_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let inner = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .map(|inner| inner as &(dyn std::error::Error + 'static));
    [Some(e), inner].into_iter().flatten().any(|e| {
        matches!(
            e.downcast_ref::<rustls::Error>(),
            Some(rustls::Error::InvalidCertificate(_))
        )
    })
}

impl PostgresStore {
    /// Connects (checking the database answers) and brings the schema to
    /// this build's version.
    pub async fn connect(options: PostgresOptions) -> Result<Self, StoreError> {
        let schema = &options.schema;
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(StoreError::Settings(format!(
                "the schema name `{schema}` must be lower-case letters, digits and `_`"
            )));
        }
        let mut config = tokio_postgres::Config::from_str(&options.url)
            .map_err(|e| StoreError::Settings(format!("the database URL: {e}")))?;
        config.connect_timeout(options.connect_timeout);
        config.application_name(&options.application_name);
        let tls = tls::RustlsConnect::new(options.ca_pem.as_deref())?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(options.connect_timeout))
            .wait_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| StoreError::Settings(format!("the connection pool: {e}")))?;
        let store = PostgresStore {
            inner: Arc::new(Inner {
                pool,
                schema: format!("\"{schema}\""),
                keys: options.keys,
            }),
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn client(&self) -> Result<Object, StoreError> {
        self.inner.pool.get().await.map_err(|e| db(chain(&e)))
    }

    fn sql(&self, text: &str) -> String {
        text.replace("{s}", &self.inner.schema)
    }

    /// Runs the migrations this database has not had, under a lock all
    /// replicas take (a second replica waits, then finds them done).
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let lock = lock_id("migrate", &LoginKey::new("", "", ""), &self.inner.schema);
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
            .await
            .map_err(pg)?;
        tx.batch_execute(&self.sql(
            "CREATE SCHEMA IF NOT EXISTS {s};
             CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer NOT NULL)",
        ))
        .await
        .map_err(pg)?;
        let row = tx
            .query_one(
                &self.sql("SELECT coalesce(max(version), 0) FROM {s}.schema_version"),
                &[],
            )
            .await
            .map_err(pg)?;
        let have: i32 = row.try_get(0).map_err(pg)?;
        let known = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
        if have > known {
            return Err(StoreError::Settings(format!(
                "the token store's schema is at version {have}, newer than this build knows \
                 ({known}): upgrade this replica"
            )));
        }
        for (version, step) in (1..)
            .zip(MIGRATIONS)
            .skip(usize::try_from(have).unwrap_or(0))
        {
            tx.batch_execute(&self.sql(step)).await.map_err(pg)?;
            tx.execute(
                &self.sql("INSERT INTO {s}.schema_version (version) VALUES ($1)"),
                &[&version],
            )
            .await
            .map_err(pg)?;
            tracing::info!(version, "token store schema migrated");
        }
        tx.commit().await.map_err(pg)
    }

    fn open(&self, key: LoginKey, row: &Row, at: usize) -> Result<StoredAuth, StoreError> {
        let corrupt = |e: tokio_postgres::Error| StoreError::Corrupt {
            what: describe(&key),
            message: e.to_string(),
        };
        let sealed = Sealed {
            key_id: row.try_get(at).map_err(corrupt)?,
            nonce: row.try_get(at + 1).map_err(corrupt)?,
            data: row.try_get(at + 2).map_err(corrupt)?,
        };
        self.inner.keys.open(&key, sealed)
    }

    async fn upsert(&self, client: &Object, entry: &StoredAuth) -> Result<(), StoreError> {
        let sealed = self.inner.keys.seal(entry)?;
        let updated = i64::try_from(entry.updated_at).unwrap_or(i64::MAX);
        let statement = client
            .prepare_cached(&self.sql(
                "INSERT INTO {s}.logins (identity, server, issuer, key_id, nonce, sealed, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (identity, server, issuer) DO UPDATE SET key_id = $4, nonce = $5,
                 sealed = $6, updated_at = $7",
            ))
            .await
            .map_err(pg)?;
        client
            .execute(
                &statement,
                &[
                    &entry.identity,
                    &entry.server,
                    &entry.issuer,
                    &sealed.key_id,
                    &sealed.nonce,
                    &sealed.data,
                    &updated,
                ],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    async fn select(
        &self,
        client: &Object,
        identity: &str,
        server: &str,
    ) -> Result<Vec<StoredAuth>, StoreError> {
        let statement = client
            .prepare_cached(&self.sql(
                "SELECT issuer, key_id, nonce, sealed FROM {s}.logins
                 WHERE identity = $1 AND server = $2 ORDER BY issuer",
            ))
            .await
            .map_err(pg)?;
        let rows = client
            .query(&statement, &[&identity, &server])
            .await
            .map_err(pg)?;
        rows.iter()
            .map(|row| {
                let issuer: String = row.try_get(0).map_err(pg)?;
                self.open(LoginKey::new(identity, server, &issuer), row, 1)
            })
            .collect()
    }
}

/// The advisory lock's id: a hash of what it guards (and the schema, so
/// two stores in one database lock apart).
fn lock_id(purpose: &str, key: &LoginKey, schema: &str) -> i64 {
    let mut hash = Sha256::new();
    for part in [purpose, schema, &key.identity, &key.server, &key.issuer] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
    i64::from_be_bytes(first)
}

impl TokenStore for PostgresStore {
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>> {
        Box::pin(async move {
            let client = self.client().await?;
            self.select(&client, identity, server).await
        })
    }

    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            self.upsert(&client, entry).await
        })
    }

    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute(
                    &self.sql(
                        "DELETE FROM {s}.logins WHERE identity = $1 AND server = $2
                         AND ($3::text IS NULL OR issuer = $3)",
                    ),
                    &[&identity, &server, &issuer],
                )
                .await
                .map_err(pg)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &self.sql(
                        "SELECT identity, server, issuer, key_id, nonce, sealed FROM {s}.logins
                         ORDER BY identity, server, issuer",
                    ),
                    &[],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|row| {
                    let key = LoginKey {
                        identity: row.try_get(0).map_err(pg)?,
                        server: row.try_get(1).map_err(pg)?,
                        issuer: row.try_get(2).map_err(pg)?,
                    };
                    self.open(key, row, 3)
                })
                .collect()
        })
    }

    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock> {
        Box::pin(async move {
            let held = PgLock {
                store: self.clone(),
                key: key.clone(),
                client: Some(self.client().await?),
            };
            let id = lock_id("refresh", key, &self.inner.schema);
            let client = held.client()?;
            // Any failure drops `held`, which closes the connection.
            client.batch_execute("BEGIN").await.map_err(pg)?;
            client
                .execute("SELECT pg_advisory_xact_lock($1)", &[&id])
                .await
                .map_err(pg)?;
            Ok(StoreLock::new(held))
        })
    }
}

/// A refresh lock: a pooled connection in a transaction holding the
/// login's advisory lock.
struct PgLock {
    store: PostgresStore,
    key: LoginKey,
    /// `None` once released.
    client: Option<Object>,
}

impl fmt::Debug for PgLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgLock")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl PgLock {
    fn client(&self) -> Result<&Object, StoreError> {
        self.client
            .as_ref()
            .ok_or_else(|| db("the lock was already released"))
    }
}

impl Drop for PgLock {
    fn drop(&mut self) {
        // Not committed: never back to the pool with the transaction open.
        // Closing the connection makes the database roll back and unlock.
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

impl HeldLock for PgLock {
    fn load(&mut self) -> StoreFuture<'_, Option<StoredAuth>> {
        Box::pin(async move {
            let client = self.client()?;
            let all = self
                .store
                .select(client, &self.key.identity, &self.key.server)
                .await?;
            Ok(entry_for(all, &self.key.issuer))
        })
    }

    fn save<'a>(&'a mut self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if entry.key() != self.key {
                return Err(StoreError::Settings(
                    "a write under a lock must be of the locked login".into(),
                ));
            }
            let client = self.client()?;
            self.store.upsert(client, entry).await
        })
    }

    fn release(mut self: Box<Self>) -> StoreFuture<'static, ()> {
        Box::pin(async move {
            let client = self.client()?;
            client.batch_execute("COMMIT").await.map_err(pg)?;
            // Committed: the connection may serve others again.
            drop(self.client.take());
            Ok(())
        })
    }
}
