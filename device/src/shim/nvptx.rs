//! nvptx64 implementation of the shim: inline PTX.
//!
//! Why inline PTX rather than `core::sync::atomic`:
//! - LLVM 22 drops the memory ordering of atomic read-modify-write operations
//!   on NVPTX: `fetch_add(AcqRel)` comes out as a relaxed `atom.global.add`,
//!   which would silently break every release/acquire pairing built on RMWs.
//! - Rust atomics always use system (`.sys`) scope. The world lives in one
//!   GPU's global memory and nothing outside the kernel races with it, so the
//!   cheaper device (`.gpu`) scope is the right one, and the PTX checks
//!   (`scripts/ptx-check.sh`) reject any `.sys` synchronizing operation.
//!
//! So every synchronizing operation is one PTX instruction written here with
//! its semantics and scope spelled out (`ld.acquire.gpu`, `st.release.gpu`,
//! `atom.acq_rel.gpu.add`, `fence.acq_rel.gpu`, ...). All of them need sm_70
//! and PTX ISA 6.0 or later (`nanosleep` needs 6.3); the builder emits PTX 7.0
//! or later.
//!
//! Every `asm!` that touches memory keeps the default memory clobber (no
//! `nomem`/`readonly`), so the compiler cannot move ordinary loads and stores
//! across it; the PTX semantics then order them for the hardware.
//!
//! Pairing, for all operations below: an `Acquire` (or `AcqRel`) operation
//! that reads the value written by a `Release` (or `AcqRel`) operation of
//! another rank on the same word synchronizes with it; what that rank wrote
//! before its release is visible to this rank after its acquire. Which words
//! pair with which is the protocol's business and is documented at the call
//! sites (polling.rs, point_to_point.rs, the collectives).

use super::{Coordinates, Ordering};
use core::arch::asm;
use core::cell::UnsafeCell;

/// Dispatches one `asm!` read-modify-write on a `shim::Ordering`, choosing the
/// PTX semantics qualifier (`.relaxed`, `.acquire`, `.release`, `.acq_rel`)
/// with scope `$scope` (`"gpu"`; `"cta"` for a word only the ranks of one
/// block touch, whose orderings then pair within the block alone and cost
/// a block-scope fence). `$op` and `$ty` complete the opcode
/// (`atom.<sem>.<scope>.<op>.<ty>`); `$operands` is the operand list shared
/// by every arm.
macro_rules! atom_sem_scoped {
    ($o:expr, $scope:literal, $op:literal, $ty:literal, $args:literal, $($operands:tt)*) => {
        match $o {
            // Relaxed: atomicity only, no ordering.
            Ordering::Relaxed => asm!(
                concat!("atom.relaxed.", $scope, ".", $op, ".", $ty, " ", $args, ";"),
                $($operands)*
            ),
            // Acquire: pairs with a Release/AcqRel store or RMW of another rank
            // (of the scope) on this word; later accesses of this rank stay
            // after it.
            Ordering::Acquire => asm!(
                concat!("atom.acquire.", $scope, ".", $op, ".", $ty, " ", $args, ";"),
                $($operands)*
            ),
            // Release: pairs with an Acquire/AcqRel load or RMW of another rank
            // (of the scope) on this word; earlier accesses of this rank stay
            // before it.
            Ordering::Release => asm!(
                concat!("atom.release.", $scope, ".", $op, ".", $ty, " ", $args, ";"),
                $($operands)*
            ),
            // AcqRel: both of the above (e.g. a ticket counter that both
            // publishes this rank's writes and observes the previous holders').
            Ordering::AcqRel => asm!(
                concat!("atom.acq_rel.", $scope, ".", $op, ".", $ty, " ", $args, ";"),
                $($operands)*
            ),
        }
    };
}

/// [`atom_sem_scoped!`] with the device (`.gpu`) scope, that of every
/// read-modify-write but `fetch_add_block`.
macro_rules! atom_sem {
    ($o:expr, $($rest:tt)*) => {
        atom_sem_scoped!($o, "gpu", $($rest)*)
    };
}

/// A `red` (an atomic read-modify-write whose old value the thread does
/// not wait for) with `o`'s semantics; `red` has no acquire form, so
/// `Acquire` and `AcqRel` evaluate `$reading` (the returning form).
macro_rules! red_sem {
    ($o:expr, $op:literal, $ty:literal, $p:expr, $v:expr, $reg:ident, $reading:expr) => {
        match $o {
            // Relaxed: atomicity only, no ordering.
            Ordering::Relaxed => asm!(
                concat!("red.relaxed.gpu.", $op, ".", $ty, " [{p}], {v};"),
                p = in(reg64) $p,
                v = in($reg) $v,
                options(nostack),
            ),
            // Release: as a release store's (pairs with the Acquire load
            // or RMW of another rank that reads the result).
            Ordering::Release => asm!(
                concat!("red.release.gpu.", $op, ".", $ty, " [{p}], {v};"),
                p = in(reg64) $p,
                v = in($reg) $v,
                options(nostack),
            ),
            Ordering::Acquire | Ordering::AcqRel => {
                $reading;
            }
        }
    };
}

