//! The library's modules form no import cycle: at every level of the module tree (the
//! crate's top-level modules, the files of one directory), no module reaches one that
//! reaches it back through `crate::` or `super::` paths.
//!
//! Read from the sources, as a reviewer reads the `use` lines: every `crate::a::b` and
//! `super::x` path outside comments and `#[cfg(test)]` items counts, resolved to the
//! deepest module file it names. A path into one's own ancestors (a child using its
//! parent's types) or descendants is hierarchy, not a cycle, and is not an edge; a path
//! through a parent's re-export counts as a use of the parent. Tests are left out: a test
//! may reach wherever it needs to build its case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["ingest", "live"]`) and where it is written.
type ModPath = Vec<String>;

/// One reference: from which module, to which, and where (file:line) for the report.
struct Reference {
    from: ModPath,
    to: ModPath,
    at: String,
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = library_modules(&src);
    assert!(modules.len() > 20, "found only {} modules under {}", modules.len(), src.display());
    let refs: Vec<Reference> = modules.iter().flat_map(|(m, file)| references(m, file, &modules)).collect();
    assert!(refs.len() > 100, "found only {} references: the scanner is broken", refs.len());

    // Edges among the children of each module: (parent, child a, child b) -> an example.
    let mut edges: BTreeMap<ModPath, BTreeMap<(String, String), String>> = BTreeMap::new();
    for r in &refs {
        let common = r.from.iter().zip(&r.to).take_while(|(a, b)| a == b).count();
        if common < r.from.len() && common < r.to.len() {
            let level = edges.entry(r.from[..common].to_vec()).or_default();
            level.entry((r.from[common].clone(), r.to[common].clone())).or_insert_with(|| r.at.clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, level) in &edges {
        for cycle in find_cycles(level) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], level[&(w[0].clone(), w[1].clone())]))
                .collect();
            cycles.push(format!("in crate::{}: {}", parent.join("::"), steps.join(", ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// What a module may reach: only these top-level modules, or anything but these.
enum Reach {
    Only(&'static [&'static str]),
    Not(&'static [&'static str]),
}

/// One layering rule: the sentence a break is reported with, the top-level modules it
/// binds, the modules they may reach, and the crates they may not use.
struct Rule {
    says: &'static str,
    modules: &'static [&'static str],
    reach: Reach,
    crates: &'static [&'static str],
}

/// The modules every part may use (what `lib.rs` calls "what every part shares").
const CORE: &[&str] = &["catalog", "models", "time", "units", "clock", "error_chain", "echo", "durable", "net"];
/// The front doors: what serves a protocol to clients.
const FRONT_DOORS: &[&str] = &["api", "dashboard", "sqlwire", "stream", "stream_bridge", "cluster"];
/// Crates that speak HTTP.
const HTTP_CRATES: &[&str] = &["axum", "hyper", "http", "tower_http", "reqwest"];

/// The layering, as rules (the README map and `lib.rs` describe the same).
const RULES: &[Rule] = &[
    Rule {
        says: "the decoders know nothing above them (bytes in, records out)",
        modules: &["decode"],
        reach: Reach::Only(&["decode", "models", "units"]),
        crates: HTTP_CRATES,
    },
    Rule {
        says: "the extremes rules, the lake and the core know no HTTP and no front door",
        modules: &["extremes", "lake", "catalog", "models", "time", "units", "clock", "error_chain", "echo", "durable"],
        reach: Reach::Not(&["api", "dashboard", "sqlwire", "stream", "stream_bridge", "feeds", "cluster", "access"]),
        crates: HTTP_CRATES,
    },
    Rule {
        says: "the extremes rules are pure: they read no storage",
        modules: &["extremes"],
        reach: Reach::Only(&["extremes", "decode", "catalog", "models", "time", "units"]),
        crates: &[],
    },
    Rule {
        says: "storage knows no write path",
        modules: &["lake", "durable"],
        reach: Reach::Not(&["write", "ingest", "jobs", "trading_day", "demo"]),
        crates: &[],
    },
    Rule {
        says: "the write path knows no jobs and no front door",
        modules: &["write", "ingest"],
        reach: Reach::Not(&[
            "jobs",
            "api",
            "dashboard",
            "sqlwire",
            "stream",
            "stream_bridge",
            "feeds",
            "cluster",
            "access",
        ]),
        crates: HTTP_CRATES,
    },
    Rule {
        says: "the PostgreSQL wire and Flight SQL know nothing of REST",
        modules: &["sqlwire"],
        reach: Reach::Not(&["api", "dashboard", "stream", "stream_bridge", "feeds"]),
        crates: &["axum"],
    },
    Rule {
        says: "access control serves every front door and knows none",
        modules: &["access"],
        reach: Reach::Not(FRONT_DOORS),
        crates: HTTP_CRATES,
    },
    Rule {
        says: "the push stream depends on no other module than the core",
        modules: &["stream"],
        reach: Reach::Only(CORE),
        crates: &[],
    },
    Rule {
        says: "the dashboard is static: it knows no other module",
        modules: &["dashboard"],
        reach: Reach::Only(&[]),
        crates: &[],
    },
    Rule {
        says: "the trading-day answer is below every front door",
        modules: &["trading_day"],
        reach: Reach::Not(FRONT_DOORS),
        crates: HTTP_CRATES,
    },
    Rule {
        says: "the bracket odds are below every front door",
        modules: &["bracket_odds", "brackets"],
        reach: Reach::Not(FRONT_DOORS),
        crates: HTTP_CRATES,
    },
];

