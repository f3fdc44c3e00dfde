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

/// diesel takes a migration's version from its directory name up to the first `_`: two
/// directories with one version would silently apply only one of them.
fn check_versions_unique(root: &Path) {
    let mut seen = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let version = name.split('_').next().unwrap_or_default().to_string();
        if let Some(other) = seen.insert(version.clone(), name.clone()) {
            panic!("migrations {other} and {name} share version {version}: give one a new number");
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let root = Path::new("migrations");
    check_versions_unique(root);
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