macro_rules! nvptx_atomic {
    ($name:ident, $int:ty, $reg:ident, $u:literal, $b:literal) => {
        /// An atomic integer in world memory.
        #[repr(transparent)]
        pub struct $name(UnsafeCell<$int>);

        // SAFETY: every access goes through the atomic PTX instructions below.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `v`.
            pub const fn new(v: $int) -> Self {
                Self(UnsafeCell::new(v))
            }

            /// Atomic load.
            pub fn load(&self, o: Ordering) -> $int {
                let p = self.0.get();
                let v: $int;
                match o {
                    // Acquire: pairs with the Release store/RMW of another rank
                    // that published what this rank reads after the load.
                    Ordering::Acquire | Ordering::AcqRel => {
                        // SAFETY: `p` points to a live, aligned atomic word
                        // (`&self`); the instruction only reads it.
                        unsafe {
                            asm!(
                                concat!("ld.acquire.gpu.", $u, " {v}, [{p}];"),
                                v = out($reg) v,
                                p = in(reg64) p,
                                options(nostack),
                            )
                        }
                    }
                    // A load has no release half: Release degrades to Relaxed,
                    // as on the host.
                    Ordering::Relaxed | Ordering::Release => {
                        // SAFETY: as above.
                        unsafe {
                            asm!(
                                concat!("ld.relaxed.gpu.", $u, " {v}, [{p}];"),
                                v = out($reg) v,
                                p = in(reg64) p,
                                options(nostack),
                            )
                        }
                    }
                }
                v
            }

            /// Atomic store.
            pub fn store(&self, v: $int, o: Ordering) {
                let p = self.0.get();
                match o {
                    // Release: pairs with the Acquire load/RMW of another rank
                    // that reads this value; this rank's earlier writes are
                    // visible to it.
                    Ordering::Release | Ordering::AcqRel => {
                        // SAFETY: `p` points to a live, aligned atomic word
                        // (`&self`) that is only accessed atomically.
                        unsafe {
                            asm!(
                                concat!("st.release.gpu.", $u, " [{p}], {v};"),
                                p = in(reg64) p,
                                v = in($reg) v,
                                options(nostack),
                            )
                        }
                    }
                    // A store has no acquire half: Acquire degrades to Relaxed,
                    // as on the host.
                    Ordering::Relaxed | Ordering::Acquire => {
                        // SAFETY: as above.
                        unsafe {
                            asm!(
                                concat!("st.relaxed.gpu.", $u, " [{p}], {v};"),
                                p = in(reg64) p,
                                v = in($reg) v,
                                options(nostack),
                            )
                        }
                    }
                }
            }

            /// Atomic add, returning the previous value (wrapping).
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                let p = self.0.get();
                let old: $int;
                // SAFETY: `p` points to a live, aligned atomic word (`&self`)
                // that is only accessed atomically. Orderings: see `atom_sem!`.
                unsafe {
                    atom_sem!(o, "add", $u, "{old}, [{p}], {v}",
                        old = out($reg) old, p = in(reg64) p, v = in($reg) v, options(nostack))
                }
                old
            }

            /// Atomic add, returning the previous value (wrapping), with
            /// block scope: the word must be one that only the calling
            /// block's ranks access (a [`block_words`](super::block_words)
            /// word), and `o` pairs with their operations alone.
            pub fn fetch_add_block(&self, v: $int, o: Ordering) -> $int {
                let p = self.0.get();
                let old: $int;
                // SAFETY: `p` points to a live, aligned atomic word (`&self`)
                // that is only accessed atomically. Orderings: see
                // `atom_sem_scoped!`.
                unsafe {
                    atom_sem_scoped!(o, "cta", "add", $u, "{old}, [{p}], {v}",
                        old = out($reg) old, p = in(reg64) p, v = in($reg) v, options(nostack))
                }
                old
            }

            /// Atomic add whose previous value is not wanted: `red`, which
            /// the thread issues and does not wait for (`Relaxed`,
            /// `Release`); `red` has no acquire form, so `Acquire` and
            /// `AcqRel` are a [`fetch_add`](Self::fetch_add).
            pub fn add(&self, v: $int, o: Ordering) {
                let p = self.0.get();
                // SAFETY: `p` points to a live, aligned atomic word
                // (`&self`) that is only accessed atomically. Orderings:
                // see `red_sem!`.
                unsafe { red_sem!(o, "add", $u, p, v, $reg, self.fetch_add(v, o)) }
            }

            /// Atomic bitwise or whose previous value is not wanted: `red`
            /// as in [`add`](Self::add); `Acquire` and `AcqRel` are a
            /// [`fetch_or`](Self::fetch_or).
            pub fn or(&self, v: $int, o: Ordering) {
                let p = self.0.get();
                // SAFETY: as in `add`.
                unsafe { red_sem!(o, "or", $b, p, v, $reg, self.fetch_or(v, o)) }
            }

            /// Atomic bitwise or, returning the previous value.
            pub fn fetch_or(&self, v: $int, o: Ordering) -> $int {
                let p = self.0.get();
                let old: $int;
                // SAFETY: as in `fetch_add`.
                unsafe {
                    atom_sem!(o, "or", $b, "{old}, [{p}], {v}",
                        old = out($reg) old, p = in(reg64) p, v = in($reg) v, options(nostack))
                }
                old
            }

            /// Atomic exchange, returning the previous value.
            pub fn swap(&self, v: $int, o: Ordering) -> $int {
                let p = self.0.get();
                let old: $int;
                // SAFETY: as in `fetch_add`.
                unsafe {
                    atom_sem!(o, "exch", $b, "{old}, [{p}], {v}",
                        old = out($reg) old, p = in(reg64) p, v = in($reg) v, options(nostack))
                }
                old
            }

            /// Atomic compare-and-swap: `Ok(previous)` when it stored `new`.
            ///
            /// PTX has one semantics qualifier per `atom.cas`; a failed CAS
            /// still reads with the acquire half of `o`, as the host's
            /// failure ordering does.
            pub fn compare_exchange(&self, current: $int, new: $int, o: Ordering) -> Result<$int, $int> {
                let p = self.0.get();
                let old: $int;
                // SAFETY: as in `fetch_add`.
                unsafe {
                    atom_sem!(o, "cas", $b, "{old}, [{p}], {c}, {n}",
                        old = out($reg) old, p = in(reg64) p, c = in($reg) current,
                        n = in($reg) new, options(nostack))
                }
                if old == current {
                    Ok(old)
                } else {
                    Err(old)
                }
            }
        }
    };
}

