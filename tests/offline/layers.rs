//! The layering that `src/lib.rs` documents, held against the sources: a
//! module imports only from its own layer or earlier ones, and no imports go
//! round in a circle, between top-level modules or between the files of one
//! module. The list is read from the doc itself, so the two cannot drift.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `1. name: [`a`], [`b`]` lines of the crate doc: module → layer.
fn layers() -> BTreeMap<String, usize> {
    let lib = fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs is readable");
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some((n, rest)) = line.strip_prefix("//! ").and_then(|l| l.split_once(". ")) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        for part in rest.split("[`").skip(1) {
            if let Some((name, _)) = part.split_once("`]") {
                out.insert(name.to_string(), n);
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its unit tests (a
/// `#[cfg(test)]` module comes last in this code base, or is a file of its
/// own named `tests.rs`).
fn code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = fs::read_to_string(path).expect("a source file is readable");
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names following `prefix` in `code`: `prefix::name` and each name of
/// `prefix::{a, b::c}`.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or_default();
            for item in group.split(',') {
                out.insert(ident(item.trim()));
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

/// A cycle in `graph`, if any, as the path that closes it.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, path) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

/// Top-level module of a file under `src/`: `report` for
/// `src/report/table.rs` and for `src/report.rs`.
fn top_module(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("a file under src");
    let first = rel.components().next().expect("a non-empty path");
    let first = first.as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn every_module_of_the_library_has_a_layer() {
    let layers = layers();
    let lib = fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs is readable");
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert!(declared.len() > 10, "modules of src/lib.rs: {declared:?}");
    let missing: Vec<&&str> = declared
        .iter()
        .filter(|m| !layers.contains_key(**m))
        .collect();
    assert!(
        missing.is_empty(),
        "modules missing from the layer list of src/lib.rs: {missing:?}"
    );
}

#[test]
fn imports_point_down_the_layers_and_never_in_a_circle() {
    let layers = layers();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let mut upward = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = top_module(file);
        let Some(&own) = layers.get(&module) else {
            continue; // lib.rs and the binary's main.rs
        };
        for dep in names_after(&code(file), "crate::") {
            let Some(&theirs) = layers.get(&dep) else {
                continue;
            };
            if dep == module {
                continue;
            }
            if theirs > own {
                upward.push(format!(
                    "{}: {module} (layer {own}) imports {dep} (layer {theirs})",
                    file.display()
                ));
            }
            graph.entry(module.clone()).or_default().insert(dep);
        }
    }
    assert!(
        upward.is_empty(),
        "imports up the layers:\n{}",
        upward.join("\n")
    );
    assert_eq!(cycle(&graph), None, "modules importing each other");
}

#[test]
fn the_files_of_a_module_do_not_import_each_other_in_a_circle() {
    let mut dirs = Vec::new();
    for entry in fs::read_dir(src()).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    assert!(dirs.len() > 5, "module directories: {dirs:?}");
    for dir in dirs {
        let top = dir
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .to_string();
        let siblings: BTreeMap<String, PathBuf> = fs::read_dir(&dir)
            .expect("a module directory is readable")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| {
                (
                    p.file_stem().expect("a name").to_string_lossy().to_string(),
                    p,
                )
            })
            .filter(|(name, _)| name != "mod" && name != "tests")
            .collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, path) in &siblings {
            let code = code(path);
            let mut deps = names_after(&code, "super::");
            deps.extend(names_after(&code, &format!("crate::{top}::")));
            deps.retain(|d| d != name && siblings.contains_key(d));
            graph.insert(name.clone(), deps);
        }
        assert_eq!(
            cycle(&graph),
            None,
            "files of src/{top}/ importing each other"
        );
    }
}
