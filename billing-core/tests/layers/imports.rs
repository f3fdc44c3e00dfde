//! The import graph of one crate, read from its sources: which file names an item defined in
//! which other file. A path (`crate::invoice::Invoice`, `super::store::InvoiceTx`, a `use`
//! tree) is resolved to the file that defines the item, following `pub use` re-exports inside
//! the crate; a name re-exported from another crate (`pub use billing_model::invoice::*`) is
//! not an edge. Test code (`#[cfg(test)]` items) is left out.
//!
//! It reads tokens, not a syntax tree: good enough for this workspace's style (no macros that
//! define modules, no `#[path]`), and checked by the tests at the end of the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A file of the crate: its module path and what it defines, re-exports and names.
#[derive(Debug, Default)]
struct File {
    /// Names of the items defined in it (at any depth of inline modules).
    defines: BTreeSet<String>,
    /// `pub use` re-exports: the name they give, and the absolute path they stand for.
    reexports: BTreeMap<String, Vec<String>>,
    /// Every absolute path it names (crate-relative segments).
    names: Vec<Vec<String>>,
}

#[derive(Debug, Default)]
pub struct Crate {
    /// By file path relative to `src/` (`invoice/mod.rs`).
    files: BTreeMap<String, File>,
    /// Module path (`["invoice"]`) to file.
    modules: BTreeMap<Vec<String>, String>,
}

pub type Edges = BTreeMap<String, BTreeSet<String>>;

impl Crate {
    /// Reads every `.rs` file under `src`, except those under the folders in `skip`.
    pub fn read(src: &Path, skip: &[&str]) -> Crate {
        let mut c = Crate::default();
        let mut paths = Vec::new();
        walk(src, src, &mut paths);
        for rel in paths {
            if skip.iter().any(|s| rel.starts_with(&format!("{s}/"))) {
                continue;
            }
            let text = std::fs::read_to_string(src.join(&rel)).expect("source files are readable");
            c.add(&rel, &text);
        }
        c
    }

    /// Adds one file's text (for the tests below, and `read`).
    pub fn add(&mut self, rel: &str, text: &str) {
        let module = module_of(rel);
        let file = parse(&module, &tokens(text));
        self.modules.insert(module, rel.to_string());
        self.files.insert(rel.to_string(), file);
    }

    /// Which file each file imports from (never itself).
    pub fn edges(&self) -> Edges {
        let mut out = Edges::new();
        for (rel, f) in &self.files {
            let to = out.entry(rel.clone()).or_default();
            for path in &f.names {
                if let Some(t) = self.resolve(path, 0) {
                    if &t != rel {
                        to.insert(t);
                    }
                }
            }
        }
        out
    }

    /// The file that defines `path` (absolute, crate-relative), or `None` for a name of
    /// another crate.
    fn resolve(&self, path: &[String], depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        for k in (0..=path.len()).rev() {
            let Some(rel) = self.modules.get(&path[..k]) else { continue };
            let rest = &path[k..];
            let Some(name) = rest.first() else { return Some(rel.clone()) };
            let f = &self.files[rel];
            if f.defines.contains(name) {
                return Some(rel.clone());
            }
            if let Some(target) = f.reexports.get(name) {
                let mut p = target.clone();
                p.extend(rest[1..].iter().cloned());
                return self.resolve(&p, depth + 1);
            }
            return None;
        }
        None
    }
}

/// The import circles (strongly connected components of more than one file), largest first.
pub fn circles(edges: &Edges) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[v].min(self.low[w]);
                    self.low.insert(v, l);
                } else if self.on.contains(w) {
                    let l = self.low[v].min(self.index[w]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().expect("v is on the stack");
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    t.out
}

/// The resource a file belongs to: its first folder, or its own name at the top.
pub fn resource(rel: &str) -> &str {
    match rel.split_once('/') {
        Some((dir, _)) => dir,
        None => rel.trim_end_matches(".rs"),
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("source folders are readable").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(root).expect("under root").to_string_lossy().replace('\\', "/"));
        }
    }
}

fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Identifiers, `::` and punctuation; comments, strings, chars and lifetimes are dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if (ch == 'r' || ch == 'b') && is_raw_string(&c, i) {
            i = skip_raw_string(&c, i);
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok::Path);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

fn is_raw_string(c: &[char], i: usize) -> bool {
    let mut j = i + 1;
    if c[i] == 'b' && c.get(j) == Some(&'r') {
        j += 1;
    } else if c[i] == 'b' {
        return false;
    }
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    c.get(j) == Some(&'"') && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
}