nvptx_atomic!(AtomicU32, u32, reg32, "u32", "b32");
nvptx_atomic!(AtomicU64, u64, reg64, "u64", "b64");

/// A memory fence of the given ordering.
pub fn fence(o: Ordering) {
    match o {
        Ordering::Relaxed => {}
        // PTX fences come as `.sc` or `.acq_rel`; acq_rel covers Acquire,
        // Release and AcqRel. Pairs like a C++ fence: a release fence before a
        // relaxed store pairs with an acquire fence after a relaxed load (of
        // another rank) that reads that store.
        Ordering::Acquire | Ordering::Release | Ordering::AcqRel => {
            // SAFETY: a fence touches no memory operand; it only orders this
            // thread's accesses.
            unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
        }
    }
}

/// Reads one special register (`%tid.x`, `%ctaid.x`, ...): `pure`, so the
/// compiler may merge reads and hold one; with the options `nomem,
/// nostack` instead, afresh at each use: the compiler neither merges two
/// reads nor keeps one in a register across the kernel. With `pure` reads
/// of the launch's dimensions, ptxas (sm_90) gave the collectives' kernels
/// up to 10 more registers (docs/performance.md, "... the launch's
/// geometry from the special registers").
macro_rules! special_u32 {
    ($reg:literal) => {
        special_u32!($reg, pure, nomem, nostack)
    };
    ($reg:literal, $($option:ident),+) => {{
        let v: u32;
        // SAFETY: reading a special register has no side effects and touches
        // no memory.
        unsafe {
            asm!(
                concat!("mov.u32 {v}, ", $reg, ";"),
                v = out(reg32) v,
                options($($option),+),
            )
        };
        v
    }};
}

/// Coordinates of the calling rank.
pub fn coordinates() -> Coordinates {
    Coordinates {
        thread: special_u32!("%tid.x"),
        block: special_u32!("%ctaid.x"),
        block_dim: special_u32!("%ntid.x"),
        grid_dim: special_u32!("%nctaid.x"),
    }
}

/// Threads per block of the launch (`blockDim.x`), read at each use.
pub fn block_dim() -> u32 {
    special_u32!("%ntid.x", nomem, nostack)
}

/// Blocks of the launch (`gridDim.x`), read at each use.
pub fn grid_dim() -> u32 {
    special_u32!("%nctaid.x", nomem, nostack)
}

/// Lane of the calling rank in its warp of 32.
pub fn lane_id() -> u32 {
    special_u32!("%laneid")
}

/// Waits until every rank of the calling block has arrived (`__syncthreads`).
///
/// `barrier.sync` rather than `bar.sync` (= `barrier.sync.aligned`): the
/// non-aligned form is correct even when the threads of a warp reach the
/// barrier from different places in the code, which MPI-style rank code with
/// rank-dependent branches can do. The barrier also orders memory among the
/// block's threads (what each wrote before it is visible to all after it).
pub fn block_barrier() {
    // SAFETY: all threads of the block execute this barrier (the library
    // calls it from block-uniform collective code); it touches no memory
    // operand. The default memory clobber keeps accesses on their side.
    unsafe { asm!("barrier.sync 0;", options(nostack)) }
}

