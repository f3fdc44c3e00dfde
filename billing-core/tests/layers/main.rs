//! The layering check (runs with the workspace's tests, so CI fails when a layer is crossed).
//!
//! - **billing-model** (the nouns: types, pure rules, views, errors, the `Store`/`Tx` contract,
//!   the gateway and transport traits) depends on no other crate of the workspace: it cannot
//!   name an operation, the engine or a store implementation. The stores depend on it alone.
//! - Inside each of billing-model and billing-core, no import circle crosses from one resource
//!   folder to another, and none is larger than [`MAX_CIRCLE`] files (a resource's `mod.rs`
//!   re-exporting its `store.rs`, which names the resource's types, is such a circle).
//!
//! Imports are read from the sources ([`imports`]); a failure names the circle and its edges.

mod imports;

use imports::{circles, resource, Crate, Edges};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most files an import circle may hold (inside one resource).
const MAX_CIRCLE: usize = 6;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("billing-core sits in the workspace")
        .to_path_buf()
}

/// The workspace crates (`billing-…`) a manifest lists under `[section]`.
fn billing_dependencies(manifest: &Path, section: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let mut inside = false;
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == format!("[{section}]");
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if inside && name.starts_with("billing-") {
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn the_model_depends_on_no_other_workspace_crate() {
    let deps = billing_dependencies(&workspace().join("billing-core/model/Cargo.toml"), "dependencies");
    assert!(deps.is_empty(), "billing-model must not depend on {deps:?}: it is the bottom layer");
    let dev = billing_dependencies(&workspace().join("billing-core/model/Cargo.toml"), "dev-dependencies");
    assert!(dev.is_empty(), "billing-model's tests must not depend on {dev:?}");
}

#[test]
fn the_stores_depend_on_the_model_alone() {
    for store in ["billing-store-sqlite", "billing-store-postgres"] {
        let deps = billing_dependencies(&workspace().join(store).join("Cargo.toml"), "dependencies");
        assert_eq!(
            deps,
            BTreeSet::from(["billing-model".to_string()]),
            "{store} implements billing-model's Store; the engine (billing-core) is only for its conformance tests"
        );
    }
}

#[test]
fn the_engine_depends_on_no_store_and_no_server() {
    let deps = billing_dependencies(&workspace().join("billing-core/Cargo.toml"), "dependencies");
    assert_eq!(deps, BTreeSet::from(["billing-model".to_string()]));
}

/// Fails with every circle that breaks the rules, and the edges that make each.
fn check_circles(name: &str, src: &Path, skip: &[&str]) {
    let edges = Crate::read(src, skip).edges();
    let bad: Vec<String> = circles(&edges)
        .into_iter()
        .filter(|c| c.len() > MAX_CIRCLE || c.iter().map(|f| resource(f)).collect::<BTreeSet<_>>().len() > 1)
        .map(|c| describe(&c, &edges))
        .collect();
    assert!(
        bad.is_empty(),
        "{name} has import circles across resources or over {MAX_CIRCLE} files:\n{}",
        bad.join("\n")
    );
}

fn describe(circle: &[String], edges: &Edges) -> String {
    let inside: BTreeSet<&String> = circle.iter().collect();
    let mut out = format!("- a circle of {} files:\n", circle.len());
    for f in circle {
        let to: Vec<&str> = edges[f].iter().filter(|t| inside.contains(t)).map(String::as_str).collect();
        out += &format!("    {f} -> {}\n", to.join(", "));
    }
    out
}

#[test]
fn the_model_has_no_circle_across_resources() {
    check_circles("billing-model", &workspace().join("billing-core/model/src"), &[]);
}

#[test]
fn the_engine_has_no_circle_across_resources() {
    // The conformance suite (testkit) exercises every resource; it is not part of the layers.
    check_circles("billing-core", &workspace().join("billing-core/src"), &["testkit"]);
}

/// The composition root wires every resource together; nothing in the engine may import it (or
/// a circle through it would tie every resource to every other).
#[test]
fn nothing_in_the_engine_imports_the_composition_root() {
    let edges = Crate::read(&workspace().join("billing-core/src"), &["testkit"]).edges();
    let importers: Vec<&String> = edges
        .iter()
        .filter(|(f, to)| *f != "lib.rs" && to.contains("billing.rs"))
        .map(|(f, _)| f)
        .collect();
    assert!(importers.is_empty(), "these files import billing.rs (the composition root): {importers:?}");
}
