//! The reader of imports sees what it is for: a cycle through a parent's re-export, through a
//! glob of the parent, and none where a name is the parent's own.

use std::{collections::BTreeMap, path::PathBuf};

use super::{
    add_glob_paths, code_of, glob_of_parent, identifiers, paths_in, use_statements, Crate,
};

#[test]
fn the_reader_of_imports_sees_a_cycle_where_there_is_one() {
    // Two sibling files that import each other, one through its parent's re-export.
    let mut made = Crate {
        name: "made".into(),
        modules: [
            vec![],
            vec!["a".into()],
            vec!["a".into(), "b".into()],
            vec!["a".into(), "c".into()],
        ]
        .into_iter()
        .collect(),
        uses: BTreeMap::new(),
        reexports: BTreeMap::new(),
    };
    let b = code_of("use super::c::Thing;\n#[cfg(test)]\nmod tests {\n use crate::a::Other;\n}\n");
    let c = code_of("// use crate::a::b::Not;\nfn f() { let _ = crate::a::{Other as _, b}; }\n");
    made.uses.insert(
        PathBuf::from("a/b.rs"),
        (
            vec!["a".into(), "b".into()],
            paths_in(&b, &["a".into(), "b".into()]),
        ),
    );
    made.uses.insert(
        PathBuf::from("a/c.rs"),
        (
            vec!["a".into(), "c".into()],
            paths_in(&c, &["a".into(), "c".into()]),
        ),
    );
    made.reexports.insert(
        (vec!["a".into()], "Other".into()),
        vec!["a".into(), "b".into(), "Other".into()],
    );
    assert_eq!(made.cycles().len(), 1, "b -> c -> b through a's re-export");
    // Without the code path that names `b`, the only way back is the re-export.
    made.uses.insert(
        PathBuf::from("a/c.rs"),
        (
            vec!["a".into(), "c".into()],
            paths_in("use crate::a::Other;", &["a".into(), "c".into()]),
        ),
    );
    assert_eq!(made.cycles().len(), 1);
    made.reexports.clear();
    assert!(
        made.cycles().is_empty(),
        "a name of the parent itself is no sibling"
    );
}

#[test]
fn a_glob_of_the_parent_is_read_as_the_names_it_brings() {
    // a/b.rs takes everything of `a` and uses `Thing`, which `a` imports from its child `c`;
    // a/c.rs names `b` outright: a cycle only the glob shows.
    let module = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let mut made = Crate {
        name: "made".into(),
        modules: [
            module(&[]),
            module(&["a"]),
            module(&["a", "b"]),
            module(&["a", "c"]),
        ]
        .into_iter()
        .collect(),
        uses: BTreeMap::new(),
        reexports: BTreeMap::new(),
    };
    let b = code_of(
        "use super::*;
fn f() -> Thing { Thing }
",
    );
    let c = code_of(
        "use crate::a::b::f;
",
    );
    let parent = code_of(
        "mod b;
mod c;
use self::{
    c::Thing,
};
",
    );
    made.uses.insert(
        PathBuf::from("a/b.rs"),
        (module(&["a", "b"]), paths_in(&b, &module(&["a", "b"]))),
    );
    made.uses.insert(
        PathBuf::from("a/c.rs"),
        (module(&["a", "c"]), paths_in(&c, &module(&["a", "c"]))),
    );
    assert!(
        made.cycles().is_empty(),
        "without the glob read, no way back"
    );
    let mut imports = BTreeMap::new();
    for (_, targets) in use_statements(&parent, &module(&["a"])) {
        for target in targets {
            imports.insert(
                (module(&["a"]), target.last().cloned().unwrap_or_default()),
                target,
            );
        }
    }
    assert!(glob_of_parent(&b));
    assert!(!glob_of_parent(&c));
    // A word in a string literal names nothing.
    let words = identifiers("let x = \"Thing \\\"c\\\"\"; f(Other)");
    assert!(words.contains("Other") && words.contains("x"), "{words:?}");
    assert!(
        !words.contains("Thing") && !words.contains("c"),
        "{words:?}"
    );
    let globs = [(PathBuf::from("a/b.rs"), identifiers(&b))]
        .into_iter()
        .collect();
    add_glob_paths(&mut made.uses, globs, &imports);
    assert_eq!(
        made.cycles().len(),
        1,
        "b -> c through the glob, c -> b by name"
    );
}
