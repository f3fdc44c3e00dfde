//! Rebuilds when a migration changes (they are embedded) and fingerprints them, so that the test
//! helper's template database is rebuilt when the schema changes.

use std::path::Path;

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let root = Path::new("migrations");
    let mut paths = Vec::new();
    files(root, &mut paths);
    paths.sort();
    // FNV-1a over every file's relative path and contents.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned();
        let contents = std::fs::read(path).unwrap_or_default();
        for b in name.as_bytes().iter().chain([0u8].iter()).chain(contents.iter()).chain([0u8].iter()) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=BILLING_PG_MIGRATIONS_HASH={hash:016x}");
}