/// The block barrier that also counts: waits like [`block_barrier`] and
/// returns how many ranks of the block arrived with `predicate` true
/// (`barrier.red.popc.u32`, barrier 0, the same barrier resource as
/// [`block_barrier`]). A thread that exited does not hold a barrier (PTX
/// `exit`: the barrier is released when the exited threads are the only
/// ones missing) and is not counted.
pub fn block_barrier_count(predicate: bool) -> u32 {
    let count: u32;
    // SAFETY: as in `block_barrier`; the reduction reads only the predicate
    // register of each arriving thread. The default memory clobber keeps
    // accesses on their side, as for `block_barrier`.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; barrier.red.popc.u32 {c}, 0, p; }}",
            c = out(reg32) count,
            v = in(reg32) u32::from(predicate),
            options(nostack)
        )
    }
    count
}

// The array below is declared with this size.
const _: () = assert!(super::SHARED_BLOCK_BYTES == 4096);

/// One `shfl.sync` of mode `$mode` (`idx`, `up`, `down`, `bfly`) with clamp
/// value `$c` (`0x1f` for idx/down/bfly, `0` for up: the whole warp is one
/// segment).
macro_rules! shfl {
    ($mode:literal, $c:literal, $mask:expr, $value:expr, $b:expr) => {{
        let r: u32;
        // SAFETY: a shuffle reads registers of the lanes of `mask` only; it
        // touches no memory (but keeps the memory clobber: it is a
        // convergence point the compiler must not move accesses across).
        // Every lane of `mask` executes it (the caller's contract, as for
        // `__shfl_sync`); otherwise the result, not memory, is undefined.
        unsafe {
            asm!(
                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {b}, ", $c, ", {m};"),
                r = out(reg32) r,
                v = in(reg32) $value,
                b = in(reg32) $b,
                m = in(reg32) $mask,
                options(nostack),
            )
        };
        r
    }};
}

/// `shfl.sync.idx.b32` (see [`super::shfl_sync`]).
pub(super) fn shfl_sync(mask: u32, value: u32, src_lane: u32) -> u32 {
    shfl!("idx", "0x1f", mask, value, src_lane)
}

/// `shfl.sync.up.b32` (see [`super::shfl_up_sync`]).
pub(super) fn shfl_up_sync(mask: u32, value: u32, delta: u32) -> u32 {
    shfl!("up", "0", mask, value, delta)
}

/// `shfl.sync.down.b32` (see [`super::shfl_down_sync`]).
pub(super) fn shfl_down_sync(mask: u32, value: u32, delta: u32) -> u32 {
    shfl!("down", "0x1f", mask, value, delta)
}

/// `shfl.sync.bfly.b32` (see [`super::shfl_xor_sync`]).
pub(super) fn shfl_xor_sync(mask: u32, value: u32, lane_mask: u32) -> u32 {
    shfl!("bfly", "0x1f", mask, value, lane_mask)
}

/// One `vote.sync` of mode `$mode` (`all`, `any`) giving a predicate as 0/1.
macro_rules! vote_pred {
    ($mode:literal, $mask:expr, $pred:expr) => {{
        let r: u32;
        // SAFETY: a vote reads the predicates of the lanes of `mask`; it
        // touches no memory (memory clobber kept: a convergence point). The
        // predicate registers are local to the braces.
        unsafe {
            asm!(
                concat!(
                    "{{ .reg .pred %gpu_mpi_vp, %gpu_mpi_vq; setp.ne.u32 %gpu_mpi_vp, {p}, 0; vote.sync.",
                    $mode,
                    ".pred %gpu_mpi_vq, %gpu_mpi_vp, {m}; selp.u32 {r}, 1, 0, %gpu_mpi_vq; }}"
                ),
                r = out(reg32) r,
                p = in(reg32) u32::from($pred),
                m = in(reg32) $mask,
                options(nostack),
            )
        };
        r != 0
    }};
}

/// `vote.sync.all.pred` (see [`super::vote_all_sync`]).
pub(super) fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    vote_pred!("all", mask, predicate)
}

/// `vote.sync.any.pred` (see [`super::vote_any_sync`]).
pub(super) fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    vote_pred!("any", mask, predicate)
}

/// `vote.sync.ballot.b32` (see [`super::vote_ballot_sync`]).
pub(super) fn vote_ballot_sync(mask: u32, predicate: bool) -> u32 {
    let r: u32;
    // SAFETY: as in `vote_pred!`.
    unsafe {
        asm!(
            "{{ .reg .pred %gpu_mpi_vp; setp.ne.u32 %gpu_mpi_vp, {p}, 0; vote.sync.ballot.b32 {r}, %gpu_mpi_vp, {m}; }}",
            r = out(reg32) r,
            p = in(reg32) u32::from(predicate),
            m = in(reg32) mask,
            options(nostack),
        )
    };
    r
}

