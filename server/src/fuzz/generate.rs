//! Generated input: text a person or a program might send (empty, words, numbers of every
//! size, control characters, other scripts, broken percent-encoding, JSON and TOML fragments,
//! long runs), JSON of any shape with the field names a request of the kind uses, mutations of a
//! real task definition, and CBOR — well-formed or cut short.

use rand::{rngs::StdRng, seq::IndexedRandom, Rng};
use serde_json::{Map, Value};

/// Pieces of text that have broken parsers before.
const NASTY: [&str; 24] = [
    "",
    " ",
    "0",
    "-1",
    "4294967296",
    "18446744073709551616",
    "1e309",
    "NaN",
    "null",
    "true",
    "%",
    "%ZZ",
    "%00",
    "../../etc/passwd",
    "'; DROP TABLE audit; --",
    "\u{0}",
    "\u{7}\u{1b}[31m",
    "\u{202e}evil",
    "ÿ",
    "😀",
    "名前",
    "a/b",
    "{\"a\":",
    "[[[[[[[[",
];

/// One piece of text: a nasty one, a word, a number, or a long run.
pub fn text(rng: &mut StdRng) -> String {
    match rng.random_range(0..10) {
        0..=3 => NASTY.choose(rng).copied().unwrap_or_default().to_string(),
        4 => rng.random_range(i64::MIN..i64::MAX).to_string(),
        5 => format!(
            "{}",
            rng.random::<f64>() * 10f64.powi(rng.random_range(-5..40))
        ),
        6 => "x".repeat(rng.random_range(100..6_000)),
        7 => (0..rng.random_range(1..40))
            .map(|_| char::from_u32(rng.random_range(0..0x3000)).unwrap_or('?'))
            .collect(),
        _ => {
            let words = [
                "embed-api",
                "inference-prod",
                "search",
                "MPS",
                "g6e.12xlarge",
                "2h",
                "week",
            ];
            words.choose(rng).copied().unwrap_or_default().to_string()
        }
    }
}