fn skip_raw_string(c: &[char], mut i: usize) -> usize {
    while c[i] != '#' && c[i] != '"' {
        i += 1;
    }
    let mut hashes = 0;
    while c[i] == '#' {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < c.len() {
        if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

const ITEM_KEYWORDS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union"];

/// Reads one file's tokens: definitions, re-exports and named paths. `module` is the file's
/// module path; inline `mod x { … }` blocks extend it for `self` and `super`.
fn parse(module: &[String], toks: &[Tok]) -> File {
    let mut f = File::default();
    // The module path at each brace depth that opened an inline module.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here = |inline: &Vec<(usize, String)>| -> Vec<String> {
            let mut m = module.to_vec();
            m.extend(inline.iter().map(|(_, n)| n.clone()));
            m
        };
        match &toks[i] {
            // `#[cfg(test)]`: skip the item it marks.
            Tok::Punct('#') if is_cfg_test(&toks[i..]) => {
                i = skip_item(toks, i + 7);
                continue;
            }
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "use" => {
                let public = i > 0 && is_pub_before(toks, i);
                let end = (i..toks.len()).find(|&k| toks[k] == Tok::Punct(';')).unwrap_or(toks.len());
                let mut leaves = Vec::new();
                use_tree(&toks[i + 1..end], Vec::new(), &mut leaves);
                let m = here(&inline);
                for (segs, alias) in leaves {
                    let glob = segs.last().is_some_and(|s| s == "*");
                    let segs: Vec<String> = if glob { segs[..segs.len() - 1].to_vec() } else { segs };
                    // A glob of the parent or of itself names nothing in particular.
                    if glob && matches!(segs.first().map(String::as_str), Some("super" | "self")) {
                        continue;
                    }
                    let Some(abs) = absolute(&m, &segs) else { continue };
                    if public && !glob {
                        if let Some(a) = alias {
                            f.reexports.insert(a, abs.clone());
                        }
                    }
                    f.names.push(abs);
                }
                i = end + 1;
                continue;
            }
            Tok::Ident(w) if ITEM_KEYWORDS.contains(&w.as_str()) => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    f.defines.insert(name.to_string());
                    if w == "mod" && toks.get(i + 2) == Some(&Tok::Punct('{')) {
                        inline.push((depth + 1, name.to_string()));
                    }
                }
            }
            // `macro_rules! name` and `wire_enum!( [attributes] Name {`.
            Tok::Ident(w) if (w == "macro_rules" || w == "wire_enum") && toks.get(i + 1) == Some(&Tok::Punct('!')) => {
                let mut k = i + 2;
                if w == "wire_enum" {
                    while k < toks.len() && !matches!(&toks[k], Tok::Ident(n) if n.starts_with(char::is_uppercase)) {
                        k += 1;
                    }
                }
                if let Some(name) = ident(toks.get(k)) {
                    f.defines.insert(name.to_string());
                }
            }
            Tok::Ident(w) if (w == "crate" || w == "super" || w == "self") && toks.get(i + 1) == Some(&Tok::Path) && !(i > 0 && toks[i - 1] == Tok::Path) => {
                let mut segs = vec![w.clone()];
                let mut k = i + 1;
                while toks.get(k) == Some(&Tok::Path) {
                    match ident(toks.get(k + 1)) {
                        Some(s) => segs.push(s.to_string()),
                        None => break,
                    }
                    k += 2;
                }
                if let Some(abs) = absolute(&here(&inline), &segs) {
                    f.names.push(abs);
                }
                i = k;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    f
}

fn is_cfg_test(t: &[Tok]) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    t.len() >= want.len() && t[..want.len()] == want
}

/// The index after the item starting at `i`: its `{ … }` block, or its `;`.
fn skip_item(t: &[Tok], mut i: usize) -> usize {
    let mut depth = 0;
    while i < t.len() {
        match t[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

fn is_pub_before(t: &[Tok], i: usize) -> bool {
    match &t[i - 1] {
        Tok::Ident(p) => p == "pub",
        // `pub(crate) use`
        Tok::Punct(')') => (0..i)
            .rev()
            .find(|&k| t[k] == Tok::Punct('('))
            .is_some_and(|k| k > 0 && t[k - 1] == Tok::Ident("pub".into())),
        _ => false,
    }
}

/// Flattens a use tree into its leaves: the path and the name it is bound to.
fn use_tree(t: &[Tok], prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix;
    let mut k = 0;
    while k < t.len() {
        match &t[k] {
            Tok::Ident(s) if s == "as" => {
                let alias = ident(t.get(k + 1)).map(str::to_string);
                out.push((path, alias.filter(|a| a != "_")));
                return;
            }
            Tok::Ident(s) => path.push(s.clone()),
            Tok::Punct('*') => {
                path.push("*".into());
                out.push((path, None));
                return;
            }
            Tok::Punct('{') => {
                // Split the group at its top-level commas.
                let mut depth = 0;
                let mut start = k + 1;
                for j in k..t.len() {
                    match t[j] {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                if start < j {
                                    use_tree(&t[start..j], path.clone(), out);
                                }
                                return;
                            }
                        }
                        Tok::Punct(',') if depth == 1 => {
                            if start < j {
                                use_tree(&t[start..j], path.clone(), out);
                            }
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            _ => {}
        }
        k += 1;
    }
    if path.last().is_some_and(|l| l == "self") {
        path.pop();
    }
    let name = path.last().cloned();
    if !path.is_empty() {
        out.push((path, name));
    }
}

/// A path as crate-relative segments; `None` for another crate's (or a local name).
fn absolute(here: &[String], segs: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?;
    match first.as_str() {
        "crate" => Some(segs[1..].to_vec()),
        "self" => Some(here.iter().chain(&segs[1..]).cloned().collect()),
        "super" => {
            let mut base = here.to_vec();
            let mut rest = segs;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            Some(base.into_iter().chain(rest.iter().cloned()).collect())
        }
        // `use store::X` in a module with a child `store` (another crate's path resolves to
        // nothing).
        _ => Some(here.iter().chain(segs).cloned().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> Crate {
        let mut c = Crate::default();
        for (rel, text) in files {
            c.add(rel, text);
        }
        c
    }

    #[test]
    fn a_circle_between_two_resources_is_found() {
        let c = crate_of(&[
            ("lib.rs", "pub mod invoice; pub mod payment;"),
            ("invoice/mod.rs", "use crate::payment::Payment; pub struct Invoice;"),
            ("payment/mod.rs", "pub struct Payment { inv: crate::invoice::Invoice }"),
        ]);
        assert_eq!(circles(&c.edges()), vec![vec!["invoice/mod.rs".to_string(), "payment/mod.rs".to_string()]]);
    }

    #[test]
    fn re_exports_are_followed_to_the_defining_file() {
        let c = crate_of(&[
            ("lib.rs", "pub mod invoice; pub mod payment;"),
            ("invoice/mod.rs", "mod store; pub use store::InvoiceTx; pub struct Invoice;"),
            ("invoice/store.rs", "use super::Invoice; pub trait InvoiceTx {}"),
            ("payment/mod.rs", "use crate::invoice::InvoiceTx; // crate::invoice::Nothing\n"),
        ]);
        let e = c.edges();
        assert_eq!(e["payment/mod.rs"], BTreeSet::from(["invoice/store.rs".to_string()]));
        assert_eq!(e["invoice/store.rs"], BTreeSet::from(["invoice/mod.rs".to_string()]));
        // The `pub use` itself is an edge of the folder's own circle, which is allowed.
        assert_eq!(circles(&e), vec![vec!["invoice/mod.rs".to_string(), "invoice/store.rs".to_string()]]);
    }

    #[test]
    fn other_crates_tests_strings_and_comments_are_not_edges() {
        let c = crate_of(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            (
                "a/mod.rs",
                "pub use billing_model::a::*; pub fn f() -> &'static str { \"crate::b::g\" }\n#[cfg(test)]\nmod tests { use crate::b::g; }",
            ),
            ("b/mod.rs", "/* crate::a::f */ pub fn g() { let _ = r#\"crate::a::f\"#; let _c = 'x'; }"),
        ]);
        assert!(c.edges().values().all(BTreeSet::is_empty), "{:?}", c.edges());
    }

    #[test]
    fn inline_modules_and_super() {
        let c = crate_of(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a/mod.rs", "pub mod ops; pub struct A;"),
            ("a/ops.rs", "pub mod lane { use super::super::A; pub const X: u8 = 0; }"),
            ("b/mod.rs", "fn f() -> u8 { crate::a::ops::lane::X }"),
        ]);
        let e = c.edges();
        assert_eq!(e["a/ops.rs"], BTreeSet::from(["a/mod.rs".to_string()]));
        assert_eq!(e["b/mod.rs"], BTreeSet::from(["a/ops.rs".to_string()]));
    }
}
