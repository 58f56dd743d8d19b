//! The cost model's target (issue 26): SVG sources, image-watermark parameters with a tall,
//! narrow mark, and text watermarks (`image_pipeline::fuzzing::check_hostile`). Besides its
//! time bound, each input's peak heap allocation is held to MAX_PEAK_BYTES, counted by the
//! allocator below.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most one input may hold at once: the 512 MiB per request.
const MAX_PEAK_BYTES: usize = 512 << 20;

/// A 96x64 cut of lake.jpg with an EXIF orientation of 6 (written by `examples/fuzz_seeds.rs`).
static SOURCE: &[u8] = include_bytes!("../seeds/query_source.jpg");

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes live and their peak.
struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    image_pipeline::fuzzing::check_hostile(data, SOURCE);
    let grown = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    assert!(grown <= MAX_PEAK_BYTES, "peak allocation {grown} bytes");
});
