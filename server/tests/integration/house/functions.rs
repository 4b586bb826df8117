//! Functions read in one go: none in the workspace's sources longer than a page of code; a
//! longer one is split into named steps.

use std::fs;

use super::{code_of, rust_files, workspace, CRATES};

/// The most lines of code (comments aside) a function may have, its signature to its closing
/// brace. Tests are not counted: a test is a story told in order.
const MOST_FUNCTION_LINES: usize = 80;

/// The name of the function a line of code starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let mut word = words.next()?;
    while word.starts_with("pub")
        || matches!(
            word,
            "const" | "async" | "unsafe" | "extern" | "\"C\"" | "default"
        )
    {
        word = words.next()?;
    }
    if word != "fn" {
        return None;
    }
    let rest = words.next()?;
    let end = rest.find(['(', '<']).unwrap_or(rest.len());
    Some(&rest[..end]).filter(|name| !name.is_empty())
}

/// The functions of `code` longer than `most` lines: their names and lengths. A function ends
/// at the closing brace at its own indentation; a declaration without a body is none.
fn long_functions(code: &str, most: usize) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(name) = fn_name(trimmed) else {
            continue;
        };
        // Where the signature ends: its body's `{`, or the `;` of a declaration.
        let Some(open) = (at..lines.len())
            .find(|n| lines[*n].contains('{') || lines[*n].trim_end().ends_with(';'))
        else {
            continue;
        };
        if !lines[open].contains('{') || lines[open].trim_end().ends_with('}') {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|n| lines[*n].trim_end() == close) {
            let length = end - at + 1;
            if length > most {
                found.push((name.to_string(), length));
            }
        }
    }
    found
}

#[test]
fn no_function_is_longer_than_a_page() {
    let root = workspace();
    let mut problems = Vec::new();
    for name in CRATES {
        for file in rust_files(&root.join(name).join("src")) {
            if file.file_name().is_some_and(|f| f == "tests.rs") {
                continue;
            }
            let code = code_of(&fs::read_to_string(&file).expect("a readable source file"));
            for (function, length) in long_functions(&code, MOST_FUNCTION_LINES) {
                problems.push(format!(
                    "{}: {function} has {length} lines of code, over {MOST_FUNCTION_LINES}: split it into named steps",
                    file.strip_prefix(&root).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_measure_of_a_function_finds_a_long_one_and_nothing_else() {
    let long_body = "    let x = 1;\n".repeat(20);
    let code = format!(
        "pub(crate) async fn long<T>(a: T)\nwhere\n    T: Copy,\n{{\n{long_body}}}\n\
         fn short() {{\n    1;\n}}\n\
         fn one_line() {{}}\n\
         trait T {{\n    fn declared(&self);\n    fn provided(&self) {{\n{long_body}    }}\n}}\n"
    );
    let found = long_functions(&code, 10);
    assert_eq!(
        found,
        vec![("long".to_string(), 25), ("provided".to_string(), 22)],
        "{code}"
    );
    assert!(long_functions(&code, 30).is_empty());
}