/// `match.any.sync.b32` (see [`super::match_any_sync`]; sm_70+).
pub(super) fn match_any_sync(mask: u32, value: u32) -> u32 {
    let r: u32;
    // SAFETY: as in `vote_pred!`: registers of the lanes of `mask` only.
    unsafe {
        asm!(
            "match.any.sync.b32 {r}, {v}, {m};",
            r = out(reg32) r,
            v = in(reg32) value,
            m = in(reg32) mask,
            options(nostack),
        )
    };
    r
}

/// `match.all.sync` of `$value` (PTX type `$ty`, register class `$class`)
/// among the lanes of `$mask`: its predicate, whether every lane passed the
/// same value (the lanes' mask of equal values is not needed).
macro_rules! match_all_pred {
    ($ty:literal, $class:ident, $mask:expr, $value:expr) => {{
        let r: u32;
        // SAFETY: as in `vote_pred!`: registers of the lanes of `mask`
        // only. The predicate and mask registers are local to the braces.
        unsafe {
            asm!(
                concat!(
                    "{{ .reg .pred %gpu_mpi_mp; .reg .b32 %gpu_mpi_mm; match.all.sync.",
                    $ty,
                    " %gpu_mpi_mm|%gpu_mpi_mp, {v}, {m}; selp.u32 {r}, 1, 0, %gpu_mpi_mp; }}"
                ),
                r = out(reg32) r,
                v = in($class) $value,
                m = in(reg32) $mask,
                options(nostack),
            )
        };
        r != 0
    }};
}

/// `match.all.sync.b32`'s predicate (see [`super::match_all_sync`]; sm_70+).
pub(super) fn match_all_sync(mask: u32, value: u32) -> bool {
    match_all_pred!("b32", reg32, mask, value)
}

/// `match.all.sync.b64`'s predicate (see [`super::match_all_sync_u64`];
/// sm_70+).
pub(super) fn match_all_sync_u64(mask: u32, value: u64) -> bool {
    match_all_pred!("b64", reg64, mask, value)
}

/// `bar.warp.sync` (see [`super::warp_sync`]).
pub(super) fn warp_sync(mask: u32) {
    // SAFETY: a warp barrier touches no memory operand; the default memory
    // clobber keeps this lane's accesses on their side of it, and the
    // instruction orders memory among the lanes of `mask`.
    unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) }
}

/// `activemask.b32` (see [`super::active_mask`]).
pub(super) fn active_mask() -> u32 {
    let r: u32;
    // SAFETY: reads which lanes execute together; no memory. Not `pure`:
    // the answer depends on where the warp has diverged.
    unsafe { asm!("activemask.b32 {r};", r = out(reg32) r, options(nomem, nostack)) };
    r
}

/// `%smid` (see [`super::sm_id`]).
pub(super) fn sm_id() -> u32 {
    let r: u32;
    // SAFETY: reads a special register; no memory. Not `pure`: it may
    // change between reads (a preempted block can move).
    unsafe { asm!("mov.u32 {r}, %smid;", r = out(reg32) r, options(nomem, nostack)) };
    r
}

/// The generic address of the block's shared scratch
/// (see [`super::shared_block`]).
///
/// rustc's nvptx64 target has no way to place a Rust `static` in the shared
/// address space (addrspace 3): statics go to `.global`. So the array is
/// declared by PTX text: a `.shared` variable in this function's scope (in
/// braces, so that its name cannot clash), converted to a generic address
/// with `cvta.shared`. ptxas allocates it once per kernel that calls this
/// function (its `ptxas -v` report counts the bytes under "smem").
/// `#[inline(never)]` matters: an inlined copy would declare an array of its
/// own, and two call sites would no longer share one area.
#[inline(never)]
pub(super) fn shared_block_base() -> *mut u8 {
    let p: u64;
    // SAFETY: declares the block's shared array and computes its generic
    // address; no memory is accessed here.
    unsafe {
        asm!(
            concat!(
                "{{ .shared .align 16 .b8 gpu_mpi_block_shared[",
                "4096",
                "]; cvta.shared.u64 {p}, gpu_mpi_block_shared; }}"
            ),
            p = out(reg64) p,
            options(nostack),
        )
    };
    p as *mut u8
}

/// The generic address of the block's library words
/// (see [`super::block_words`]): a `.shared` array of its own, declared
/// as [`shared_block_base`]'s is (and `#[inline(never)]` for the same
/// reason), so that a kernel that never touches the scratch does not hold
/// its 4 KiB.
#[inline(never)]
pub(super) fn block_words_base() -> *mut u8 {
    let p: u64;
    // SAFETY: declares the block's words and computes their generic
    // address; no memory is accessed here.
    unsafe {
        asm!(
            concat!(
                "{{ .shared .align 16 .b8 gpu_mpi_block_words[",
                "2112",
                "]; cvta.shared.u64 {p}, gpu_mpi_block_words; }}"
            ),
            p = out(reg64) p,
            options(nostack),
        )
    };
    p as *mut u8
}

// The array above is declared with this size.
const _: () = assert!(super::BLOCK_WORDS_BYTES == 2112);

