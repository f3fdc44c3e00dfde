//! billing-core's conformance suite against a real SQLite file (WAL, group commit, reader pool).

use billing_core::testkit::Harness;
use billing_store_sqlite::SqliteStore;

struct FileHarness;

impl Harness for FileHarness {
    type S = SqliteStore;
    fn store() -> SqliteStore {
        SqliteStore::open_temporary().expect("temporary database")
    }
}

billing_core::conformance_suite!(FileHarness);
