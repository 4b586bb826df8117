//! CSV as the exports write it (RFC 4180).

/// The characters that make a spreadsheet read a cell as a formula when they lead it: `=`, `+`,
/// `-`, `@`, and a tab or carriage return, which spreadsheets skip before looking for the others
/// (OWASP's "CSV injection" list).
const FORMULA_LEADS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A CSV field, quoted when it must be; a field that a spreadsheet would run as a formula is
/// prefixed with `'`.
pub fn field(text: &str) -> String {
    let text = if text.starts_with(FORMULA_LEADS) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn every_formula_lead_is_defused() {
        for lead in ["=", "+", "-", "@", "\t", "\r"] {
            let cell = format!("{lead}HYPERLINK(\"https://evil.example\")");
            let written = field(&cell);
            let unquoted = written.trim_start_matches('"');
            assert!(unquoted.starts_with('\''), "{lead:?}: {written:?}");
        }
        assert_eq!(field("\tcmd"), "'\tcmd");
        assert_eq!(field("\r=1"), "\"'\r=1\"");
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("3 GiB"), "3 GiB");
    }
}
