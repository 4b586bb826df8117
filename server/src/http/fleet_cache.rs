//! The fleet API's answers kept compressed, per snapshot version and filter.
//!
//! A snapshot never changes, so each filtered view is serialized once and requests share it.
//! On `large` the whole fleet is 8 MB of JSON; kept as it is, one read of `/api/v1/fleet` held
//! that much for as long as the snapshot lived, and every answer was compressed again on its
//! way out. So a view is kept as a raw DEFLATE segment (about a tenth of the size), and an
//! answer is made of segments: its head (which changes every second: the snapshot's age),
//! the kept view, and the closing brace, each compressed on its own and flushed to a byte
//! boundary, so that together they are one DEFLATE stream in a gzip frame (RFC 1951 §3.2.3,
//! RFC 1952). The frame's CRC-32 is combined from the parts' without reading the view again.
//! A client that does not accept gzip gets the view inflated for its answer.

use std::{
    collections::HashMap,
    io::{Read, Write},
    sync::{Arc, Mutex},
};

use app::service::fleet::FleetFilter;
use axum::body::Bytes;
use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression};

use crate::error::AppError;

/// One view, compressed: a DEFLATE segment that ends on a byte boundary without a final block.
pub struct CompressedView {
    deflated: Bytes,
    crc: crc32fast::Hasher,
    len: usize,
}

impl CompressedView {
    /// Compresses `json` as a segment that more segments may follow.
    pub fn new(json: &[u8]) -> Result<CompressedView, AppError> {
        let mut crc = crc32fast::Hasher::new();
        crc.update(json);
        Ok(CompressedView {
            deflated: Bytes::from(segment(json, false)?),
            crc,
            len: json.len(),
        })
    }

    /// The bytes kept.
    pub fn compressed_len(&self) -> usize {
        self.deflated.len()
    }

    /// `before` + the view + `after`, as one gzip stream.
    pub fn gzip(&self, before: &[u8], after: &[u8]) -> Result<Vec<Bytes>, AppError> {
        // ID1 ID2, CM = deflate, no flags, no time, no extra flags, OS unknown.
        const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        let mut crc = crc32fast::Hasher::new();
        crc.update(before);
        crc.combine(&self.crc);
        crc.update(after);
        let total = before.len() + self.len + after.len();
        let mut head = HEADER.to_vec();
        head.extend(segment(before, false)?);
        let mut tail = segment(after, true)?;
        tail.extend(crc.finalize().to_le_bytes());
        // ISIZE: the input's length modulo 2^32.
        tail.extend(((total % (1 << 32)) as u32).to_le_bytes());
        Ok(vec![
            Bytes::from(head),
            self.deflated.clone(),
            Bytes::from(tail),
        ])
    }

    /// The view as JSON again.
    pub fn inflate(&self) -> Result<Bytes, AppError> {
        // The segment has no final block: the decoder reads to its end and then finds no more
        // input, which it reports as an unexpected end once everything before it is out.
        let mut json = Vec::with_capacity(self.len);
        let mut decoder = DeflateDecoder::new(&self.deflated[..]);
        match decoder.read_to_end(&mut json) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
            Err(e) => return Err(internal(e)),
        }
        if json.len() != self.len {
            return Err(AppError::Internal(anyhow::anyhow!(
                "the kept fleet view inflated to {} bytes, not {}",
                json.len(),
                self.len
            )));
        }
        Ok(Bytes::from(json))
    }
}

/// `data` deflated; `last` ends the stream, otherwise the segment is flushed to a byte boundary
/// with no final block, so another segment may follow it.
fn segment(data: &[u8], last: bool) -> Result<Vec<u8>, AppError> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::new(6));
    encoder.write_all(data).map_err(internal)?;
    if last {
        encoder.finish().map_err(internal)
    } else {
        // A sync flush ends with an empty stored block: byte-aligned, not final.
        encoder.flush().map_err(internal)?;
        Ok(std::mem::take(encoder.get_mut()))
    }
}

fn internal(error: std::io::Error) -> AppError {
    AppError::Internal(anyhow::anyhow!(
        "compressing the fleet's answer failed: {error}"
    ))
}

/// Filtered snapshots, compressed, kept per snapshot version and filter.
#[derive(Default)]
pub struct FleetJsonCache {
    entries: Mutex<HashMap<(u64, FleetFilter), Arc<CompressedView>>>,
}

/// Views kept at once.
const CACHED_VIEWS: usize = 32;

impl FleetJsonCache {
    pub(crate) fn get_or_make(
        &self,
        version: u64,
        filter: &FleetFilter,
        make: impl FnOnce() -> Result<Vec<u8>, AppError>,
    ) -> Result<Arc<CompressedView>, AppError> {
        let key = (version, filter.clone());
        if let Some(view) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(view.clone());
        }
        let view = Arc::new(CompressedView::new(&make()?)?);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(v, _), _| *v == version);
        if entries.len() >= CACHED_VIEWS {
            entries.clear();
        }
        entries.insert(key, view.clone());
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use flate2::read::GzDecoder;

    use super::*;

    fn gunzip(parts: &[Bytes]) -> Vec<u8> {
        let all: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let mut out = Vec::new();
        GzDecoder::new(&all[..])
            .read_to_end(&mut out)
            .expect("a valid gzip stream, its CRC and length checked");
        out
    }

    #[test]
    fn the_parts_make_one_gzip_stream_of_the_whole_answer() {
        let view: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{{\"gpu\":{i},\"m\":{}}},", i % 97).into_bytes())
            .collect();
        let kept = CompressedView::new(&view).expect("compressed");
        assert!(kept.compressed_len() * 5 < view.len(), "kept compressed");
        let parts = kept.gzip(br#"{"age":3,"snapshot":"#, b"}").expect("framed");
        let mut expected = br#"{"age":3,"snapshot":"#.to_vec();
        expected.extend(&view);
        expected.push(b'}');
        assert_eq!(gunzip(&parts), expected);
        // Another head on the same kept view.
        let parts = kept.gzip(b"[", b"]").expect("framed");
        assert_eq!(gunzip(&parts).len(), view.len() + 2);
        assert_eq!(kept.inflate().expect("inflated"), view);
    }

    #[test]
    fn an_empty_view_and_empty_parts_are_still_a_stream() {
        let kept = CompressedView::new(b"").expect("compressed");
        assert_eq!(gunzip(&kept.gzip(b"", b"").expect("framed")), b"");
        assert_eq!(kept.inflate().expect("inflated"), &b""[..]);
    }

    #[test]
    fn a_view_is_made_once_per_version_and_filter() {
        let cache = FleetJsonCache::default();
        let filter = FleetFilter::default();
        let mut made = 0;
        for _ in 0..3 {
            cache
                .get_or_make(1, &filter, || {
                    made += 1;
                    Ok(b"{}".to_vec())
                })
                .expect("made");
        }
        assert_eq!(made, 1);
        let newer = cache
            .get_or_make(2, &filter, || Ok(b"[1]".to_vec()))
            .expect("made");
        assert_eq!(newer.inflate().expect("inflated"), &b"[1]"[..]);
        let entries = cache.entries.lock().expect("not poisoned");
        assert_eq!(entries.len(), 1, "the older version's views are let go");
    }
}
