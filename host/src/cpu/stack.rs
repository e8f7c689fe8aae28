//! Coroutine stacks for every rank, carved out of one mapping.
//!
//! One mmap per stack (corosensei's default) costs a kernel memory mapping per
//! stack, two with its guard page, and Linux allows about 65 530 mappings per
//! process (`vm.max_map_count`): a 65 536-rank world cannot get one each. So a
//! launch maps all its stacks at once, `slot = red zone page + stack_bytes`
//! per rank, lazily backed (`MAP_NORESERVE`; only touched pages cost memory,
//! and transparent huge pages are turned off for the mapping so a touched
//! stack page stays 4 KiB).
//!
//! The page below each stack is its red zone, used in one of two ways:
//! - **guard page** (worlds of at most `CpuOptions::guard_page_limit` ranks):
//!   `mprotect(PROT_NONE)`. An overflow faults at once and can corrupt
//!   nothing; the process dies with SIGSEGV (and the message of
//!   [`install_overflow_reporter`]). Each guard splits the mapping, so this
//!   costs two mappings per rank.
//! - **canary** (larger worlds): the red zone stays readable and writable and
//!   must stay all zero. Nothing touches it normally, so it costs no memory:
//!   reading an untouched page maps the kernel's shared zero page. Its top
//!   [`CANARY_BYTES`] (where an overflow writes first) are checked whenever
//!   the rank suspends after doing something and when it returns, and the
//!   whole page when it returns and when the run ends; a non-zero byte stops
//!   the launch with `HostError::StackOverflow`. This is detection, not
//!   protection: an overflow that jumps the red zone (a frame larger than a
//!   page that writes only its far end), or writes only zeros there, lands in
//!   the neighbouring rank's stack unseen or before it is seen. After an
//!   overflow the scheduler therefore does not unwind any coroutine (it leaks
//!   them, which is safe) and reports the overflow.

use crate::error::{AllocError, HostError};
use corosensei::stack::{Stack, StackPointer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// Bytes at the top of each red zone checked at every suspension that
/// followed progress.
pub const CANARY_BYTES: usize = 128;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// All ranks' stacks of one launch.
pub struct StackPool {
    base: *mut u8,
    len: usize,
    slot: usize,
    page: usize,
    count: usize,
    /// Stacks `0..guarded` have a PROT_NONE guard page; the rest a canary.
    guarded: usize,
    /// Index in the overflow reporter's registry while registered.
    registry_index: Option<usize>,
}

// SAFETY: the pool only hands out disjoint address ranges; the mapping lives
// until the pool drops, after every coroutine on it is gone.
unsafe impl Send for StackPool {}
// SAFETY: as above; shared access only reads the immutable geometry.
unsafe impl Sync for StackPool {}

impl StackPool {
    /// Maps `count` stacks of at least `stack_bytes` usable bytes each; with
    /// `guard_pages`, protects each stack's red zone page (falling back to
    /// canaries for the remaining stacks if the kernel refuses).
    pub fn new(count: usize, stack_bytes: usize, guard_pages: bool) -> Result<StackPool, HostError> {
        let page = page_size();
        let too_large = || AllocError::StacksTooLarge {
            count,
            bytes: stack_bytes,
        };
        // Checked: a size near `usize::MAX` rounds up past it.
        let usable = stack_bytes
            .max(corosensei::stack::MIN_STACK_SIZE)
            .div_ceil(page)
            .checked_mul(page)
            .ok_or_else(too_large)?;
        let slot = usable.checked_add(page).ok_or_else(too_large)?;
        let len = slot.checked_mul(count.max(1)).ok_or_else(too_large)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's
        // choosing touches no existing memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(AllocError::Stacks {
                count,
                bytes: usable,
                total: len,
                source: std::io::Error::last_os_error(),
            }
            .into());
        }
        let base = base as *mut u8;
        // SAFETY: advice on our own mapping; failure only costs memory.
        unsafe { libc::madvise(base.cast(), len, libc::MADV_NOHUGEPAGE) };
        let mut pool = StackPool {
            base,
            len,
            slot,
            page,
            count,
            guarded: 0,
            registry_index: None,
        };
        if guard_pages {
            while pool.guarded < count {
                // SAFETY: the red zone page of stack `guarded`, inside our mapping.
                let rc = unsafe { libc::mprotect(pool.red_zone(pool.guarded).cast(), page, libc::PROT_NONE) };
                if rc != 0 {
                    break;
                }
                pool.guarded += 1;
            }
            if pool.guarded > 0 {
                pool.registry_index = register(base as usize, len, slot, page, pool.guarded);
            }
        }
        // Unguarded red zones stay as mapped: all zero, and not yet backed.
        Ok(pool)
    }

    /// Usable bytes of each stack.
    pub fn stack_bytes(&self) -> usize {
        self.slot - self.page
    }

    /// Stacks protected by a guard page.
    pub fn guarded(&self) -> usize {
        self.guarded
    }

    fn red_zone(&self, i: usize) -> *mut u8 {
        assert!(i < self.count);
        // SAFETY: `i < count`, so the offset is inside the mapping.
        unsafe { self.base.add(i * self.slot) }
    }

    /// Whether the first `words` u64 below stack `i`'s usable part are zero.
    fn zero_below(&self, i: usize, words: usize) -> bool {
        // SAFETY: the top `8 * words <= page` bytes of stack i's red zone page,
        // inside our mapping, 8-byte aligned (page-aligned slots).
        let top = unsafe { self.red_zone(i).add(self.page) as *const u64 };
        // SAFETY: readable (unguarded) red zone words; volatile because an
        // overflowing coroutine wrote them behind the compiler's back.
        (1..=words).all(|w| unsafe { top.sub(w).read_volatile() } == 0)
    }

    /// Whether stack `i` looks intact: always for a guarded stack (an
    /// overflow would have faulted), else when the top [`CANARY_BYTES`] of
    /// its red zone are still zero.
    pub fn intact(&self, i: usize) -> bool {
        i < self.guarded || self.zero_below(i, CANARY_BYTES / 8)
    }

    /// Like [`StackPool::intact`], checking the whole red zone page.
    pub fn intact_full(&self, i: usize) -> bool {
        i < self.guarded || self.zero_below(i, self.page / 8)
    }

    /// The stack of rank-slot `i`, for one coroutine.
    ///
    /// # Safety
    /// At most one live coroutine may use stack `i` at a time, and every
    /// coroutine using this pool must be gone (finished, dropped or forgotten)
    /// before the pool drops.
    pub unsafe fn stack(&self, i: usize) -> PoolStack {
        let red_zone = self.red_zone(i) as usize;
        PoolStack {
            limit: red_zone,
            base: red_zone + self.slot,
        }
    }
}

