//! Kernel entry points, written once for the GPU and the CPU emulator.
//!
//! [`kernel!`](crate::kernel!) turns one ordinary Rust function
//! `fn(&World, &Args) -> Result<(), Error>` into
//! - on nvptx64, an `extern "ptx-kernel"` entry named like the function, with
//!   parameters `(world_memory: *mut u8, args: *const Args)`;
//! - everywhere, a [`Kernel`] descriptor (a `static`) that the host launcher
//!   takes: its name finds the PTX entry, its `entry` runs one rank on the
//!   emulator.
//!
//! Both paths go through [`rank_main`], which attaches the rank to the world,
//! zeroes the block's library words with the block's other ranks (a block
//! barrier), runs the body and writes its result record.

use crate::communicator::World;
use crate::error::Error;
use crate::polling::STATE_EXITED;
use crate::shim::{self, Ordering};
use bytemuck::{Pod, Zeroable};
use core::cell::Cell;
use core::marker::PhantomData;

/// A kernel the host can launch with arguments of type `A`.
pub struct Kernel<A: 'static> {
    /// Name of the PTX entry point (the function's name).
    pub name: &'static str,
    /// Runs one rank: `entry(world_memory, args)`.
    ///
    /// # Safety
    /// As for [`rank_main`].
    pub entry: unsafe fn(*mut u8, *const A),
}

/// Runs one rank of a kernel and writes its result record.
///
/// # Safety
/// `world` must satisfy [`World::attach`], and every rank of the block
/// runs this entry (it attaches with [`World::attach_kernel`], a block
/// barrier); `args` must point to a valid `A`
/// that stays valid and unchanged for the whole launch.
#[inline(always)]
#[doc(hidden)]
pub unsafe fn rank_main<A>(world: *mut u8, args: *const A, body: fn(&World, &A) -> Result<(), Error>) {
    // SAFETY: forwarded from the caller.
    let w = match unsafe { World::attach_kernel(world) } {
        Ok(w) => w,
        // No layout to write into: the host sees the result record untouched
        // (class 0 with the record state still "running") and reports it.
        Err(_) => return,
    };
    // SAFETY: the caller guarantees `args` is valid for the launch.
    let result = body(&w, unsafe { &*args });
    let words = match result {
        Ok(()) => [0; 5],
        Err(e) => e.to_words(),
    };
    let off = w.layout.result(w.rank) + core::mem::offset_of!(crate::records::ResultRecord, words);
    for (i, word) in words.iter().enumerate() {
        // SAFETY: the result record (`records::ResultRecord`) lies inside the
        // world memory, aligned, written only by this rank and read by the
        // host after the launch.
        unsafe { shim::atomic_u32_at(w.base, off + 4 * i) }.store(*word, Ordering::Relaxed);
    }
    // A rank whose wait timed out keeps that record: the report names its wait.
    if !matches!(result, Err(Error::Timeout { .. })) {
        w.record_state(STATE_EXITED);
    }
    // Slots this rank received from and has not handed back yet; last, so
    // that nothing of the result is live across the call.
    crate::slot_return::return_deferred(&w.core_settled());
}

