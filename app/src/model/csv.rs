//! CSV as the exports write it (RFC 4180).

/// A CSV field, quoted when it must be; a leading `=`, `+`, `-` or `@` is prefixed with `'` so a
/// spreadsheet does not run it as a formula.
pub fn field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@']) {
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
