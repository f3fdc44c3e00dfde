//! A dump of every table of a test database, read from the database's own catalogue: SQLite's
//! `sqlite_master`, PostgreSQL's `information_schema` (its public schema, but for the migration
//! bookkeeping). Rows are printed in a fixed order, so two dumps compare equal exactly when no
//! row was added, removed or changed.

use diesel::{Connection, QueryableByName, RunQueryDsl};

/// The dump of the database at `url` (a `sqlite://` path or a `postgres://` URL).
pub fn dump(url: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        postgres(url)
    } else {
        sqlite(url.strip_prefix("sqlite://").unwrap_or(url))
    }
}

fn sqlite(path: &str) -> String {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open the SQLite file");
    let tables: Vec<String> = {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap();
        st.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    };
    let mut out = String::new();
    for t in tables {
        let mut st = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = st.column_count();
        let mut rows: Vec<String> = st
            .query_map([], |r| {
                let cells: Vec<String> = (0..n).map(|k| format!("{:?}", r.get_ref(k).unwrap())).collect();
                Ok(cells.join("|"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        out.push_str(&format!("== {t} ({} rows)\n{}\n", rows.len(), rows.join("\n")));
    }
    out
}

#[derive(QueryableByName)]
struct Text {
    #[diesel(sql_type = diesel::sql_types::Text)]
    t: String,
}

fn postgres(url: &str) -> String {
    let mut conn = diesel::pg::PgConnection::establish(url).expect("connect to the test database");
    let tables: Vec<Text> = diesel::sql_query(
        "SELECT table_name::text AS t FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '__diesel_schema_migrations' ORDER BY 1",
    )
    .load(&mut conn)
    .unwrap();
    let mut out = String::new();
    for Text { t } in tables {
        let mut rows: Vec<String> = diesel::sql_query(format!("SELECT row_to_json(x)::text AS t FROM \"{t}\" x"))
            .load::<Text>(&mut conn)
            .unwrap()
            .into_iter()
            .map(|r| r.t)
            .collect();
        rows.sort();
        out.push_str(&format!("== {t} ({} rows)\n{}\n", rows.len(), rows.join("\n")));
    }
    out
}