/// Defines a kernel once for the GPU and the emulator.
///
/// ```ignore
/// gpu_mpi_device::kernel! {
///     /// Every rank sends its rank to rank 0.
///     pub static GATHER = fn gather(world: &World, args: &MyArgs) -> Result<(), Error> {
///         /* ... */
///         Ok(())
///     }
/// }
/// ```
///
/// The arguments are one `Pod` value taken by reference (`args: &MyArgs`);
/// a kernel written with `args: MyArgs` fails to compile with "a kernel
/// takes its arguments by reference: `args: &MyArgs`":
///
/// ```compile_fail
/// use gpu_mpi_device::{Error, World};
/// gpu_mpi_device::kernel! {
///     pub static BY_VALUE = fn by_value(world: &World, args: u32) -> Result<(), Error> {
///         Ok(())
///     }
/// }
/// ```
#[macro_export]
macro_rules! kernel {
    ($(#[$meta:meta])* $vis:vis static $desc:ident = fn $name:ident($world:ident : &$wty:ty, $args:ident : &$argty:ty) -> Result<(), $ety:ty> $body:block) => {
        $(#[$meta])*
        // Inlined into its entry even from another crate: called through a
        // function pointer that is not inlined, it would get the `World` by
        // reference, in local memory.
        #[inline(always)]
        $vis fn $name($world: &$wty, $args: &$argty) -> ::core::result::Result<(), $ety> $body

        #[doc = concat!("Launch descriptor of [`", stringify!($name), "`].")]
        $vis static $desc: $crate::kernel::Kernel<$argty> = $crate::kernel::Kernel {
            name: stringify!($name),
            entry: |world: *mut u8, args: *const $argty| {
                // SAFETY: the launcher upholds `rank_main`'s contract.
                unsafe { $crate::kernel::rank_main(world, args, $name) }
            },
        };

        $crate::__kernel_entry!($name, $argty);
    };
    // Arguments by value: one clear error instead of "no rules expected".
    ($(#[$meta:meta])* $vis:vis static $desc:ident = fn $name:ident($world:ident : &$wty:ty, $args:ident : $argty:ty) -> $ret:ty $body:block) => {
        ::core::compile_error!(::core::concat!(
            "a kernel takes its arguments by reference: `",
            ::core::stringify!($args),
            ": &",
            ::core::stringify!($argty),
            "`"
        ));
    };
}

/// A slice of device-global memory passed to a kernel in its arguments
/// (an address and a length; `Pod`, so it can sit in an argument struct).
#[repr(C)]
#[derive(Debug)]
pub struct GlobalSlice<T: Pod> {
    addr: u64,
    len: u64,
    _marker: PhantomData<T>,
}

// SAFETY: two u64 fields and a zero-sized marker: no padding, every bit
// pattern valid, all-zero valid.
unsafe impl<T: Pod> Zeroable for GlobalSlice<T> {}
// SAFETY: as above; `T: Pod` makes the marker `Copy + 'static`.
unsafe impl<T: Pod> Pod for GlobalSlice<T> {}

impl<T: Pod> Clone for GlobalSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Pod> Copy for GlobalSlice<T> {}

impl<T: Pod> GlobalSlice<T> {
    /// A slice of `len` elements at device address `addr`.
    ///
    /// # Safety
    /// `addr` must be aligned for `T` and valid for `len` elements for every
    /// launch that receives this slice.
    pub const unsafe fn from_raw(addr: u64, len: u64) -> Self {
        GlobalSlice {
            addr,
            len,
            _marker: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Writes element `i`. Ranks writing the same element in one launch race,
    /// exactly as CUDA threads would: give each rank its own elements.
    pub fn write(&self, i: usize, value: T) -> Result<(), Error> {
        if i as u64 >= self.len {
            return Err(Error::OutOfBounds {
                index: i as u32,
                len: self.len as u32,
            });
        }
        let at = (self.addr as *mut T).wrapping_add(i);
        crate::shim::note_volatile(at as *const u8, core::mem::size_of::<T>(), true);
        // SAFETY: `from_raw`'s contract makes element `i < len` valid and aligned.
        unsafe { core::ptr::write_volatile(at, value) };
        Ok(())
    }

    /// Borrows elements `start..start + len` as a Rust slice, e.g. as a
    /// message buffer in device-global memory (which lets a large message go
    /// straight from the sender's buffer to the receiver on the GPU).
    ///
    /// # Safety
    /// No other reference to, or [`write`](Self::write) of, these elements may
    /// exist while the slice lives (in any rank).
    pub unsafe fn slice_mut<'a>(&self, start: usize, len: usize) -> Result<&'a mut [T], Error> {
        let end = start.checked_add(len).filter(|&e| e as u64 <= self.len);
        if end.is_none() {
            return Err(Error::OutOfBounds {
                index: start.saturating_add(len) as u32,
                len: self.len as u32,
            });
        }
        // SAFETY: in bounds and aligned by `from_raw`'s contract; exclusive by ours.
        Ok(unsafe { core::slice::from_raw_parts_mut((self.addr as *mut T).add(start), len) })
    }

    /// Borrows elements `start..start + len` as a shared Rust slice (an
    /// encoding or a buffer that no rank writes during the launch).
    ///
    /// # Safety
    /// Nothing may write these elements while the slice lives (in any rank).
    pub unsafe fn slice<'a>(&self, start: usize, len: usize) -> Result<&'a [T], Error> {
        let end = start.checked_add(len).filter(|&e| e as u64 <= self.len);
        if end.is_none() {
            return Err(Error::OutOfBounds {
                index: start.saturating_add(len) as u32,
                len: self.len as u32,
            });
        }
        // SAFETY: in bounds and aligned by `from_raw`'s contract; not written
        // meanwhile by ours.
        Ok(unsafe { core::slice::from_raw_parts((self.addr as *const T).add(start), len) })
    }

    /// Reads element `i`.
    pub fn read(&self, i: usize) -> Result<T, Error> {
        if i as u64 >= self.len {
            return Err(Error::OutOfBounds {
                index: i as u32,
                len: self.len as u32,
            });
        }
        let at = (self.addr as *const T).wrapping_add(i);
        crate::shim::note_volatile(at as *const u8, core::mem::size_of::<T>(), false);
        // SAFETY: as in `write`.
        Ok(unsafe { core::ptr::read_volatile(at) })
    }
}

/// This rank's scratch: bytes of device-global memory that only this rank
/// reaches, sized for every rank by the host (`WorldSpec::scratch_bytes`),
/// for per-rank arrays too large for a GPU thread's stack or whose size is
/// known only at run time (a sample sort's counts and displacements: O(p)
/// per rank). From [`World::scratch`].
///
/// Each [`take`](Self::take) hands out the next aligned piece, disjoint
/// from every earlier one, borrowed from the `Scratch`; the pieces go back
/// all at once when it is dropped, and the next `World::scratch` starts
/// from the beginning again (its pieces hold what was last written there;
/// the world starts zeroed). A rank has one `Scratch` at a time.
///
/// ```
/// # use gpu_mpi_device::{Error, World};
/// # use gpu_mpi_device::traits::*;
/// fn counts_and_displacements(world: &World) -> Result<(), Error> {
///     let p = world.size() as usize;
///     let scratch = world.scratch()?;
///     let counts = scratch.take::<i32>(p)?;
///     let displacements = scratch.take::<i32>(p)?;
///     counts.fill(1);
///     for (i, d) in displacements.iter_mut().enumerate() {
///         *d = i as i32;
///     }
///     Ok(())
/// }
/// ```
///
/// On the GPU this is global memory: cached as any global load, without the
/// local-memory traffic of a large stack frame (a stack frame is local
/// memory too, but costs every thread the whole frame whether it uses it or
/// not, and a large one limits how many threads the launch can keep).
pub struct Scratch<'w> {
    /// The world's memory, whose header word at `header` marks the scratch
    /// taken; null for a world without scratch.
    base: *mut u8,
    /// Offset of this rank's scratch header.
    header: usize,
    /// Usable bytes (after the header).
    capacity: usize,
    /// Bytes handed out so far, alignment included.
    used: Cell<usize>,
    _world: PhantomData<&'w World>,
}

impl World {
    /// This rank's scratch, empty when the launch gave none
    /// (`WorldSpec::scratch_bytes`); [`Error::ScratchInUse`]
    /// (`MPI_ERR_NO_MEM`) while another `Scratch` of this rank is alive.
    pub fn scratch(&self) -> Result<Scratch<'_>, Error> {
        let stride = self.layout.scratch_stride;
        if stride == 0 {
            return Ok(Scratch {
                base: core::ptr::null_mut(),
                header: 0,
                capacity: 0,
                used: Cell::new(0),
                _world: PhantomData,
            });
        }
        let header = self.layout.scratch_of(self.rank);
        // SAFETY: the header word lies in this rank's scratch header, inside
        // the world memory, 64-byte aligned, and only this rank reaches it
        // (atomically, through this function and `Scratch::drop`).
        let taken = unsafe { shim::atomic_u32_at(self.base, header) };
        // Relaxed: the word is private to this rank; nothing is published.
        if taken.load(Ordering::Relaxed) != 0 {
            return Err(Error::ScratchInUse);
        }
        taken.store(1, Ordering::Relaxed);
        Ok(Scratch {
            base: self.base,
            header,
            capacity: stride - crate::layout::SCRATCH_HEADER_BYTES,
            used: Cell::new(0),
            _world: PhantomData,
        })
    }
}

impl Scratch<'_> {
    /// The next `len` elements of the scratch, aligned for `T`, disjoint
    /// from every piece taken before; their values are whatever the scratch
    /// held (zero at the launch's start). [`Error::ScratchExhausted`]
    /// (`MPI_ERR_NO_MEM`) when they do not fit what is left.
    // The pieces are disjoint (`used` only grows) and live no longer than
    // `self`, whose drop is the only way to hand them out again.
    #[allow(clippy::mut_from_ref)]
    pub fn take<T: Pod>(&self, len: usize) -> Result<&mut [T], Error> {
        let size = core::mem::size_of::<T>();
        let bytes = len.checked_mul(size);
        if bytes == Some(0) {
            return Ok(&mut []);
        }
        let used = self.used.get();
        let exhausted = Error::ScratchExhausted {
            requested: crate::error::saturating_u32(bytes.unwrap_or(usize::MAX)),
            available: crate::error::saturating_u32(self.capacity - used),
        };
        let Some(bytes) = bytes else {
            return Err(exhausted);
        };
        let first = self.header + crate::layout::SCRATCH_HEADER_BYTES;
        let address = (self.base as usize).wrapping_add(first + used);
        let pad = address.next_multiple_of(core::mem::align_of::<T>()) - address;
        let end = used.checked_add(pad).and_then(|u| u.checked_add(bytes));
        match end {
            Some(end) if end <= self.capacity => {
                self.used.set(end);
                // SAFETY: `first + used + pad .. first + end` lies inside this
                // rank's scratch (end <= capacity), in the world memory that
                // outlives `'w`; it is aligned for `T` (`pad`), every bit
                // pattern is a valid `T` (`Pod`), and no other piece overlaps
                // it: `used` only grows while this `Scratch` lives, and a new
                // `Scratch` of this rank can only be made after this one is
                // dropped, which the returned borrow of `self` prevents.
                Ok(unsafe {
                    core::slice::from_raw_parts_mut(self.base.add(first + used + pad) as *mut T, len)
                })
            }
            _ => Err(exhausted),
        }
    }

    /// Bytes of this rank's scratch (at least what the launch asked for,
    /// rounded up to 64).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes not yet taken (before the alignment of the next piece).
    pub fn remaining(&self) -> usize {
        self.capacity - self.used.get()
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        if self.base.is_null() {
            return;
        }
        // SAFETY: as in `World::scratch`, which set the word for this `Scratch`.
        let taken = unsafe { shim::atomic_u32_at(self.base, self.header) };
        // Relaxed: private to this rank, as in `World::scratch`.
        taken.store(0, Ordering::Relaxed);
    }
}
