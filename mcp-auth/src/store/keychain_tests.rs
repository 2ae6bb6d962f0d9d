//! The keychain store's layout, chunking and migration on items in memory
//! (the same code runs against the real Secret Service in
//! `tests/keyring.rs`).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::*;
use crate::Secret;
use crate::store::{StoredClient, StoredTokens};

/// Items in memory; `on_chunk_read` runs once, on the first read of a chunk.
#[derive(Default)]
struct Memory {
    items: Mutex<BTreeMap<String, String>>,
    on_chunk_read: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Memory {
    fn accounts(&self) -> Vec<String> {
        self.items.lock().unwrap().keys().cloned().collect()
    }
    fn put(&self, account: &str, value: &str) {
        self.items
            .lock()
            .unwrap()
            .insert(account.into(), value.into());
    }
}

impl Items for Memory {
    fn get(&self, account: &str) -> Result<Option<String>, Fault> {
        if account.contains(".a.") || account.contains(".b.") {
            let hook = self.on_chunk_read.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        }
        Ok(self.items.lock().unwrap().get(account).cloned())
    }
    fn set(&self, account: &str, value: &str) -> Result<(), Fault> {
        self.put(account, value);
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<bool, Fault> {
        Ok(self.items.lock().unwrap().remove(account).is_some())
    }
}

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!("mcp-keychain-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Dir(dir)
}

fn store(dir: &Dir, items: &Arc<Memory>) -> KeyringStore {
    KeyringStore::with_items(FileStore::new(&dir.0), items.clone()).chunk_limit(256)
}

fn entry(server: &str, issuer: &str, token: &str) -> StoredAuth {
    let mut e = StoredAuth::new(server, issuer);
    e.client = Some(StoredClient::new("c1", "dynamic"));
    e.tokens = Some(StoredTokens::bearer(Secret::new(token)));
    e
}

fn token_of(store: &KeyringStore, server: &str) -> String {
    let entries = store.load("", server).unwrap();
    assert_eq!(entries.len(), 1);
    entries[0]
        .tokens
        .as_ref()
        .unwrap()
        .access_token
        .expose()
        .to_owned()
}

const S: &str = "https://mcp.example.com/mcp";

#[test]
fn a_small_entry_is_one_item_and_a_large_one_chunks_that_alternate_slots() {
    let d = dir("chunks");
    let items = Arc::new(Memory::default());
    // Room for a small entry (JSON escaped in its manifest) in one item.
    let store = store(&d, &items).chunk_limit(600);
    let account = account(None, S);

    store.save(&entry(S, "https://as", "small")).unwrap();
    assert_eq!(items.accounts(), [INDEX.to_owned(), account.clone()]);
    assert_eq!(token_of(&store, S), "small");

    let big = "x".repeat(1000);
    store.save(&entry(S, "https://as", &big)).unwrap();
    assert_eq!(token_of(&store, S), big);
    let in_slot = |slot: &str| {
        items
            .accounts()
            .iter()
            .filter(|a| a.starts_with(&format!("{account}.{slot}.")))
            .count()
    };
    assert!(in_slot("a") >= 2, "{:?}", items.accounts());
    assert_eq!(in_slot("b"), 0);
    // Every item within the limit.
    for a in items.accounts() {
        let len = items.items.lock().unwrap()[&a].len();
        assert!(len <= 600, "{a}: {len} bytes");
    }

    let bigger = "y".repeat(1500);
    store.save(&entry(S, "https://as", &bigger)).unwrap();
    assert_eq!(token_of(&store, S), bigger);
    assert_eq!(in_slot("a"), 0, "the old slot is swept");
    assert!(in_slot("b") >= 3);

    store.save(&entry(S, "https://as", "small again")).unwrap();
    assert_eq!(token_of(&store, S), "small again");
    assert_eq!(in_slot("a") + in_slot("b"), 0);
}

#[test]
fn a_reader_racing_a_writer_gets_the_old_or_the_new_value_never_a_mix() {
    let d = dir("race");
    let items = Arc::new(Memory::default());
    let store = store(&d, &items);
    let old = "o".repeat(1000);
    let new = "n".repeat(1000);
    store.save(&entry(S, "https://as", &old)).unwrap();
    // While the reader is between the manifest and the chunks, a writer
    // replaces the value (twice: the second reuses the reader's slot).
    let writer = store.clone();
    let (first, second) = (new.clone(), "m".repeat(1600));
    *items.on_chunk_read.lock().unwrap() = Some(Box::new(move || {
        writer.save(&entry(S, "https://as", &first)).unwrap();
        writer.save(&entry(S, "https://as", &second)).unwrap();
    }));
    let read = token_of(&store, S);
    assert_eq!(read, "m".repeat(1600), "read again after the torn read");
}

#[test]
fn a_damaged_entry_is_a_typed_error_and_logging_out_removes_it_whole() {
    let d = dir("damaged");
    let items = Arc::new(Memory::default());
    let store = store(&d, &items);
    store
        .save(&entry(S, "https://as", &"z".repeat(1000)))
        .unwrap();
    let account = account(None, S);
    // A chunk changed behind the store's back: the digest says so.
    items.put(&format!("{account}.a.1"), "tampered");
    let err = store.load("", S).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    let shown = err.to_string();
    assert!(shown.contains("log in again"), "{shown}");
    assert!(shown.contains(S), "names the server: {shown}");
    assert!(!shown.contains("zzzz"), "{shown}");

    // An unreadable manifest: the same error, and status (list) says so.
    items.put(&account, "{not json");
    assert!(matches!(store.load("", S), Err(StoreError::Damaged { .. })));
    assert!(matches!(store.list(), Err(StoreError::Damaged { .. })));

    // Logging out needs no reading: the manifest and every chunk go.
    assert_eq!(store.remove("", S, None).unwrap(), 1);
    assert_eq!(items.accounts(), [INDEX.to_owned()]);
    assert!(store.load("", S).unwrap().is_empty());
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn a_manifest_of_another_format_or_too_many_chunks_is_damaged() {
    let d = dir("format");
    let items = Arc::new(Memory::default());
    let store = store(&d, &items);
    let account = account(None, S);
    items.put(&account, r#"{"v":2,"data":"{}"}"#);
    let err = store.load("", S).unwrap_err().to_string();
    assert!(err.contains("newer version"), "{err}");
    items.put(
        &account,
        r#"{"v":1,"slot":"a","chunks":100000,"sha256":"00"}"#,
    );
    assert!(matches!(store.load("", S), Err(StoreError::Damaged { .. })));
}

#[test]
fn tokens_the_file_store_kept_are_read_and_move_into_the_keychain() {
    let d = dir("migrate");
    let items = Arc::new(Memory::default());
    let files = FileStore::new(&d.0);
    files
        .save(&entry(S, "https://as", "from-the-file"))
        .unwrap();
    files
        .save(&entry("https://other", "https://as", "other-file"))
        .unwrap();
    let store = store(&d, &items);
    // Not logged out by choosing the keychain.
    assert_eq!(token_of(&store, S), "from-the-file");
    assert_eq!(store.list().unwrap().len(), 2);
    // A save (a refresh, a login) moves the entry; the file keeps the rest.
    store.save(&entry(S, "https://as", "refreshed")).unwrap();
    assert!(
        files.load("", S).unwrap().is_empty(),
        "the secret left the disk"
    );
    assert_eq!(token_of(&store, S), "refreshed");
    assert_eq!(files.list().unwrap().len(), 1);
    // Logging out removes from both.
    assert_eq!(store.remove("", "https://other", None).unwrap(), 1);
    assert!(files.list().unwrap().is_empty());
}

#[test]
fn save_load_remove_list_key_by_server_and_issuer() {
    let d = dir("roundtrip");
    let items = Arc::new(Memory::default());
    let store = store(&d, &items);
    store.save(&entry(S, "https://as1", "t1")).unwrap();
    store.save(&entry(S, "https://as2", "t2")).unwrap();
    store
        .save(&entry("https://other", "https://as1", "t3"))
        .unwrap();
    store.save(&entry(S, "https://as1", "t1b")).unwrap();
    assert_eq!(store.load("", S).unwrap().len(), 2);
    assert_eq!(store.list().unwrap().len(), 3);
    assert_eq!(store.remove("", S, Some("https://as2")).unwrap(), 1);
    assert_eq!(store.remove("", S, Some("https://as1")).unwrap(), 1);
    assert!(store.load("", S).unwrap().is_empty());
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].server, "https://other");
    // The emptied server left the index and the keychain.
    assert!(!items.accounts().contains(&account(None, S)));
}

#[test]
fn chunks_are_cut_between_characters_within_the_limit() {
    let text = "aé€😀".repeat(50);
    for limit in [4, 5, 7, 256] {
        let pieces = split(&text, limit);
        assert!(pieces.iter().all(|p| p.len() <= limit && !p.is_empty()));
        assert_eq!(pieces.concat(), text);
    }
    assert!(split("", 10).is_empty());
}

#[test]
fn account_names_are_short_and_depend_on_identity_and_server() {
    let long = format!("https://example.com/{}", "p".repeat(5000));
    assert_eq!(account(None, &long).len(), "server-".len() + 24);
    assert_ne!(account(None, S), account(Some("alice"), S));
    assert_ne!(
        account(None, S),
        account(None, "https://mcp.example.com/mcp2")
    );
}

#[test]
fn debug_shows_no_secret() {
    let d = dir("debug");
    let items = Arc::new(Memory::default());
    let store = store(&d, &items);
    let shown = format!("{store:?}");
    assert!(shown.contains("KeyringStore"), "{shown}");
}
