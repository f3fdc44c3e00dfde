//! billing-core's conformance suite against PostgreSQL. Set `BILLING_TEST_DATABASE_URL` (for
//! example `postgres://postgres@127.0.0.1:5432/postgres`) to run it; without it every case
//! prints SKIPPED. Each case gets its own database, copied from a migrated template.

use billing_store_postgres::{testing, PgStore};

struct PgHarness;

impl billing_core::testkit::Harness for PgHarness {
    type S = PgStore;

    fn store() -> PgStore {
        testing::temp_store().expect("a temporary PostgreSQL database")
    }

    fn available() -> bool {
        testing::server_url().is_some()
    }
}

billing_core::conformance_suite!(PgHarness);