/// The generic address of the block's launch-sized shared memory
/// (see [`super::launch_shared`]): rustc's intrinsic declares the one
/// `.extern .shared` array of the module (16-byte aligned, as `u128`
/// asks), whose size the launch's `sharedMemBytes` sets.
#[inline(always)]
pub(super) fn launch_shared_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u128>() as *mut u8
}

/// Bytes of [`launch_shared_base`]'s array the launch gave the block.
#[inline(always)]
pub(super) fn launch_shared_len() -> usize {
    let n: u32;
    // SAFETY: reading `%dynamic_smem_size` has no side effects; it is the
    // same for the whole launch.
    unsafe { asm!("mov.u32 {n}, %dynamic_smem_size;", n = out(reg32) n, options(pure, nomem, nostack)) };
    n as usize
}

/// Gives way after `polls` consecutive failed polls of one wait: sleeps
/// 32 ns, doubling with each failed poll up to `max_ns`.
pub(super) fn snooze(polls: u32, max_ns: u32) {
    let ns: u32 = (32u32 << polls.min(26)).min(max_ns);
    // SAFETY: `nanosleep` only suspends the thread for up to `ns` nanoseconds;
    // it touches no memory. Not `nomem`: a poll loop must re-read memory after it.
    unsafe { asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nostack)) }
}

/// Nanoseconds of a monotonic clock (`%globaltimer`).
pub fn clock_ns() -> u64 {
    let t: u64;
    // SAFETY: reading `%globaltimer` has no side effects. Not `pure`: each
    // read must happen (the value changes).
    unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nomem, nostack)) };
    t
}

/// Whether a receive's scan of one sender's slot states also loads that
/// sender's first slot's header, before it knows what the slot holds
/// (`engine::find_in`): always, but under loom.
#[inline(always)]
pub const fn guess_headers() -> bool {
    true
}

/// Whether another rank can read `ptr` directly: whether the generic address
/// `ptr` lies in global memory (not in a thread's local stack or a block's
/// shared memory).
pub fn is_shared_address(ptr: *const u8) -> bool {
    let global: u32;
    // SAFETY: `isspacep` only inspects the address value (passed as an
    // integer), it dereferences nothing. The predicate register is local to
    // the braces.
    unsafe {
        asm!(
            "{{ .reg .pred %gpu_mpi_isg; isspacep.global %gpu_mpi_isg, {a}; selp.u32 {r}, 1, 0, %gpu_mpi_isg; }}",
            a = in(reg64) ptr as u64,
            r = out(reg32) global,
            options(pure, nomem, nostack),
        )
    };
    global != 0
}

/// Copies `len` bytes between shared locations (a message slot, a sender's
/// buffer, a receive buffer): 8-byte words when both ends are 8-aligned,
/// 4-byte words when both are 4-aligned, bytes otherwise and for the tail.
///
/// # Safety
/// Both ranges valid for `len` bytes and not overlapping; the protocol orders
/// the copy against every concurrent access with acquire/release operations.
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0usize;
    let align = (dst as usize) | (src as usize);
    if align.is_multiple_of(8) {
        while i + 8 <= len {
            // SAFETY: `i + 8 <= len`, both ends 8-aligned (base and `i` are),
            // ranges valid and disjoint (caller).
            unsafe { (dst.add(i) as *mut u64).write((src.add(i) as *const u64).read()) };
            i += 8;
        }
    } else if align.is_multiple_of(4) {
        while i + 4 <= len {
            // SAFETY: as above with 4-byte words.
            unsafe { (dst.add(i) as *mut u32).write((src.add(i) as *const u32).read()) };
            i += 4;
        }
    }
    while i < len {
        // SAFETY: `i < len`, ranges valid and disjoint (caller).
        unsafe { dst.add(i).write(src.add(i).read()) };
        i += 1;
    }
}

/// Copies `len` bytes of a large message (a rendezvous) with 16-byte loads
/// and stores (`ld.global.v4.u32`), four loads issued before the first store
/// so that four memory round trips overlap; the ends and unaligned buffers
/// go through [`copy_bytes`].
///
/// # Safety
/// As for [`copy_bytes`].
pub unsafe fn copy_wide(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0usize;
    if ((dst as usize) | (src as usize)).is_multiple_of(16) {
        while i + 64 <= len {
            // SAFETY: `i + 64 <= len`: four whole 16-byte vectors inside both
            // ranges, 16-aligned (bases and `i` are); ranges disjoint (caller).
            // Generic addressing: either buffer may be global or local.
            unsafe {
                let (s, d) = (src.add(i), dst.add(i));
                asm!(
                    "ld.v4.u32 {{{a0}, {a1}, {a2}, {a3}}}, [{s}];",
                    "ld.v4.u32 {{{b0}, {b1}, {b2}, {b3}}}, [{s}+16];",
                    "ld.v4.u32 {{{c0}, {c1}, {c2}, {c3}}}, [{s}+32];",
                    "ld.v4.u32 {{{e0}, {e1}, {e2}, {e3}}}, [{s}+48];",
                    "st.v4.u32 [{d}], {{{a0}, {a1}, {a2}, {a3}}};",
                    "st.v4.u32 [{d}+16], {{{b0}, {b1}, {b2}, {b3}}};",
                    "st.v4.u32 [{d}+32], {{{c0}, {c1}, {c2}, {c3}}};",
                    "st.v4.u32 [{d}+48], {{{e0}, {e1}, {e2}, {e3}}};",
                    s = in(reg64) s,
                    d = in(reg64) d,
                    a0 = out(reg32) _, a1 = out(reg32) _, a2 = out(reg32) _, a3 = out(reg32) _,
                    b0 = out(reg32) _, b1 = out(reg32) _, b2 = out(reg32) _, b3 = out(reg32) _,
                    c0 = out(reg32) _, c1 = out(reg32) _, c2 = out(reg32) _, c3 = out(reg32) _,
                    e0 = out(reg32) _, e1 = out(reg32) _, e2 = out(reg32) _, e3 = out(reg32) _,
                    options(nostack),
                );
            }
            i += 64;
        }
    }
    // SAFETY: the rest lies inside both ranges.
    unsafe { copy_bytes(dst.add(i), src.add(i), len - i) }
}

