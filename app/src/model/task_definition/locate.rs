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

/// Where each of `paths` starts in `text`, as [`locate`] finds one, in a single pass over the
/// text however many paths are asked for: a path's value (an element) or key (a member), as a
/// line and column; `None` for a path the text does not have.
pub fn locate_all(text: &str, paths: &[&str]) -> Vec<Option<(usize, usize)>> {
    let mut wanted: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (index, path) in paths.iter().enumerate() {
        if !path.is_empty() {
            wanted.entry(path).or_default().push(index);
        }
    }
    let mut offsets: Vec<(usize, usize)> = Vec::new();
    if !wanted.is_empty() {
        Walker {
            bytes: text.as_bytes(),
            at: 0,
            path: String::new(),
            wanted: &wanted,
            found: &mut offsets,
        }
        .walk();
    }
    let mut places = vec![None; paths.len()];
    offsets.sort_unstable();
    // Lines and columns counted forward once, from one offset to the next.
    let (mut at, mut line, mut column) = (0usize, 1usize, 1usize);
    let bytes = text.as_bytes();
    for (offset, index) in offsets {
        while at < offset.min(bytes.len()) {
            match bytes[at] {
                b'\n' => {
                    line += 1;
                    column = 1;
                }
                // A UTF-8 continuation byte is part of the character before it.
                byte if byte & 0xC0 == 0x80 => {}
                _ => column += 1,
            }
            at += 1;
        }
        places[index] = Some((line, column));
    }
    places
}

/// A JSON reader that notes where wanted paths start, walking the text once. Nesting is
/// followed with an explicit stack, so a deep text cannot exhaust the thread's stack.
struct Walker<'a, 'w> {
    bytes: &'a [u8],
    at: usize,
    /// The path of the value being read, as the checks spell it.
    path: String,
    wanted: &'w std::collections::HashMap<&'w str, Vec<usize>>,
    found: &'w mut Vec<(usize, usize)>,
}

/// A container being read: its kind, where its path ended before it, the next element's index.
struct Open {
    object: bool,
    path_len: usize,
    next_index: usize,
}

impl Walker<'_, '_> {
    fn blank(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn note(&mut self, offset: usize) {
        if let Some(indexes) = self.wanted.get(self.path.as_str()) {
            self.found
                .extend(indexes.iter().map(|index| (offset, *index)));
        }
    }

    /// Reads a string; its text when `keep`.
    fn string(&mut self, keep: bool) -> Option<Option<String>> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        Some(if keep {
            serde_json::from_slice(&self.bytes[start..self.at.min(self.bytes.len())]).ok()
        } else {
            None
        })
    }

    fn walk(&mut self) -> Option<()> {
        let mut stack: Vec<Open> = Vec::new();
        // Whether the next thing is a value (after a key, an element's start, or the root).
        self.blank();
        loop {
            // One value starts here, at `self.path`.
            self.blank();
            match self.bytes.get(self.at)? {
                b'{' | b'[' => {
                    let object = self.bytes[self.at] == b'{';
                    self.at += 1;
                    stack.push(Open {
                        object,
                        path_len: self.path.len(),
                        next_index: 0,
                    });
                }
                b'"' => {
                    self.string(false)?;
                }
                _ => {
                    while let Some(byte) = self.bytes.get(self.at) {
                        if matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace() {
                            break;
                        }
                        self.at += 1;
                    }
                }
            }
            // Find where the next value starts, closing what ends on the way.
            loop {
                let open = stack.last_mut()?;
                self.path.truncate(open.path_len);
                self.blank();
                match self.bytes.get(self.at)? {
                    b',' => {
                        self.at += 1;
                        self.blank();
                    }
                    b'}' | b']' => {
                        self.at += 1;
                        stack.pop();
                        if stack.is_empty() {
                            return Some(());
                        }
                        continue;
                    }
                    _ => {}
                }
                let open = stack.last_mut()?;
                if open.object {
                    if self.bytes.get(self.at)? == &b'}' {
                        continue;
                    }
                    let key_at = self.at;
                    let key = self.string(true)??;
                    if !self.path.is_empty() {
                        self.path.push('.');
                    }
                    self.path.push_str(&key);
                    self.note(key_at);
                    self.blank();
                    self.at += 1; // ':'
                } else {
                    if self.bytes.get(self.at)? == &b']' {
                        continue;
                    }
                    let index = open.next_index;
                    open.next_index += 1;
                    use std::fmt::Write as _;
                    let _ = write!(self.path, "[{index}]");
                    self.blank();
                    self.note(self.at);
                }
                break;
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
