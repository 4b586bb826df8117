//! The console's live heap, counted: the binary's allocator is wrapped in one that keeps the
//! bytes allocated and not yet freed (`cap::Cap`, one atomic add per allocation), so that `/metrics` and the soak show what the console holds beside
//! what the system gives it (the resident set, which also counts what the allocator keeps).

use std::fmt::Write as _;
use std::sync::OnceLock;

/// What reads the count of the allocator the binary runs on.
pub trait LiveBytes: Sync {
    fn live_bytes(&self) -> usize;
}

impl<A: Sync> LiveBytes for cap::Cap<A> {
    fn live_bytes(&self) -> usize {
        self.allocated()
    }
}

static INSTALLED: OnceLock<&'static dyn LiveBytes> = OnceLock::new();

/// Called by the binary with its global allocator, so that `live_bytes` can read it.
pub fn install(allocator: &'static dyn LiveBytes) {
    INSTALLED.get_or_init(|| allocator);
}

/// The heap the console holds now, when it runs on a counting allocator (the `gpushare` binary
/// does; tests and other programs linking this library do not).
pub fn live_bytes() -> Option<u64> {
    INSTALLED.get().map(|counting| counting.live_bytes() as u64)
}

/// The process's resident set, from `/proc/self/statm` (Linux); `None` elsewhere.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// For `/metrics`: the heap the console holds (when its allocator counts it) and its resident
/// set. The gap is what the allocator keeps, and the binary's code mapped in.
pub fn write_metrics(out: &mut String) -> std::fmt::Result {
    write_memory(out, live_bytes(), resident_bytes())
}

fn write_memory(out: &mut String, live: Option<u64>, resident: Option<u64>) -> std::fmt::Result {
    if let Some(live) = live {
        writeln!(
            out,
            "# HELP gpushare_heap_live_bytes Bytes the console holds on its heap now: allocated \
             and not yet freed.\n# TYPE gpushare_heap_live_bytes gauge\n\
             gpushare_heap_live_bytes {live}"
        )?;
    }
    if let Some(resident) = resident {
        writeln!(
            out,
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n\
             # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {resident}"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_is_shown_only_when_it_is_counted() {
        let mut counted = String::new();
        write_memory(&mut counted, Some(1_234), Some(8_192)).expect("writes to a String");
        assert!(counted.contains("\ngpushare_heap_live_bytes 1234\n"));
        assert!(counted.contains("# TYPE gpushare_heap_live_bytes gauge\n"));
        assert!(counted.contains("\nprocess_resident_memory_bytes 8192\n"));

        let mut uncounted = String::new();
        write_memory(&mut uncounted, None, Some(8_192)).expect("writes to a String");
        assert!(!uncounted.contains("gpushare_heap_live_bytes"));
        assert!(uncounted.starts_with("# HELP process_resident_memory_bytes"));
    }
}