/// Stores a 64-bit word into a message payload with a plain store (the
/// address of a rendezvous sender's buffer); published like the payload.
///
/// # Safety
/// `ptr` 8-byte aligned and valid; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn store_payload_u64(ptr: *mut u8, value: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { (ptr as *mut u64).write(value) }
}

/// Loads a 64-bit word of a message payload stored by [`store_payload_u64`].
///
/// # Safety
/// As for [`store_payload_u64`].
pub unsafe fn load_payload_u64(ptr: *const u8) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { (ptr as *const u64).read() }
}

/// Loads one element of `T` from another rank's buffer in global memory
/// (a reduce-scatter's operand): a plain load, several of which may be in
/// flight in a batch ([`super::independent`]).
///
/// # Safety
/// `ptr` valid for reads of one `T` and aligned; ordered against the
/// element's writes by the protocol's acquire/release operations.
pub unsafe fn load_element<T: Copy>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.read() }
}

/// Loads the first `len` (at most 8) bytes at `src` into a payload's first
/// word, in memory order, the rest zero: [`store_head_bytes`]'s inverse
/// (the send of a small message through registers).
///
/// # Safety
/// `src` valid for `len` bytes; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn load_head_bytes(src: *const u8, len: usize) -> u64 {
    if len == 8 && (src as usize).is_multiple_of(8) {
        // SAFETY: 8 valid, aligned bytes (caller).
        return unsafe { (src as *const u64).read() };
    }
    let mut v = 0u64;
    let mut k = 0;
    while k < len && k < 8 {
        // SAFETY: `k < len` (caller: valid for `len` bytes).
        v |= u64::from(unsafe { src.add(k).read() }) << (8 * k);
        k += 1;
    }
    v
}

/// Stores the first `len` (at most 8) bytes of `value` at `dst`: a
/// payload's first word as [`load_payload_u64`] read it, so its bytes in
/// memory order (the receive of a small message from registers).
///
/// # Safety
/// `dst` valid for `len` bytes; ordered as [`copy_bytes`]'s ranges are.
pub unsafe fn store_head_bytes(dst: *mut u8, value: u64, len: usize) {
    if len == 8 && (dst as usize).is_multiple_of(8) {
        // SAFETY: 8 valid, aligned bytes (caller).
        unsafe { (dst as *mut u64).write(value) };
        return;
    }
    let mut k = 0;
    while k < len {
        // SAFETY: `k < len` (caller: valid for `len` bytes).
        unsafe { dst.add(k).write((value >> (8 * k)) as u8) };
        k += 1;
    }
}

/// A panic in device code traps: the launch fails with an error the host
/// reports (`cudaErrorLaunchFailure` / `CUDA_ERROR_ILLEGAL_INSTRUCTION`).
/// There is no unwinding on nvptx64 and no way to print the message.
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `trap` aborts the kernel; it never returns.
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}

/// Kernel entry point for nvptx64: an `extern "ptx-kernel"` function exported
/// under the kernel's name, taking `(world_memory, args)`, that runs the rank
/// through [`rank_main`](crate::kernel::rank_main).
///
/// It sits in an anonymous `const` so that it does not clash with the Rust
/// function of the same name; the export name is what the launcher looks up.
/// The crate that invokes [`kernel!`](crate::kernel) needs the nightly
/// feature `abi_ptx`: the kernel builder enables it for the crate it builds;
/// a kernel crate used as a dependency of another names it itself.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_entry {
    ($name:ident, $argty:ty) => {
        const _: () = {
            /// PTX entry point.
            ///
            /// # Safety
            /// As for [`rank_main`]($crate::kernel::rank_main): launched by the
            /// host launcher on a world it initialised.
            #[export_name = stringify!($name)]
            pub unsafe extern "ptx-kernel" fn __gpu_mpi_ptx_entry(world: *mut u8, args: *const $argty) {
                // SAFETY: the launcher upholds `rank_main`'s contract.
                unsafe { $crate::kernel::rank_main(world, args, $name) }
            }
        };
    };
}

