//! Lists the embedded migrations: every `migrations/NNNN_name.sql`, in version order, becomes one
//! entry of `MIGRATIONS` (`migrate.rs`), so a new migration is one new file. Two files with one
//! version, or a name without a version, fail the build.

use std::fmt::Write;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    // Read when the script runs (not baked in when it is compiled): a checkout that moves keeps
    // building with the same compiled script.
    let root = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("migrations");
    let mut found: Vec<(u32, String)> = Vec::new();
    for entry in std::fs::read_dir(&root).expect("the migrations folder").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".sql") else { continue };
        let version = stem
            .split('_')
            .next()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("migration {name} does not start with its version (NNNN_name.sql)"));
        if let Some((_, other)) = found.iter().find(|(v, _)| *v == version) {
            panic!("migrations {other} and {name} share version {version}: give one a new number");
        }
        println!("cargo:rerun-if-changed={}", entry.path().display());
        found.push((version, name));
    }
    found.sort();
    let mut out = String::from("&[\n");
    for (version, name) in &found {
        let path = root.join(name);
        writeln!(out, "    ({version}, include_str!({:?})),", path.display().to_string()).unwrap();
    }
    out.push(']');
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("migrations.rs");
    std::fs::write(dest, out).expect("the migration list is written");
}
