//! Harness for the loom tests: a world in zeroed, 64-byte aligned memory,
//! one loom thread per rank, kernel-like closures taking `&World`.
//!
//! Memory that ranks share outside the world (a test's scratch lines) is
//! allocated and race-tracked here on the model's main thread, before the
//! spawns; see `gpu_mpi_device::abi::shim::loom_runtime` for why.

use gpu_mpi_device::abi::layout::{block_small_word, immediate_shared_bytes, IMMEDIATE_SLOTS};
use gpu_mpi_device::abi::shim::loom_runtime::{self, LINE};
use gpu_mpi_device::abi::shim::LOOM_LAUNCH_SHARED_BYTES;
use gpu_mpi_device::abi::WorldConfig;
use gpu_mpi_device::World;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One 64-byte line (the unit of race tracking).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct Line(pub [u8; LINE]);

/// `N` bytes in whole, 64-byte aligned lines: a buffer that shares no tracked
/// line with any other buffer.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct Aligned<T>(pub T);

/// A small world config for model checking: `ranks` ranks in blocks of
/// `block_dim`, `slots` slots of 64 bytes, 64-byte collective rounds.
pub fn small_config(ranks: u32, block_dim: u32, slots: u32) -> WorldConfig {
    let mut c = WorldConfig::new(ranks, block_dim);
    c.slots_per_rank = slots;
    c.slot_bytes = 64;
    c.collective_bytes = 64;
    c.max_message_bytes = 4096;
    c
}

/// Model-checks `f` with loom under a preemption bound (`preemptions`, unless
/// the environment sets `LOOM_MAX_PREEMPTIONS`), printing the number of
/// interleavings explored and the time taken.
pub fn check<F>(name: &str, preemptions: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let iterations = Arc::new(AtomicUsize::new(0));
    let counted = iterations.clone();
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    let preemptions = builder.preemption_bound;
    // Poll loops yield, but a rank may still poll many times in one
    // interleaving; a real livelock still ends in loom's branch limit.
    builder.max_branches = 20_000;
    let start = Instant::now();
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        f()
    });
    eprintln!(
        "loom {name}: {} interleavings, preemption bound {preemptions:?}, {:.2?}",
        iterations.load(Ordering::Relaxed),
        start.elapsed()
    );
}

/// Lines of memory that every rank may read and write, besides the world
/// (what a kernel's global-memory arguments would be). Tracked for races.
#[derive(Clone, Copy)]
pub struct Scratch {
    base: usize,
    lines: usize,
}

impl Scratch {
    /// The address of line `i` (for memory a kernel hands to the library:
    /// a dynamic window's attachment).
    pub fn address(&self, i: usize) -> usize {
        assert!(i < self.lines);
        self.base + i * LINE
    }

    /// Writes `value` at the start of line `i` (a plain store, checked by loom).
    pub fn put(&self, i: usize, value: u64) {
        assert!(i < self.lines);
        let p = (self.base + i * LINE) as *mut u64;
        loom_runtime::write(p as *const u8, 8);
        // SAFETY: line `i` of the scratch allocation, alive until the ranks
        // are joined; loom checks the access above.
        unsafe { p.write_volatile(value) }
    }

    /// The start of line `i`, for a rank to pass lines as a buffer to a
    /// collective (copies into and out of them are race-checked).
    pub fn line(&self, i: usize) -> *mut u8 {
        assert!(i < self.lines);
        (self.base + i * LINE) as *mut u8
    }

    /// Reads the value at the start of line `i` (a plain load, checked by loom).
    pub fn get(&self, i: usize) -> u64 {
        assert!(i < self.lines);
        let p = (self.base + i * LINE) as *const u64;
        loom_runtime::read(p as *const u8, 8);
        // SAFETY: as in `put`.
        unsafe { p.read_volatile() }
    }
}

/// Runs `kernel` on every rank of a world with `config` (one loom thread per
/// rank, coordinates from the rank) and returns the ranks' results in rank
/// order. `scratch_lines` lines of shared scratch, zeroed, are passed to every rank.
pub fn run_world<R, K>(config: WorldConfig, scratch_lines: usize, kernel: K) -> Vec<R>
where
    R: Send + 'static,
    K: Fn(&World, Scratch) -> R + Send + Sync + 'static,
{
    let layout = config.layout().expect("valid config");
    let mut memory = vec![Line([0; LINE]); layout.total.div_ceil(LINE)];
    let bytes_len = memory.len() * LINE;
    // SAFETY: the lines are plain bytes, contiguous in the vector.
    let bytes = unsafe { std::slice::from_raw_parts_mut(memory.as_mut_ptr() as *mut u8, bytes_len) };
    config.write_header(bytes).expect("header");
    let base = bytes.as_mut_ptr();
    // Written by their rank and read by the host after the launch only:
    // not modelled.
    let records = layout.host_records();
    let host_only = [(records.start, records.len())];
    // SAFETY: 64-byte aligned, valid for `bytes_len` bytes, and kept alive
    // (`memory`) until every rank is joined and the model dropped below.
    let model =
        unsafe { loom_runtime::register_world(base, bytes_len, config.block_dim, layout.blocks, &host_only) };
    // The non-blocking collectives' small words: each rank writes its own,
    // beside its neighbours' (`Layout::immediate_word`).
    for slot in 0..IMMEDIATE_SLOTS {
        let words = layout.immediate_word(slot, 0);
        let end = layout.immediate_slot(slot + 1);
        // SAFETY: inside the world memory registered above.
        model.track_words(unsafe { base.add(words) }, end - words);
    }
    // And those a level-0 node inside a block keeps at the end of the
    // block's launch-sized shared memory (`layout::block_small_word`).
    let small_bytes = immediate_shared_bytes(config.block_dim) as usize;
    let small = block_small_word(LOOM_LAUNCH_SHARED_BYTES, config.block_dim, 0, 0)
        .expect("the loom launch memory holds the small words");
    assert!(
        config.shared_window_bytes as usize <= small,
        "the loom launch memory holds the shared window memory before the small words"
    );
    for block in 0..layout.blocks {
        // SAFETY: inside the block's launch-sized shared memory (asserted).
        model.track_words(unsafe { model.launch_shared(block).add(small) }, small_bytes);
    }
    let scratch_memory = vec![Line([0; LINE]); scratch_lines.max(1)];
    let scratch = Scratch {
        base: scratch_memory.as_ptr() as usize,
        lines: scratch_lines,
    };
    model.track(scratch_memory.as_ptr() as *const u8, scratch_lines * LINE);

    let kernel = Arc::new(kernel);
    let base = base as usize;
    let handles: Vec<_> = (0..config.ranks)
        .map(|rank| {
            let model = model.clone();
            let kernel = kernel.clone();
            loom::thread::spawn(move || {
                model.enter(rank % config.block_dim, rank / config.block_dim);
                // SAFETY: the world memory was initialised above and outlives
                // this thread (joined before it is freed).
                let world = unsafe { World::attach(base as *mut u8) }.expect("attach");
                // SAFETY: the model's block words start at zero and no rank
                // has used them; every rank makes this call (what a
                // kernel's entry does with its block barrier).
                unsafe { world.block_words_zeroed() };
                let result = kernel(&world, scratch);
                // The rank's thread ends: it no longer holds its block's barrier.
                model.exit();
                result
            })
        })
        .collect();
    let results = handles.into_iter().map(|h| h.join().unwrap()).collect();
    model.untrack(scratch_memory.as_ptr() as *const u8, scratch_lines * LINE);
    drop(model);
    drop(memory);
    drop(scratch_memory);
    results
}
