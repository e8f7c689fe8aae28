//! The trace exporters' memory in a large world: a 16,384-rank traced run
//! on the emulator, its trace at the default size for that world
//! (`WorldSpec::trace_default`), exported while a counting allocator
//! watches. Asserts the bound docs/tracing.md states, in bytes allocated,
//! never times (it prints the time and the sizes for the docs). Emulator
//! only: a world this large needs no GPU to trace, and the exporters are
//! the same code on both backends.

use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, World};
use gpu_mpi_host::{default_trace_events, Device, Trace, WorldSpec, TRACE_BUFFER_BOUND};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The system allocator, counting the bytes live and the most live since
/// [`Counting::reset_peak`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counters only
// observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let now = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

impl Counting {
    /// Starts a measurement: the peak is the bytes live now.
    fn reset_peak() -> usize {
        let now = LIVE.load(Ordering::Relaxed);
        PEAK.store(now, Ordering::Relaxed);
        now
    }

    /// The most bytes live since [`Counting::reset_peak`].
    fn peak() -> usize {
        PEAK.load(Ordering::Relaxed)
    }
}

/// A writer that keeps nothing and counts the bytes written.
#[derive(Default)]
struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const RANKS: u32 = 16_384;
const LAPS: u32 = 24;

gpu_mpi_device::kernel! {
    /// `LAPS` laps of a ring (each rank sends to its right neighbour and
    /// receives from its left one), then an all-reduce: more events than a
    /// default-sized buffer of a world this large holds.
    pub static RING = fn ring(world: &World, out: &GlobalSlice<u64>) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let right = world.process_at_rank((rank + 1) % size);
        let left = world.process_at_rank((rank + size - 1) % size);
        let mut token = rank as u64;
        for _ in 0..LAPS {
            right.send(&token)?;
            token = left.receive::<u64>()?.0;
        }
        let mut sum = 0u64;
        world.all_reduce_into(&token, &mut sum, SystemOperation::sum())?;
        if rank == 0 {
            out.write(0, sum)?;
        }
        Ok(())
    }
}

/// The bound the exporters' own allocations keep (docs/tracing.md,
/// "Cost"): 16 bytes per *sent* event (the keys of the sends and a mark
/// each, of which the linked messages' keys stay), 1 KiB per event of one
/// rank's buffer (its events rendered, their order, its spans and open
/// requests), and 1 MiB.
fn export_bound(t: &Trace) -> usize {
    let sent: usize = t
        .ranks
        .iter()
        .flat_map(|r| r.events.iter())
        .filter(|e| e.kind() == Some(gpu_mpi_device::abi::trace::TraceKind::Sent))
        .count();
    16 * sent + 1024 * t.events_per_rank as usize + (1 << 20)
}

#[test]
fn a_16384_rank_trace_exports_within_its_memory_bound() {
    let d = Device::cpu();
    let out = d.alloc_zeroed::<u64>(1).unwrap();
    let spec = WorldSpec::ranks(RANKS).trace_default();
    let report = d.launch(&RING, &out.slice(), &spec).unwrap();
    let n = RANKS as u64;
    assert_eq!(d.download(&out).unwrap()[0], n * (n - 1) / 2);
    let t = report.trace().expect("a traced launch");
    assert_eq!(t.events_per_rank, default_trace_events(RANKS));
    assert_eq!(t.events_per_rank, 127);
    // The buffers hold their first 127 events each; the rest were dropped.
    assert!(t.ranks.iter().all(|r| r.events.len() == 127 && r.dropped > 0));
    let buffers = RANKS as u64 * (32 + 32 * t.events_per_rank as u64);
    assert!(buffers <= TRACE_BUFFER_BOUND, "{buffers} bytes of trace buffers");

    let base = Counting::reset_peak();
    let started = Instant::now();
    let mut sink = CountingSink::default();
    t.write_chrome_json(&mut sink).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let json_peak = Counting::peak() - base;
    let bound = export_bound(t);

    let base = Counting::reset_peak();
    let html = t.to_html("ring", None);
    let html_peak = Counting::peak() - base;

    let events = t.recorded();
    println!(
        "{RANKS} ranks, {} events per rank, {events} events ({} MiB decoded): JSON {} MiB \
         ({:.0} B per event) in {seconds:.2} s ({:.2} µs per event); exporter peak {:.2} MiB \
         (bound {:.2} MiB); HTML page {} KiB, peak {:.2} MiB",
        t.events_per_rank,
        (events * 32) >> 20,
        sink.0 >> 20,
        sink.0 as f64 / events as f64,
        seconds * 1e6 / events as f64,
        json_peak as f64 / (1 << 20) as f64,
        bound as f64 / (1 << 20) as f64,
        html.len() >> 10,
        html_peak as f64 / (1 << 20) as f64,
    );
    assert!(
        json_peak <= bound,
        "the JSON export allocated {json_peak} bytes at its peak, bound {bound}"
    );
    // Far below the document it wrote: it never holds the whole of it.
    assert!(
        (json_peak as u64) < sink.0 / 8,
        "{json_peak} bytes live for {} written",
        sink.0
    );
    // The page of a world this large is its per-block table (64 blocks)
    // and a summary, which counts the linked messages.
    assert!(
        html_peak <= bound,
        "the HTML page allocated {html_peak} bytes at its peak, bound {bound}"
    );
}