/// The breaks of `rules` among `refs` and the crate uses of `files`, one line each,
/// starting with the rule's sentence.
fn rule_breaks(rules: &[Rule], refs: &[Reference], files: &[(ModPath, String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for rule in rules {
        let bound = |m: &ModPath| m.first().is_some_and(|top| rule.modules.contains(&top.as_str()));
        for r in refs.iter().filter(|r| bound(&r.from)) {
            let Some(top) = r.to.first().map(String::as_str) else { continue };
            let allowed = match rule.reach {
                Reach::Only(only) => rule.modules.contains(&top) || only.contains(&top),
                Reach::Not(not) => !not.contains(&top),
            };
            if !allowed {
                out.push(format!(
                    "{}: crate::{} uses crate::{} ({})",
                    rule.says,
                    r.from.join("::"),
                    r.to.join("::"),
                    r.at
                ));
            }
        }
        for (m, name, text) in files.iter().filter(|(m, _, _)| bound(m)) {
            for (n, line) in text.lines().enumerate() {
                for c in rule.crates {
                    let pat = format!("{c}::");
                    let used = line.match_indices(&pat).any(|(i, _)| {
                        !line[..i].chars().next_back().is_some_and(|p| p.is_alphanumeric() || p == '_' || p == ':')
                    });
                    if used {
                        out.push(format!(
                            "{}: crate::{} uses the {c} crate ({name}:{})",
                            rule.says,
                            m.join("::"),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    out.dedup();
    out
}

/// Each layering rule holds; a new import that breaks one fails here with its sentence.
#[test]
fn the_layering_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = library_modules(&src);
    let refs: Vec<Reference> = modules.iter().flat_map(|(m, file)| references(m, file, &modules)).collect();
    let files: Vec<(ModPath, String, String)> = modules
        .iter()
        .map(|(m, f)| {
            let name = f.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(f).display().to_string();
            (m.clone(), name, shipped_code(&std::fs::read_to_string(f).unwrap()))
        })
        .collect();
    let tops: BTreeSet<&str> = modules.keys().filter_map(|m| m.first().map(String::as_str)).collect();
    for rule in RULES {
        for m in rule.modules {
            assert!(tops.contains(m), "rule {:?} names no module `{m}`", rule.says);
        }
    }
    let breaks = rule_breaks(RULES, &refs, &files);
    assert!(breaks.is_empty(), "layering rules broken:\n{}", breaks.join("\n"));
}

/// The rule check reports an import and a crate use that break a rule, with its sentence.
#[test]
fn a_broken_rule_is_reported_with_its_sentence() {
    let rule = Rule {
        says: "storage knows no write path",
        modules: &["lake"],
        reach: Reach::Not(&["write"]),
        crates: &["axum"],
    };
    let path = |s: &str| s.split("::").map(str::to_string).collect::<ModPath>();
    let refs = [
        Reference { from: path("lake::writer"), to: path("write::hot"), at: "src/lake/writer.rs:9".into() },
        Reference { from: path("lake::writer"), to: path("catalog"), at: "src/lake/writer.rs:10".into() },
    ];
    let files =
        [(path("lake::store"), "src/lake/store.rs".to_string(), "use axum::Router;\nlet x = my_axum::y;".to_string())];
    let breaks = rule_breaks(&[rule], &refs, &files);
    assert_eq!(
        breaks,
        [
            "storage knows no write path: crate::lake::writer uses crate::write::hot (src/lake/writer.rs:9)",
            "storage knows no write path: crate::lake::store uses the axum crate (src/lake/store.rs:1)",
        ]
    );
}

/// Every module file of the library (from `lib.rs` down; the binary's `main.rs` and
/// `cli/` are another crate), by module path. Files named `tests.rs` are test modules.
fn library_modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    out.insert(Vec::new(), src.join("lib.rs"));
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for name in lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")).map(|l| l.trim_end_matches(';')) {
        walk(src, &[name.to_string()], &mut out);
    }
    out
}

fn walk(src: &Path, path: &[String], out: &mut BTreeMap<ModPath, PathBuf>) {
    let rel: PathBuf = path.iter().collect();
    let dir = src.join(&rel);
    let file = if dir.join("mod.rs").exists() { dir.join("mod.rs") } else { src.join(rel).with_extension("rs") };
    assert!(file.exists(), "module {} has no file", path.join("::"));
    out.insert(path.to_vec(), file);
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for e in entries.map(|e| e.unwrap().path()) {
        let stem = e.file_stem().unwrap().to_string_lossy().to_string();
        let is_module =
            (e.is_dir() && e.join("mod.rs").exists()) || (e.extension().is_some_and(|x| x == "rs") && stem != "mod");
        if is_module && stem != "tests" {
            let child: ModPath = path.iter().cloned().chain([stem]).collect();
            walk(src, &child, out);
        }
    }
}

/// The references of one module file to other modules of the crate.
fn references(module: &ModPath, file: &Path, modules: &BTreeMap<ModPath, PathBuf>) -> Vec<Reference> {
    let text = shipped_code(&std::fs::read_to_string(file).unwrap());
    let name = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(file).display().to_string();
    let mut out = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        for (root, rest) in path_starts(line) {
            let base: ModPath = match root {
                "crate" => Vec::new(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            for tail in expand(rest) {
                let full: ModPath = base.iter().cloned().chain(tail).collect();
                let to = (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|p| modules.contains_key(p)).unwrap();
                out.push(Reference { from: module.clone(), to, at: format!("{name}:{}", line_no + 1) });
            }
        }
    }
    out
}

/// The text without comments and without `#[cfg(test)]` items (lines blanked, so line
/// numbers stay).
fn shipped_code(text: &str) -> String {
    let mut out = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut skip_next_item = false;
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        if let Some(depth) = skip_depth.as_mut() {
            *depth += brace_balance(code);
            if *depth <= 0 {
                skip_depth = None;
            }
            out.push("");
            continue;
        }
        let trimmed = code.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            skip_next_item = true;
            out.push("");
            continue;
        }
        if skip_next_item && !trimmed.is_empty() && !trimmed.starts_with("#[") {
            skip_next_item = false;
            let balance = brace_balance(code);
            if balance > 0 {
                skip_depth = Some(balance);
            }
            out.push("");
            continue;
        }
        out.push(code);
    }
    out.join("\n")
}

fn brace_balance(code: &str) -> i64 {
    code.chars().map(|c| i64::from(c == '{') - i64::from(c == '}')).sum()
}

/// Each `crate::…` / `super::…` path on a line: the root keyword and the text after `::`.
fn path_starts(line: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for root in ["crate", "super"] {
        let pat = format!("{root}::");
        let mut from = 0;
        while let Some(i) = line[from..].find(&pat) {
            let at = from + i;
            let before = line[..at].chars().next_back();
            // `super::super::` is one path starting at the first `super`.
            let nested = line[..at].ends_with("super::");
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !nested {
                out.push((root, &line[at + pat.len()..]));
            }
            from = at + pat.len();
        }
    }
    out
}

/// The module-path candidates a path's tail names: `a::b::C` gives `[a, b, C]`, a group
/// `a::{b, c::D}` gives `[a, b]` and `[a, c, D]`. Only identifiers count; `self`, `*` and
/// `as` renames end a path.
fn expand(rest: &str) -> Vec<ModPath> {
    let mut segs = Vec::new();
    let mut s = rest;
    loop {
        let ident: String = s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident == "super" {
            // Handled as a relative path by the caller only one level deep; deeper
            // `super::super` paths are rare and resolve to an ancestor anyway.
            return vec![segs];
        }
        if ident.is_empty() || ident == "self" {
            if let Some(group) = s.strip_prefix('{') {
                let inner = &group[..matching_brace(group)];
                return split_top(inner)
                    .into_iter()
                    .flat_map(|item| expand(item.trim()))
                    .map(|tail| segs.iter().cloned().chain(tail).collect())
                    .collect();
            }
            return vec![segs];
        }
        s = &s[ident.len()..];
        segs.push(ident);
        match s.strip_prefix("::") {
            Some(next) => s = next,
            None => return vec![segs],
        }
    }
}

/// The index of the `}` closing a group whose `{` was just consumed (or the end).
fn matching_brace(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

/// Splits a group's items at top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Every elementary cycle's node sequence (closed: first == last), found by a DFS from
/// each node over the edges of one level; each cycle is reported once, from its least node.
fn find_cycles(edges: &BTreeMap<(String, String), String>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().insert(b);
    }
    let mut out = Vec::new();
    for &start in next.keys() {
        let mut stack = vec![(start, vec![start])];
        while let Some((node, path)) = stack.pop() {
            for &n in next.get(node).into_iter().flatten() {
                if n == start {
                    out.push(path.iter().chain([&start]).map(|s| s.to_string()).collect());
                } else if n > start && !path.contains(&n) && path.len() < 8 {
                    stack.push((n, path.iter().copied().chain([n]).collect()));
                }
            }
        }
    }
    out
}

#[test]
fn the_scanner_sees_paths_groups_and_skips_tests() {
    let t = expand("decode::{cli, dsm::parse, text::{a, b}}; x");
    let names: Vec<String> = t.iter().map(|p| p.join("::")).collect();
    assert_eq!(names, ["decode::cli", "decode::dsm::parse", "decode::text::a", "decode::text::b"]);
    let code = "use crate::a::B;\n// crate::c::D\n#[cfg(test)]\nmod tests {\n    use crate::e::F;\n}\nfn g() { super::h::i() }\n";
    let shipped = shipped_code(code);
    let starts: Vec<(&str, &str)> = shipped.lines().flat_map(path_starts).collect();
    assert_eq!(starts, [("crate", "a::B;"), ("super", "h::i() }")]);
    let mut edges = BTreeMap::new();
    edges.insert(("a".to_string(), "b".to_string()), String::new());
    edges.insert(("b".to_string(), "c".to_string()), String::new());
    assert!(find_cycles(&edges).is_empty());
    edges.insert(("c".to_string(), "a".to_string()), String::new());
    assert_eq!(find_cycles(&edges), [["a", "b", "c", "a"]]);
}

/// The module maps stay true: every top-level module of the library is in `lib.rs`'s doc
/// list and in the README's "Where things are" table.
#[test]
fn every_module_is_on_the_maps() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let map = readme.split("## Where things are").nth(1).expect("README has the map").split("\n## ").next().unwrap();
    let modules: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("pub mod ")).map(|l| l.trim_end_matches(';')).collect();
    assert!(modules.len() > 10, "{modules:?}");
    let doc: String = lib.lines().filter(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
    for m in modules {
        assert!(doc.contains(&format!("[`{m}`]")), "lib.rs's doc does not list `{m}`");
        let in_map = map.contains(&format!("`{m}/`")) || map.contains(&format!("`{m}`"));
        assert!(in_map, "README \"Where things are\" does not list `{m}`");
    }
}

/// The files the fuzz crate compiles by path (`tests/fuzz/src/lib.rs`: `decode`, `models`,
/// `units`) reach no other module of the crate: the fuzz crate has no other, so one such
/// path breaks the fuzz build, which CI runs only after every test. Checked here first.
#[test]
fn the_fuzzed_modules_reach_only_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let fuzz_lib = std::fs::read_to_string(src.join("../tests/fuzz/src/lib.rs")).unwrap();
    let fuzzed: Vec<String> = fuzz_lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    assert_eq!(fuzzed, ["decode", "models", "units"], "the fuzz crate's module list changed: update this test");
    let modules = library_modules(&src);
    let outside: Vec<String> = modules
        .iter()
        .filter(|(m, _)| m.first().is_some_and(|top| fuzzed.contains(top)))
        .flat_map(|(m, file)| references(m, file, &modules))
        .filter(|r| !r.to.first().is_some_and(|top| fuzzed.contains(top)))
        .map(|r| format!("{} -> crate::{} ({})", r.from.join("::"), r.to.join("::"), r.at))
        .collect();
    assert!(outside.is_empty(), "fuzzed modules reach outside decode/models/units:\n{}", outside.join("\n"));
}