/// `text` percent-encoded for a URL, or now and then left raw (as a hand-typed URL might be).
pub fn url_text(rng: &mut StdRng) -> String {
    let raw = text(rng);
    if rng.random_bool(0.2) {
        return raw
            .chars()
            .filter(|c| c.is_ascii_graphic() && !matches!(c, '#' | '&' | '?' | ' '))
            .collect();
    }
    raw.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A query string of up to six parameters, most of them among `known`, some repeated.
pub fn query(rng: &mut StdRng, known: &[&str]) -> String {
    let count = rng.random_range(0..7);
    let pairs: Vec<String> = (0..count)
        .map(|_| {
            let key = if rng.random_bool(0.8) && !known.is_empty() {
                known.choose(rng).copied().unwrap_or_default().to_string()
            } else {
                url_text(rng)
            };
            if rng.random_bool(0.1) {
                key
            } else {
                format!("{key}={}", url_text(rng))
            }
        })
        .collect();
    if pairs.is_empty() {
        String::new()
    } else {
        format!("?{}", pairs.join("&"))
    }
}

/// JSON of any shape, at most `depth` deep, its object keys mostly among `known`.
pub fn json(rng: &mut StdRng, known: &[&str], depth: u32) -> Value {
    let pick = if depth == 0 {
        rng.random_range(0..6)
    } else {
        rng.random_range(0..9)
    };
    match pick {
        0 => Value::Null,
        1 => Value::Bool(rng.random()),
        2 => Value::from(rng.random_range(-5_i64..10_000)),
        3 => Value::from(rng.random_range(i64::MIN..i64::MAX)),
        4 => serde_json::Number::from_f64(rng.random::<f64>() * 1e12)
            .map_or(Value::Null, Value::Number),
        5 => Value::String(text(rng)),
        6 | 7 => Value::Object(object(rng, known, depth - 1)),
        _ => Value::Array(
            (0..rng.random_range(0..5))
                .map(|_| json(rng, known, depth - 1))
                .collect(),
        ),
    }
}

/// An object of up to eight fields, mostly named as in `known`.
pub fn object(rng: &mut StdRng, known: &[&str], depth: u32) -> Map<String, Value> {
    (0..rng.random_range(0..9))
        .map(|_| {
            let key = if rng.random_bool(0.85) && !known.is_empty() {
                known.choose(rng).copied().unwrap_or_default().to_string()
            } else {
                text(rng)
            };
            (key, json(rng, known, depth))
        })
        .collect()
}

/// A random path down `value` as a JSON pointer, stopping at a random depth.
fn path(rng: &mut StdRng, value: &Value) -> String {
    let mut pointer = String::new();
    let mut at = value;
    while rng.random_bool(0.7) {
        let (step, next) = match at {
            Value::Object(map) if !map.is_empty() => {
                let key = map
                    .keys()
                    .nth(rng.random_range(0..map.len()))
                    .cloned()
                    .unwrap_or_default();
                let next = &map[&key];
                (key.replace('~', "~0").replace('/', "~1"), next)
            }
            Value::Array(items) if !items.is_empty() => {
                let index = rng.random_range(0..items.len());
                (index.to_string(), &items[index])
            }
            _ => break,
        };
        pointer.push('/');
        pointer.push_str(&step);
        at = next;
    }
    pointer
}

/// `value` with one to four of its fields, anywhere in it, replaced, removed or added.
pub fn mutate(rng: &mut StdRng, value: &mut Value, known: &[&str]) {
    for _ in 0..rng.random_range(1..5) {
        let pointer = path(rng, value);
        let Some(at) = value.pointer_mut(&pointer) else {
            continue;
        };
        let choice = rng.random_range(0..3);
        match (choice, &mut *at) {
            (0, Value::Object(map)) if !map.is_empty() => {
                let key = map
                    .keys()
                    .nth(rng.random_range(0..map.len()))
                    .cloned()
                    .unwrap_or_default();
                map.remove(&key);
            }
            (1, Value::Object(map)) => {
                let key = known.choose(rng).copied().unwrap_or("x").to_string();
                map.insert(key, json(rng, known, 2));
            }
            _ => *at = json(rng, known, 2),
        }
    }
}

/// A CBOR head: major type `major` with argument `n`.
fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let major = major << 5;
    match n {
        0..=23 => out.push(major | n as u8),
        24..=0xff => out.extend([major | 24, n as u8]),
        0x100..=0xffff => {
            out.push(major | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(major | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(major | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

/// `value` in CBOR (numbers as integers or doubles, a timestamp tag now and then).
fn cbor_into(out: &mut Vec<u8>, value: &Value, rng: &mut StdRng) {
    match value {
        Value::Null => out.push(0xf6),
        Value::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => head(out, 0, u),
            (None, Some(i)) => head(out, 1, (-1 - i) as u64),
            _ => {
                if rng.random_bool(0.3) {
                    head(out, 6, 1); // an epoch-seconds timestamp
                }
                out.push(0xfb);
                out.extend(n.as_f64().unwrap_or(0.0).to_be_bytes());
            }
        },
        Value::String(s) => {
            head(out, 3, s.len() as u64);
            out.extend(s.as_bytes());
        }
        Value::Array(items) => {
            head(out, 4, items.len() as u64);
            for item in items {
                cbor_into(out, item, rng);
            }
        }
        Value::Object(map) => {
            head(out, 5, map.len() as u64);
            for (key, item) in map {
                head(out, 3, key.len() as u64);
                out.extend(key.as_bytes());
                cbor_into(out, item, rng);
            }
        }
    }
}

/// A CBOR body: a map with the fields of `known`, sometimes cut short, corrupted, or random bytes.
pub fn cbor(rng: &mut StdRng, known: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    cbor_into(&mut out, &Value::Object(object(rng, known, 3)), rng);
    match rng.random_range(0..6) {
        0 if !out.is_empty() => out.truncate(rng.random_range(0..out.len())),
        1 if !out.is_empty() => {
            let at = rng.random_range(0..out.len());
            out[at] = rng.random();
        }
        2 => out = (0..rng.random_range(0..64)).map(|_| rng.random()).collect(),
        // An indefinite-length map that never ends, or a length far past the body.
        3 => out = vec![0xbf, 0x61, b'a', 0x01],
        4 => out = vec![0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        _ => {}
    }
    out
}
