//! Where a JSON path's value starts in a text, as a line and column, so that an error shows at
//! its place in what the user typed.

/// The byte `offset` of `text` as a 1-based line and column.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// Where the value at a JSON `path` (`containerDefinitions[0].resourceRequirements[1].value`)
/// starts in `text`, as a line and column; `None` when the text does not parse or has no such
/// path. The key's position is given for a member, so the user sees the field's name.
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        while let Some(close) = rest.find(']') {
            steps.push(Step::Index(rest[1..close].parse().ok()?));
            rest = &rest[close + 1..];
        }
    }
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
    };
    let offset = scanner.find(&steps)?;
    Some(line_column(text, offset))
}

enum Step {
    Key(String),
    Index(usize),
}

/// A JSON reader that only finds where a path's value (or key) starts.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn blank(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn find(&mut self, steps: &[Step]) -> Option<usize> {
        self.blank();
        let Some((step, rest)) = steps.split_first() else {
            return Some(self.at);
        };
        match (step, self.bytes.get(self.at)?) {
            (Step::Key(wanted), b'{') => {
                self.at += 1;
                loop {
                    self.blank();
                    if self.bytes.get(self.at)? == &b'}' {
                        return None;
                    }
                    let key_at = self.at;
                    let key = self.string()?;
                    self.blank();
                    self.at += 1; // ':'
                    if &key == wanted {
                        return if rest.is_empty() {
                            Some(key_at)
                        } else {
                            self.find(rest)
                        };
                    }
                    self.skip()?;
                    self.blank();
                    if self.bytes.get(self.at)? == &b',' {
                        self.at += 1;
                    }
                }
            }
            (Step::Index(wanted), b'[') => {
                self.at += 1;
                for index in 0.. {
                    self.blank();
                    if self.bytes.get(self.at)? == &b']' {
                        return None;
                    }
                    if index == *wanted {
                        return self.find(rest);
                    }
                    self.skip()?;
                    self.blank();
                    if self.bytes.get(self.at)? == &b',' {
                        self.at += 1;
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// Reads a string and returns it unescaped enough to compare keys.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.skip_string()?;
        serde_json::from_slice(&self.bytes[start..self.at]).ok()
    }

    fn skip_string(&mut self) -> Option<()> {
        self.at += 1;
        while let Some(byte) = self.bytes.get(self.at) {
            self.at += 1;
            match byte {
                b'\\' => self.at += 1,
                b'"' => return Some(()),
                _ => {}
            }
        }
        None
    }

    /// Skips one value.
    fn skip(&mut self) -> Option<()> {
        self.blank();
        match self.bytes.get(self.at)? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                while let Some(byte) = self.bytes.get(self.at) {
                    match byte {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
                None
            }
            _ => {
                while let Some(byte) = self.bytes.get(self.at) {
                    if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                        break;
                    }
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_at_their_line_and_column() {
        let text = "{\n  \"family\": \"x\",\n  \"containerDefinitions\": [\n    {\"name\": \"a\"},\n    {\"name\": \"b\", \"resourceRequirements\": [{\"type\": \"GPU\"}]}\n  ]\n}";
        assert_eq!(locate(text, "family"), Some((2, 3)));
        assert_eq!(
            locate(text, "containerDefinitions[1].resourceRequirements[0].type"),
            Some((5, 45))
        );
        assert_eq!(locate(text, "containerDefinitions[2]"), None);
        assert_eq!(locate(text, "nope"), None);
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }
}
