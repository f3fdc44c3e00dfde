//! SQLite's memory comes from the process's allocator once the store opened the first
//! connection (its own test binary: no other connection was opened before).

use billing_core::ids::OrgId;
use billing_core::store::Store;
use billing_store_sqlite::SqliteStore;

#[test]
fn sqlite_allocates_from_the_process_allocator() {
    assert!(!billing_store_sqlite::sqlite_memory_from_process_allocator());
    let store = SqliteStore::open_temporary().unwrap();
    assert!(billing_store_sqlite::sqlite_memory_from_process_allocator());
    let found = store.read(|tx| Ok(tx.org(OrgId::new())?)).unwrap();
    assert!(found.is_none());
}