impl Drop for StackPool {
    fn drop(&mut self) {
        if let Some(i) = self.registry_index.take() {
            unregister(i);
        }
        // SAFETY: our mapping; by `stack`'s contract no coroutine uses it now.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One rank's stack: an address range of a [`StackPool`].
pub struct PoolStack {
    limit: usize,
    base: usize,
}

// SAFETY: `base` and `limit` are page-aligned (so STACK_ALIGNMENT-aligned),
// the range between them is mapped for as long as the coroutine lives
// (`StackPool::stack`'s contract) and holds at least MIN_STACK_SIZE usable
// bytes above the red zone page. The trait asks for a guard page: stacks past
// `guard_page_limit` have a canary instead, so for them an overflow is
// detected after the fact rather than prevented (see the module docs).
unsafe impl Stack for PoolStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.base).expect("stack base is not null")
    }

    fn limit(&self) -> StackPointer {
        StackPointer::new(self.limit).expect("stack limit is not null")
    }
}

// ---------------------------------------------------------------------------
// Overflow reporter: turns a fault in a guard page into a message.

#[derive(Clone, Copy)]
struct Region {
    base: usize,
    len: usize,
    slot: usize,
    page: usize,
    guarded: usize,
}

const REGISTRY_SLOTS: usize = 64;
// Written under REGISTRY_LOCK, read (lock-free) by the signal handler.
static REGISTRY: [[AtomicUsize; 5]; REGISTRY_SLOTS] =
    [const { [const { AtomicUsize::new(0) }; 5] }; REGISTRY_SLOTS];
static REGISTRY_LOCK: Mutex<()> = Mutex::new(());

fn register(base: usize, len: usize, slot: usize, page: usize, guarded: usize) -> Option<usize> {
    let _g = REGISTRY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let i = REGISTRY.iter().position(|r| r[1].load(Ordering::Relaxed) == 0)?;
    let r = &REGISTRY[i];
    r[0].store(base, Ordering::Relaxed);
    r[2].store(slot, Ordering::Relaxed);
    r[3].store(page, Ordering::Relaxed);
    r[4].store(guarded, Ordering::Relaxed);
    // Release: the handler reads the other words after seeing a length.
    r[1].store(len, Ordering::Release);
    Some(i)
}