/// `ld.relaxed.gpu.v4.u32` of four 16-byte aligned words
/// ([`super::load_relaxed_x4`] checked the alignment).
#[inline(always)]
pub(super) fn load_relaxed_x4(words: &[AtomicU32; 4]) -> [u32; 4] {
    let p = words.as_ptr();
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: `words` are four live atomic words, 16-byte aligned (the
    // caller checked), only accessed atomically; the instruction only reads
    // them.
    unsafe {
        asm!(
            "ld.relaxed.gpu.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            p = in(reg64) p,
            options(nostack),
        )
    }
    [a, b, c, d]
}

/// `st.relaxed.gpu.v4.u32` of four 16-byte aligned words
/// ([`super::store_relaxed_x4`] checked the alignment).
#[inline(always)]
pub(super) fn store_relaxed_x4(words: &[AtomicU32; 4], values: [u32; 4]) {
    let p = words.as_ptr();
    // SAFETY: `words` are four live atomic words, 16-byte aligned (the
    // caller checked), only accessed atomically; the instruction only
    // writes them.
    unsafe {
        asm!(
            "st.relaxed.gpu.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) p,
            a = in(reg32) values[0],
            b = in(reg32) values[1],
            c = in(reg32) values[2],
            d = in(reg32) values[3],
            options(nostack),
        )
    }
}

/// `ld.relaxed.gpu.v2.u64` of two 16-byte aligned 64-bit words
/// ([`super::load_relaxed_x2_u64`] checked the alignment).
#[inline(always)]
pub(super) fn load_relaxed_x2_u64(words: &[AtomicU64; 2]) -> [u64; 2] {
    let p = words.as_ptr();
    let (a, b): (u64, u64);
    // SAFETY: `words` are two live atomic words, 16-byte aligned (the
    // caller checked), only accessed atomically; the instruction only
    // reads them.
    unsafe {
        asm!(
            "ld.relaxed.gpu.v2.u64 {{{a}, {b}}}, [{p}];",
            a = out(reg64) a,
            b = out(reg64) b,
            p = in(reg64) p,
            options(nostack),
        )
    }
    [a, b]
}

/// `st.relaxed.gpu.v2.u64` of two 16-byte aligned 64-bit words
/// ([`super::store_relaxed_x2_u64`] checked the alignment).
#[inline(always)]
pub(super) fn store_relaxed_x2_u64(words: &[AtomicU64; 2], values: [u64; 2]) {
    let p = words.as_ptr();
    // SAFETY: `words` are two live atomic words, 16-byte aligned (the
    // caller checked), only accessed atomically; the instruction only
    // writes them.
    unsafe {
        asm!(
            "st.relaxed.gpu.v2.u64 [{p}], {{{a}, {b}}};",
            p = in(reg64) p,
            a = in(reg64) values[0],
            b = in(reg64) values[1],
            options(nostack),
        )
    }
}

/// Whether [`super::load_relaxed_batch`] loads its repeated words too:
/// a repeated load is free and keeps a batch free of branches.
pub(super) const LOADS_REPEAT: bool = true;

/// A batch of independent loads begins (`true`) or ends: nothing here (the
/// emulator's timing model counts batches).
#[inline(always)]
pub(super) fn batch(_begin: bool) {}

/// A plain access of global memory: nothing here (the emulator's timing
/// model charges it).
#[inline(always)]
pub(super) fn note_global(_addr: usize, _bytes: usize, _write: bool) {}

#[inline(always)]
pub(super) fn note_private(_addr: usize, _bytes: usize, _write: bool) {}

/// `prefetch.L1`: generic addressing (the world's memory is global).
#[inline(always)]
pub(super) fn prefetch_private(addr: *const u8, _bytes: usize) {
    // SAFETY: a prefetch reads and writes no value and cannot fault (PTX
    // ISA, `prefetch`); it only hints the L1 cache.
    unsafe { asm!("prefetch.L1 [{a}];", a = in(reg64) addr, options(nostack, readonly, preserves_flags)) }
}

#[inline(always)]
pub(super) fn note_volatile(_addr: usize, _bytes: usize, _write: bool) {}

#[inline(always)]
pub(super) fn note_descriptor(_which: super::Descriptor) {}

extern "C" {
    /// The generic address of the module's constant-bank copy of the world's
    /// header, defined (and inlined) by ptx-builder's link step
    /// (`descriptors_ir`): through it LLVM emits `ld.const`, which ptxas
    /// folds into constant-bank operands.
    fn gpu_mpi_descriptors_address() -> *const u8;
}

#[inline(always)]
pub(super) fn descriptors(_world: *mut u8) -> *const u8 {
    // SAFETY: a function without arguments or side effects that every
    // module ptx-builder links defines.
    unsafe { gpu_mpi_descriptors_address() }
}