fn unregister(i: usize) {
    let _g = REGISTRY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    REGISTRY[i][1].store(0, Ordering::Release);
}

fn find_region(addr: usize) -> Option<Region> {
    REGISTRY.iter().find_map(|r| {
        let len = r[1].load(Ordering::Acquire);
        let base = r[0].load(Ordering::Relaxed);
        (len != 0 && addr >= base && addr < base + len).then(|| Region {
            base,
            len,
            slot: r[2].load(Ordering::Relaxed),
            page: r[3].load(Ordering::Relaxed),
            guarded: r[4].load(Ordering::Relaxed),
        })
    })
}

/// The SIGSEGV handler that was installed before ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();

fn write_stderr(bytes: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; the buffer is valid.
    unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
}

fn format_usize(mut n: usize, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(r) = find_region(addr) {
        let i = (addr - r.base) / r.slot;
        if i < r.guarded && addr - r.base - i * r.slot < r.page && addr < r.base + r.len {
            let mut buf = [0u8; 24];
            write_stderr(b"gpu-mpi: rank ");
            write_stderr(format_usize(i, &mut buf));
            write_stderr(b" overflowed its coroutine stack of ");
            write_stderr(format_usize(r.slot - r.page, &mut buf));
            write_stderr(
                b" bytes; raise CpuOptions::stack_bytes or GPU_MPI_STACK_BYTES, or move large arrays \
                  to the rank's scratch (WorldSpec::scratch_bytes, World::scratch)\n",
            );
        }
    }
    // Hand over to the handler that was there before (Rust's own stack
    // overflow handler, or the default action), which ends the process.
    // Set before this handler was installed.
    let Some(prev) = PREVIOUS.get() else { return };
    if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
        // SAFETY: restoring the default action and returning re-executes the
        // faulting access, which now kills the process with SIGSEGV.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed for this signal with SA_SIGINFO.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(prev.sa_sigaction) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the previous handler was installed as a plain handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev.sa_sigaction) };
        f(sig);
    }
}

/// Bytes of the alternate signal stack a worker sets up when its thread has
/// none ([`AltStack`]).
const ALT_STACK_BYTES: usize = 64 * 1024;

/// An alternate signal stack for this thread while it lives, where the
/// thread had none: Rust gives every thread it spawns one only when its own
/// SIGSEGV handler is installed, which it skips when a library loaded
/// before `main` installed one first (MPICH's UCX does, with the
/// `distributed` feature). Without one, the overflow reporter would run on
/// the overflowed stack and fault again, silently.
pub struct AltStack(Option<*mut libc::c_void>);

impl AltStack {
    /// Installs one unless the thread has one.
    pub fn ensure() -> AltStack {
        // SAFETY: reads this thread's alternate stack into a zeroed struct.
        let mut old: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaltstack(std::ptr::null(), &mut old) } != 0
            || old.ss_flags & libc::SS_DISABLE == 0
        {
            return AltStack(None);
        }
        // SAFETY: a fresh private anonymous mapping, checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ALT_STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return AltStack(None);
        }
        let st = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: ALT_STACK_BYTES,
        };
        // SAFETY: `st` describes the mapping above, which lives until drop.
        if unsafe { libc::sigaltstack(&st, std::ptr::null_mut()) } != 0 {
            // SAFETY: the mapping above, unused.
            unsafe { libc::munmap(p, ALT_STACK_BYTES) };
            return AltStack(None);
        }
        AltStack(Some(p))
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let off = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            // SAFETY: disables this thread's alternate stack (ours), then
            // unmaps it; no signal handler runs on it any more.
            unsafe {
                libc::sigaltstack(&off, std::ptr::null_mut());
                libc::munmap(p, ALT_STACK_BYTES);
            }
        }
    }
}

/// Installs (once per process) a SIGSEGV handler that prints which stack a
/// fault in a guard page of a [`StackPool`] overflowed, then hands the signal
/// to the previous handler. It runs on the alternate signal stack of the
/// emulator's workers (Rust's, or an [`AltStack`]).
pub fn install_overflow_reporter() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a zeroed struct reads the current handler;
        // then we install ours with SA_ONSTACK (the faulting stack is unusable)
        // and SA_SIGINFO; the previous one is stored before ours can run.
        unsafe {
            let mut prev: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut prev) != 0 {
                return;
            }
            if PREVIOUS.set(prev).is_err() {
                return;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_segv as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGSEGV, &act, std::ptr::null_mut());
        }
    });
}
