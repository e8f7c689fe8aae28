//! One-sided communication (`gpu_mpi_device::window`, MPI 4.1 chapter 12):
//! kernels for check/tests/rma.rs and check/tests/proptest_rma.rs.
//!
//! Each kernel records what every rank saw into its `slots` words of
//! [`RmaArgs::out`] (errors as their five result-record words, so that the
//! host rebuilds them with `Error::from_words`); windows made with
//! `Window::create` lie in [`RmaArgs::data`], [`RmaArgs::part`] words per
//! rank, which the host uploads with a pattern and reads back after the
//! launch (what must not change, and what the operations wrote).
//!
//! The kernels written for one element type take it as a parameter
//! ([`T_U8`] ..= [`T_F64`]); [`Elem`] converts the small integers the
//! host's models use to each type.

use crate::{Recorder, NONE};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::{Operation, SystemOperation};
use gpu_mpi_device::communicator::Color;
use gpu_mpi_device::datatype::Equivalence;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::window::{LockType, Mode, TargetView, Window, MAX_LOCKS, NOTIFICATIONS};
use gpu_mpi_device::{Error, GlobalSlice, MutView, TypeRef, View, World, PROC_NULL};

/// The arguments of the one-sided kernels: what each rank saw, and the
/// memory of the windows made with `Window::create`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RmaArgs {
    /// Per rank: what it records (`slots` words each).
    pub out: GlobalSlice<u32>,
    /// Window memory: rank `r` owns words `r * part .. (r + 1) * part`.
    pub data: GlobalSlice<u64>,
    /// Words each rank records.
    pub slots: u32,
    /// Words of `data` per rank.
    pub part: u32,
    /// A parameter of the kernel.
    pub param: u32,
    /// A second parameter of the kernel.
    pub param2: u32,
}

/// Element type parameter: `u8`.
pub const T_U8: u32 = 0;
/// Element type parameter: `i8`.
pub const T_I8: u32 = 1;
/// Element type parameter: `u16`.
pub const T_U16: u32 = 2;
/// Element type parameter: `i16`.
pub const T_I16: u32 = 3;
/// Element type parameter: `u32`.
pub const T_U32: u32 = 4;
/// Element type parameter: `i32`.
pub const T_I32: u32 = 5;
/// Element type parameter: `u64`.
pub const T_U64: u32 = 6;
/// Element type parameter: `i64`.
pub const T_I64: u32 = 7;
/// Element type parameter: `f32`.
pub const T_F32: u32 = 8;
/// Element type parameter: `f64`.
pub const T_F64: u32 = 9;

/// An element type of the kernels: made from the small integers of the
/// host's models, and recorded as its bits.
pub trait Elem: Equivalence + PartialEq + core::fmt::Debug {
    /// Whether it is a floating-point type (no bitwise or logical
    /// operations: `MPI_ERR_OP`).
    const FLOAT: bool;
    /// `v` converted with `as` (integers wrap; the floats are exact for
    /// the values the kernels use).
    fn of(v: i32) -> Self;
    /// Its bits, zero-extended.
    fn bits(self) -> u64;
}

macro_rules! int_elem {
    ($($t:ty => $u:ty),*) => {$(
        impl Elem for $t {
            const FLOAT: bool = false;
            fn of(v: i32) -> Self {
                v as $t
            }
            fn bits(self) -> u64 {
                self as $u as u64
            }
        }
    )*};
}

int_elem!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, u64 => u64, i64 => u64);

impl Elem for f32 {
    const FLOAT: bool = true;
    fn of(v: i32) -> Self {
        v as f32
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Elem for f64 {
    const FLOAT: bool = true;
    fn of(v: i32) -> Self {
        v as f64
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Runs `$f::<T>($($arg),*)` for the element type that `$ty` names
/// ([`T_U8`] ..= [`T_F64`]); an application error 1 for another value.
macro_rules! for_type {
    ($ty:expr, $f:ident($($arg:expr),*)) => {
        match $ty {
            T_U8 => $f::<u8>($($arg),*),
            T_I8 => $f::<i8>($($arg),*),
            T_U16 => $f::<u16>($($arg),*),
            T_I16 => $f::<i16>($($arg),*),
            T_U32 => $f::<u32>($($arg),*),
            T_I32 => $f::<i32>($($arg),*),
            T_U64 => $f::<u64>($($arg),*),
            T_I64 => $f::<i64>($($arg),*),
            T_F32 => $f::<f32>($($arg),*),
            T_F64 => $f::<f64>($($arg),*),
            _ => Err(Error::application(1)),
        }
    };
}

/// Elements `first .. first + len` of `T` in rank `rank`'s part of `data`
/// (`part` words of it). Each rank takes only ranges of its own part, and
/// no two live at once overlap.
fn part<'a, T: Pod>(
    data: &GlobalSlice<u64>,
    part: u32,
    rank: u32,
    first: usize,
    len: usize,
) -> Result<&'a mut [T], Error> {
    let words = part as usize;
    // SAFETY: rank `rank`'s part is used by that rank only, and the callers
    // take disjoint ranges of it (the borrow rules of the windows over them
    // do the rest); the memory lives for the launch.
    let w = unsafe { data.slice_mut(rank as usize * words, words) }?;
    let all: &mut [T] = bytemuck::try_cast_slice_mut(w).map_err(|_| Error::Intern)?;
    let n = all.len();
    all.get_mut(first..first.saturating_add(len))
        .ok_or(Error::OutOfBounds {
            index: first.saturating_add(len) as u32,
            len: n as u32,
        })
}

/// Rank `rank`'s `len` first elements of `args.data`.
fn own<'a, T: Pod>(args: &RmaArgs, rank: u32, len: usize) -> Result<&'a mut [T], Error> {
    part(&args.data, args.part, rank, 0, len)
}

/// The tag of [`yield_rank`]'s probe: no kernel here sends a message.
const YIELD_TAG: i32 = 77;

/// Lets other ranks run: a probe for a message nobody sends fails its
/// poll, which suspends the rank on the emulator (so that a critical
/// section of a one-sided test is interleaved with other ranks' even on
/// one worker) and costs a poll on the GPU.
fn yield_rank(world: &World) -> Result<(), Error> {
    world
        .any_process()
        .immediate_probe_with_tag(YIELD_TAG)
        .map(|_| ())
}

/// The recorder of `rank` in `args.out`.
fn recorder(args: &RmaArgs, rank: i32) -> Recorder {
    Recorder::with_stride(args.out, rank, args.slots)
}

/// The first error of `results`, or `Ok`.
fn first_error(results: &[Result<(), Error>]) -> Result<(), Error> {
    for r in results {
        r.as_ref().map_err(|e| *e)?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// Every rank puts its rank into the next rank's allocated window
    /// between two fences, reads it back, and records it.
    pub static RMA_RING_PUT = fn rma_ring_put(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let win = Window::<u32>::allocate(world, 1)?;
        let next = (world.rank() + 1) % world.size();
        win.fence()?;
        win.put(&[world.rank() as u32 + 100], next, 0)?;
        win.fence()?;
        let mut mine = [0u32];
        win.get(&mut mine, world.rank(), 0)?;
        win.free()?;
        args.out.write(world.rank() as usize * args.slots as usize, mine[0])
    }
}

gpu_mpi_device::kernel! {
    /// Every rank adds one to a counter of rank 0's window, `param` times,
    /// with `fetch_and_op` under a shared lock of rank 0; after a barrier
    /// rank 0 records the counter and each rank the largest value it
    /// fetched.
    pub static RMA_COUNTER = fn rma_counter(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let win = Window::<u64>::allocate(world, 1)?;
        win.fence()?;
        win.fence_with(Mode::NO_SUCCEED)?;
        let mut last = 0u64;
        win.lock(LockType::Shared, 0)?;
        for _ in 0..args.param {
            let mut old = 0u64;
            win.fetch_and_op(&1, &mut old, 0, 0, SystemOperation::sum())?;
            last = last.max(old);
        }
        win.unlock(0)?;
        world.barrier()?;
        let base = world.rank() as usize * args.slots as usize;
        if world.rank() == 0 {
            win.lock(LockType::Exclusive, 0)?;
            let mut total = [0u64];
            win.get(&mut total, 0, 0)?;
            win.unlock(0)?;
            args.out.write(base + 1, total[0] as u32)?;
        }
        win.free()?;
        args.out.write(base, last as u32)
    }
}

// ---- windows -----------------------------------------------------------

/// The value rank `origin` puts at element `k` of the next rank's window
/// in [`RMA_WINDOW_QUERIES`].
pub const fn query_value(origin: u32, k: u32) -> u32 {
    1000 * origin + k + 1
}

/// [`RMA_WINDOW_QUERIES`]: `param` for windows made by `Window::create`
/// over each rank's part of `data`.
pub const WINDOW_CREATE: u32 = 0;
/// [`RMA_WINDOW_QUERIES`]: `param` for windows made by `Window::allocate`.
pub const WINDOW_ALLOCATE: u32 = 1;

gpu_mpi_device::kernel! {
    /// Windows of `u32` of `r % 3` elements on rank `r` (zero-size on a
    /// third of the ranks), made by `create` over the rank's part of
    /// `data` or by `allocate` (`param`, [`WINDOW_CREATE`] or
    /// [`WINDOW_ALLOCATE`]). Records: size in bytes, displacement unit,
    /// length, is-empty, rank, size, the group's size and rank, whether
    /// the id is below the default 2 windows (9 words);
    /// then, between two fences, each rank fills the next rank's window
    /// with [`query_value`]s and puts one element too many (its error, 5
    /// words); after the fence its own elements read back by a get from
    /// itself (2 words, [`NONE`] past its length), and the class of a get
    /// of one element at its length (zero-size windows included).
    pub static RMA_WINDOW_QUERIES = fn rma_window_queries(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank() as u32, world.size() as u32);
        let len = (r % 3) as usize;
        let win = if args.param == WINDOW_CREATE {
            Window::<u32>::create(world, own(args, r, len)?)?
        } else {
            Window::<u32>::allocate(world, len)?
        };
        let mut rec = recorder(args, r as i32);
        let group = win.group();
        rec.words(&[
            win.size_bytes() as u32,
            win.disp_unit() as u32,
            win.len() as u32,
            win.is_empty() as u32,
            win.rank() as u32,
            win.size() as u32,
            group.size() as u32,
            group.rank().map_or(NONE, |g| g as u32),
            (win.id() < 2) as u32,
        ])?;
        win.fence()?;
        let next = (r + 1) % p;
        let tlen = (next % 3) as usize;
        let values = [query_value(r, 0), query_value(r, 1), query_value(r, 2)];
        win.put(&values[..tlen], next as i32, 0)?;
        rec.error_words(&win.put(&values[..tlen + 1], next as i32, 0))?;
        win.fence()?;
        let mut mine = [NONE; 2];
        win.get(&mut mine[..len], r as i32, 0)?;
        rec.words(&mine)?;
        let mut one = [0u32];
        rec.class(&win.get(&mut one, r as i32, len))?;
        win.fence()?;
        win.free()
    }
}

/// [`RMA_SUBCOMM`]'s `param`: the communicators of
/// `split_by_color_with_key(r % 2, -r)` (two, each ranked in decreasing
/// world rank).
pub const SUB_COLOUR: u32 = 0;
/// [`RMA_SUBCOMM`]'s `param`: the communicators of `split_shared` (one per
/// block).
pub const SUB_SHARED: u32 = 1;
/// [`RMA_SUBCOMM`]'s `param`: the communicators of `split_by_warp` (one
/// per warp).
pub const SUB_WARP: u32 = 2;

gpu_mpi_device::kernel! {
    /// Windows on sub-communicators (`param`: [`SUB_COLOUR`],
    /// [`SUB_SHARED`], [`SUB_WARP`]), at the same time as one on the
    /// world. Records: the window's rank, size, group size and group
    /// rank, whether the two windows' ids differ (5 words); between
    /// fences of the sub-window each rank puts
    /// `[world rank, its window rank]` into the next window rank's
    /// window; after the fence its window read back (2 words); then every
    /// rank adds 1 to window rank 0's third element under a shared lock,
    /// and after a barrier of the communicator its rank 0 records the
    /// count (1 word, [`NONE`] elsewhere); then the error of a put to
    /// window rank `size` (5 words); then through the world window each
    /// rank puts its window rank into world rank `r + 1` (1 word: what
    /// arrived).
    pub static RMA_SUBCOMM = fn rma_subcomm(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let p = world.size() as u32;
        let sub = match args.param {
            SUB_COLOUR => world
                .split_by_color_with_key(Color::with_value(r % 2), -(r as i32))?
                .ok_or(Error::Intern)?,
            SUB_SHARED => world.split_shared()?,
            _ => world.split_by_warp()?,
        };
        let all = Window::<u32>::allocate(world, 1)?;
        let win = Window::<u32>::allocate(&sub, 3)?;
        let mut rec = recorder(args, r as i32);
        let group = win.group();
        rec.words(&[
            win.rank() as u32,
            win.size() as u32,
            group.size() as u32,
            group.rank().map_or(NONE, |g| g as u32),
            (win.id() != all.id()) as u32,
        ])?;
        let (me, n) = (win.rank(), win.size());
        win.fence()?;
        win.put(&[r, me as u32], (me + 1) % n, 0)?;
        win.fence()?;
        let mut got = [0u32; 2];
        win.get(&mut got, me, 0)?;
        rec.words(&got)?;
        win.fence_with(Mode::NO_SUCCEED)?;
        win.lock(LockType::Shared, 0)?;
        win.accumulate(&[1], 0, 2, SystemOperation::sum())?;
        win.unlock(0)?;
        sub.barrier()?;
        if me == 0 {
            win.lock(LockType::Exclusive, 0)?;
            let mut count = [0u32];
            win.get(&mut count, 0, 2)?;
            win.unlock(0)?;
            rec.push(count[0])?;
        } else {
            rec.push(NONE)?;
        }
        win.fence()?;
        rec.error_words(&win.put(&[1], n, 0))?;
        all.fence()?;
        all.put(&[me as u32], ((r + 1) % p) as i32, 0)?;
        all.fence()?;
        let mut from_world = [0u32];
        all.get(&mut from_world, r as i32, 0)?;
        rec.push(from_world[0])?;
        win.fence()?;
        win.free()?;
        all.free()
    }
}

/// Puts one value into the next rank's one-element window `win` between
/// two fences and returns what arrived in this rank's.
fn ring_through(win: &Window<'_, u32>, value: u32) -> Result<u32, Error> {
    let next = (win.rank() + 1) % win.size();
    win.fence()?;
    win.put(&[value], next, 0)?;
    win.fence()?;
    let mut got = [0u32];
    win.get(&mut got, win.rank(), 0)?;
    win.fence_with(Mode::NO_SUCCEED)?;
    Ok(got[0])
}

gpu_mpi_device::kernel! {
    /// Window ids (launched with `WorldSpec::windows(3)`). `param`
    /// windows in sequence, each created, used ([`ring_through`]: 2
    /// words, its id and what arrived) and freed; then three windows at
    /// once (ids, 3 words), a fourth (its error, 5 words: every rank
    /// `WindowLimit`), the second freed and a fourth again, over this
    /// rank's part of `data` (its id and what came through it, 2 words),
    /// then all freed, and one more allocated (its id, 1 word).
    pub static RMA_WINDOW_IDS = fn rma_window_ids(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let mut rec = recorder(args, r as i32);
        for i in 0..args.param {
            let win = Window::<u32>::allocate(world, 1)?;
            rec.push(win.id())?;
            rec.push(ring_through(&win, 100 * i + r)?)?;
            win.free()?;
        }
        let a = Window::<u32>::allocate(world, 1)?;
        let b = Window::<u32>::allocate(world, 1)?;
        let c = Window::<u32>::allocate(world, 1)?;
        rec.words(&[a.id(), b.id(), c.id()])?;
        let too_many = Window::<u32>::allocate(world, 1).map(|w| w.id());
        rec.error_words(&too_many)?;
        b.free()?;
        let d = Window::<u32>::create(world, own(args, r, 1)?)?;
        rec.push(d.id())?;
        rec.push(ring_through(&d, 7000 + r)?)?;
        a.free()?;
        c.free()?;
        d.free()?;
        let e = Window::<u32>::allocate(world, 1)?;
        rec.push(e.id())?;
        e.free()
    }
}

gpu_mpi_device::kernel! {
    /// Allocations beyond `WorldSpec::window_bytes` (launched with 64):
    /// three times, rank `param` asks for 17 `u32`s and rank `param2` for
    /// 20, the others for 1 (errors, 5 words each: every rank
    /// `WindowAllocation`); then an allocation of `usize::MAX` `u32`s on
    /// rank `param` (5 words); then 16 `u32`s on every rank, which fit
    /// (its id and what came through it, 2 words), and 8 `u64`s on every
    /// rank with the 16 `u32`s alive (1 word: its class).
    pub static RMA_ALLOCATE_LIMIT = fn rma_allocate_limit(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let mut rec = recorder(args, r as i32);
        for _ in 0..3 {
            let len = if r == args.param {
                17
            } else if r == args.param2 {
                20
            } else {
                1
            };
            rec.error_words(&Window::<u32>::allocate(world, len).map(|_| ()))?;
        }
        let len = if r == args.param { usize::MAX } else { 1 };
        rec.error_words(&Window::<u32>::allocate(world, len).map(|_| ()))?;
        let win = Window::<u32>::allocate(world, 16)?;
        rec.push(win.id())?;
        rec.push(ring_through(&win, 500 + r)?)?;
        let wide = Window::<u64>::allocate(world, 8);
        rec.class(&wide)?;
        if let Ok(w) = wide {
            w.free()?;
        }
        win.free()
    }
}

gpu_mpi_device::kernel! {
    /// Windows over memory other ranks cannot reach (run on the emulator
    /// with `CpuOptions::local_stacks`, as on the GPU): the ranks of the
    /// bit mask `param` create theirs over an array on their stack, the
    /// others over their part of `data`; three times (errors, 5 words
    /// each: every rank `WindowMemory` naming the lowest such rank; `Ok`
    /// words where the creation succeeds, the window then freed). Then
    /// the same ranks with an empty slice of the stack array (class, 1
    /// word: it is reachable, having no element), and a window over every
    /// rank's part of `data` that works ([`ring_through`], 1 word).
    pub static RMA_STACK_MEMORY = fn rma_stack_memory(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank() as u32;
        let on_stack = r < 32 && args.param & (1 << r) != 0;
        let mut rec = recorder(args, r as i32);
        let mut stack = [0u32; 4];
        for _ in 0..3 {
            let made = if on_stack {
                Window::<u32>::create(world, &mut stack[..])
            } else {
                Window::<u32>::create(world, own(args, r, 4)?)
            };
            match made {
                Ok(w) => {
                    rec.error_words(&Ok(()))?;
                    w.free()?;
                }
                Err(e) => rec.error_words(&Err::<(), _>(e))?,
            }
        }
        let empty = if on_stack {
            Window::<u32>::create(world, &mut stack[..0])
        } else {
            Window::<u32>::create(world, own(args, r, 0)?)
        };
        rec.class(&empty)?;
        if let Ok(w) = empty {
            w.free()?;
        }
        let win = Window::<u32>::create(world, own(args, r, 1)?)?;
        rec.push(ring_through(&win, 900 + r)?)?;
        win.free()
    }
}

// ---- fence epochs --------------------------------------------------------

/// Most ranks of [`RMA_FENCE_TYPES`].
pub const FENCE_MAX_RANKS: usize = 64;

/// What rank `origin` puts at element `origin` of rank `target`'s window
/// in [`RMA_FENCE_TYPES`].
pub const fn fence_put_value(origin: u32, target: u32) -> i32 {
    (origin * 5 + target * 3 + 1) as i32
}

/// What rank `origin` adds to element `p + k` of rank 0's window in
/// [`RMA_FENCE_TYPES`].
pub const fn fence_sum_value(origin: u32, k: u32) -> i32 {
    ((origin + k) % 5 + 1) as i32
}

/// What rank `origin` stores (`MPI_REPLACE`) at element `p + origin` of
/// rank 1's window in [`RMA_FENCE_TYPES`].
pub const fn fence_replace_value(origin: u32) -> i32 {
    (100 + origin) as i32
}

fn fence_types<T: Elem>(world: &World, args: &RmaArgs) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let (r, p) = (world.rank() as u32, world.size() as u32);
    let n = p as usize;
    if !(2..=FENCE_MAX_RANKS).contains(&n) {
        return Err(Error::application(2));
    }
    let win = Window::<T>::create(world, own(args, r, 2 * n)?)?;
    win.fence()?;
    for i in 0..p {
        let t = (r + i) % p;
        win.put(&[T::of(fence_put_value(r, t))], t as i32, r as usize)?;
    }
    win.fence()?;
    let mut got = [T::of(0); FENCE_MAX_RANKS];
    win.get(&mut got[..n], ((r + 1) % p) as i32, 0)?;
    let sum = SystemOperation::sum();
    if r % 2 == 0 {
        for i in 0..p {
            let k = (i + r) % p;
            win.accumulate(&[T::of(fence_sum_value(r, k))], 0, n + k as usize, sum)?;
        }
    } else {
        let mut all = [T::of(0); FENCE_MAX_RANKS];
        for (k, a) in all[..n].iter_mut().enumerate() {
            *a = T::of(fence_sum_value(r, k as u32));
        }
        win.accumulate(&all[..n], 0, n, sum)?;
    }
    let replace = SystemOperation::replace();
    win.accumulate(&[T::of(fence_replace_value(r))], 1, n + r as usize, replace)?;
    win.fence()?;
    let mut rec = recorder(args, r as i32);
    for g in &got[..n] {
        let b = g.bits();
        rec.words(&[b as u32, (b >> 32) as u32])?;
    }
    win.free()
}

gpu_mpi_device::kernel! {
    /// Fence epochs on windows of element type `param` ([`T_U8`] ..=
    /// [`T_F64`]), `2 p` elements per rank over its part of `data`. First
    /// epoch: every rank `r` puts [`fence_put_value`]`(r, t)` at element
    /// `r` of every rank `t`. Second: every rank gets the first `p`
    /// elements of rank `r + 1` (recorded after the epoch, 2 words each:
    /// the bits), adds [`fence_sum_value`]`(r, k)` to element `p + k` of
    /// rank 0 for every `k` (even ranks one element at a time in rotated
    /// order, odd ranks in one call: on 1- and 2-byte types all of them
    /// contend for the same words), and stores [`fence_replace_value`]`(r)`
    /// at element `p + r` of rank 1 (`MPI_REPLACE`, neighbouring
    /// elements of other origins).
    pub static RMA_FENCE_TYPES = fn rma_fence_types(world: &World, args: &RmaArgs) -> Result<(), Error> {
        for_type!(args.param, fence_types(world, args))
    }
}

/// The predefined operations of the accumulates, in the order of the
/// models of check/tests/rma.rs: sum, product, min, max, band, bor, bxor,
/// land, lor, replace, no_op.
pub const OPS: [SystemOperation; 11] = [
    SystemOperation::sum(),
    SystemOperation::product(),
    SystemOperation::min(),
    SystemOperation::max(),
    SystemOperation::bitwise_and(),
    SystemOperation::bitwise_or(),
    SystemOperation::bitwise_xor(),
    SystemOperation::logical_and(),
    SystemOperation::logical_or(),
    SystemOperation::replace(),
    SystemOperation::no_op(),
];
/// Index of `MPI_REPLACE` in [`OPS`].
pub const OP_REPLACE_INDEX: usize = 9;
/// Elements of each operation's block in [`RMA_OPS`]' windows.
pub const OPS_K: usize = 4;

/// Whether operation `j` of [`OPS`] is bitwise or logical (not defined
/// on floating-point types).
pub const fn op_is_bitwise(j: usize) -> bool {
    j >= 4 && j <= 8
}

/// The origin value rank `r` combines into element `k` of operation `j`'s
/// block in [`RMA_OPS`]: small integers (exact in every type), powers of
/// two for the product (exact in floats), zeros for the logical ones.
pub const fn op_origin(j: usize, r: u32, k: usize) -> i32 {
    let (r, k) = (r as i32, k as i32);
    match j {
        0 => (r * 3 + k) % 7 + 1,
        1 => [1, -1, 2, 1][((r + k) % 4) as usize],
        2 | 3 => (r * 37 + k * 11) % 200 - 100,
        4..=6 => r * 37 + k * 11 + 5,
        7 | 8 => (r + k) % 3,
        9 => 1000 + r * 10 + k,
        _ => 55 + r,
    }
}

/// The initial value of element `k` of operation `j`'s block of rank
/// `t`'s window in [`RMA_OPS`].
pub const fn op_init(j: usize, t: u32, k: usize) -> i32 {
    let (t, k) = (t as i32, k as i32);
    match j {
        0 => k,
        1 => [1, -1, 3, 1][((t + k) % 4) as usize],
        2 | 3 => (t * 13 + k * 7) % 50 - 25,
        4..=6 => t * 31 + k * 17 + 3,
        7 | 8 => (t + k) % 2,
        _ => 7 + k,
    }
}

/// The rank that stores (`MPI_REPLACE`) element `k` of rank `t`'s block
/// in [`RMA_OPS`]: one origin per element.
pub const fn op_replacer(t: u32, k: usize, ranks: u32) -> u32 {
    (t + k as u32) % ranks
}

fn ops<T: Elem>(world: &World, args: &RmaArgs) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let (r, p) = (world.rank() as u32, world.size() as u32);
    let win = Window::<T>::create(world, own(args, r, OPS.len() * OPS_K)?)?;
    win.fence()?;
    for i in 0..p {
        let t = (r + i) % p;
        for (j, op) in OPS.iter().enumerate() {
            if T::FLOAT && op_is_bitwise(j) {
                continue;
            }
            if j == OP_REPLACE_INDEX {
                for k in 0..OPS_K {
                    if op_replacer(t, k, p) == r {
                        win.accumulate(&[T::of(op_origin(j, r, k))], t as i32, j * OPS_K + k, *op)?;
                    }
                }
                continue;
            }
            let mut origin = [T::of(0); OPS_K];
            for (k, o) in origin.iter_mut().enumerate() {
                *o = T::of(op_origin(j, r, k));
            }
            win.accumulate(&origin, t as i32, j * OPS_K, *op)?;
        }
    }
    let mut rec = recorder(args, r as i32);
    if r == 0 {
        let one = [T::of(1)];
        let mut res = [T::of(0)];
        for op in &OPS[4..9] {
            rec.error_words(&win.accumulate(&one, PROC_NULL, 0, *op))?;
        }
        rec.error_words(&win.get_accumulate(&one, &mut res, PROC_NULL, 0, OPS[6]))?;
        rec.error_words(&win.fetch_and_op(&one[0], &mut res[0], PROC_NULL, 0, OPS[7]))?;
        if T::FLOAT {
            rec.error_words(&win.accumulate(&one, 0, 4 * OPS_K, OPS[4]))?;
        } else {
            rec.error_words(&Ok(()))?;
        }
    }
    win.fence()?;
    win.free()
}

gpu_mpi_device::kernel! {
    /// Every predefined operation ([`OPS`]) on windows of element type
    /// `param`, [`OPS_K`] elements per operation over each rank's part of
    /// `data` (the host puts [`op_init`] there): in one fence epoch every
    /// rank combines [`op_origin`] into every rank's block of every
    /// operation (bitwise and logical ones skipped on floats;
    /// `MPI_REPLACE` from [`op_replacer`] only). Rank 0 records (5 words
    /// each) the errors of the five bitwise and logical accumulates to
    /// `PROC_NULL`, of a `get_accumulate` with bxor and a `fetch_and_op`
    /// with land to `PROC_NULL`, and on floats of a band accumulate to
    /// rank 0 (`Ok` words on integers).
    pub static RMA_OPS = fn rma_ops(world: &World, args: &RmaArgs) -> Result<(), Error> {
        for_type!(args.param, ops(world, args))
    }
}

// ---- synchronisation errors ----------------------------------------------

gpu_mpi_device::kernel! {
    /// The synchronisation rules, on a window of 4 `u32`s per rank (at
    /// least 9 ranks): every rank records the result (5 words) of each
    /// step that check/tests/rma.rs's `sync_errors` lists, in order: operations
    /// before any fence, flushes and unlocks outside a passive epoch, a
    /// put in a fence epoch and after `NO_SUCCEED`, locks twice, more than
    /// `MAX_LOCKS` targets, `lock_all` over a lock and the reverse, a
    /// fence while rank `param` holds a lock (then `lock_all`), and a free
    /// while it holds one; then a new window's id. With `param2` 1 the
    /// windows are on a duplicate of the world (a sub-communicator of the
    /// same ranks: its fences and frees take the window's own barrier).
    pub static RMA_SYNC_ERRORS = fn rma_sync_errors(world: &World, args: &RmaArgs) -> Result<(), Error> {
        if args.param2 == 1 {
            sync_steps(&world.duplicate()?, args)
        } else {
            sync_steps(world, args)
        }
    }
}

/// [`RMA_SYNC_ERRORS`]'s steps on `world` or a communicator of the same
/// ranks in the same order.
fn sync_steps<C: Communicator>(world: &C, args: &RmaArgs) -> Result<(), Error> {
    let (r, p) = (world.rank(), world.size());
    let next = (r + 1) % p;
    let at = |k: i32| (r + k) % p;
    let holder = args.param as i32;
    let mut rec = recorder(args, r);
    let win = Window::<u32>::allocate(world, 4)?;
    let mut one = [0u32];
    let sum = SystemOperation::sum();
    // Before any fence.
    rec.error_words(&win.put(&[1], next, 0))?;
    rec.error_words(&win.get(&mut one, next, 0))?;
    rec.error_words(&win.accumulate(&[1], next, 0, sum))?;
    rec.error_words(&win.fetch_and_op(&1, &mut one[0], next, 0, sum))?;
    rec.error_words(&win.compare_and_swap(&1, &0, &mut one[0], next, 0))?;
    rec.error_words(&win.get_accumulate(&[1], &mut one, next, 0, sum))?;
    rec.error_words(&win.put_notify(&[1], next, 0, 0))?;
    rec.error_words(&win.flush(next))?;
    rec.error_words(&win.flush_all())?;
    rec.error_words(&win.flush_local(next))?;
    rec.error_words(&win.flush_local_all())?;
    rec.error_words(&win.unlock(next))?;
    rec.error_words(&win.unlock_all())?;
    // A fence epoch, closed by NO_SUCCEED.
    rec.error_words(&win.fence_with(Mode::NO_PRECEDE | Mode::NO_STORE))?;
    rec.error_words(&win.put(&[1], next, 0))?;
    rec.error_words(&win.flush(next))?;
    rec.error_words(&win.fence_with(Mode::NO_SUCCEED | Mode::NO_PUT))?;
    rec.error_words(&win.put(&[1], next, 0))?;
    rec.error_words(&win.get(&mut one, next, 0))?;
    // Passive target.
    rec.error_words(&win.lock(LockType::Exclusive, next))?;
    rec.error_words(&win.lock(LockType::Shared, next))?;
    rec.error_words(&win.put(&[2], next, 1))?;
    rec.error_words(&win.put(&[2], at(2), 1))?;
    rec.error_words(&win.flush(next))?;
    rec.error_words(&win.flush(at(2)))?;
    rec.error_words(&win.flush_local_all())?;
    rec.error_words(&win.lock_all())?;
    rec.error_words(&win.unlock(next))?;
    rec.error_words(&win.unlock(next))?;
    world.barrier()?;
    let held = MAX_LOCKS as i32;
    let mut locked = [Ok(()); MAX_LOCKS as usize];
    for (k, l) in locked.iter_mut().enumerate() {
        *l = win.lock(LockType::Shared, at(1 + k as i32));
    }
    rec.error_words(&first_error(&locked))?;
    rec.error_words(&win.lock(LockType::Shared, at(1 + held)))?;
    rec.error_words(&win.lock_all())?;
    let mut unlocked = [Ok(()); MAX_LOCKS as usize];
    for (k, u) in unlocked.iter_mut().enumerate() {
        *u = win.unlock(at(1 + k as i32));
    }
    rec.error_words(&first_error(&unlocked))?;
    world.barrier()?;
    rec.error_words(&win.lock_all())?;
    rec.error_words(&win.lock(LockType::Shared, next))?;
    rec.error_words(&win.unlock(next))?;
    rec.error_words(&win.put(&[3], next, 2))?;
    rec.error_words(&win.flush(next))?;
    rec.error_words(&win.flush_all())?;
    rec.error_words(&win.lock_all())?;
    rec.error_words(&win.unlock_all())?;
    rec.error_words(&win.unlock_all())?;
    // A fence while rank `holder` holds a lock, then lock_all.
    if r == holder {
        win.lock(LockType::Shared, 0)?;
    }
    rec.error_words(&win.fence())?;
    if r == holder {
        win.unlock(0)?;
    }
    rec.error_words(&win.fence())?;
    if r == holder {
        win.lock_all()?;
    }
    rec.error_words(&win.fence_with(Mode::NO_SUCCEED))?;
    if r == holder {
        win.unlock_all()?;
    }
    rec.error_words(&win.fence_with(Mode::NO_SUCCEED))?;
    // A free while rank `holder` holds a lock: every rank fails, and
    // the window's id stays taken.
    if r == holder {
        win.lock(LockType::Exclusive, next)?;
    }
    let first = win.id();
    rec.error_words(&win.free())?;
    let again = Window::<u32>::allocate(world, 1)?;
    rec.push((again.id() != first) as u32)?;
    again.free()
}

// ---- bad input -----------------------------------------------------------

gpu_mpi_device::kernel! {
    /// Bad arguments on windows of 4 `u32`s over each rank's part of
    /// `data` (at least 3 ranks): every rank records (5 words each) the
    /// results of the steps that check/tests/rma.rs's
    /// `bad_arguments_fail_alone_and_write_nothing` lists, in order: calls on
    /// `PROC_NULL` before any fence, ranges past the end of rank `r + 1`'s
    /// window, invalid ranks, `get_accumulate` with mismatched lengths,
    /// counters out of range; then what the failed gets left in their
    /// buffers, and the notifications counter 0 holds after a fence (2
    /// words). Nothing may change any window.
    pub static RMA_BAD_INPUT = fn rma_bad_input(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let next = (r + 1) % p;
        let mut rec = recorder(args, r);
        let win = Window::<u32>::create(world, own(args, r as u32, 4)?)?;
        let sum = SystemOperation::sum();
        let mut two = [NONE; 2];
        let mut one = NONE;
        let null = PROC_NULL;
        // PROC_NULL, before any epoch: every call does nothing.
        let calls = [
            win.put(&[5, 5], null, 0),
            win.get(&mut two, null, 0),
            win.accumulate(&[5], null, 0, sum),
            win.get_accumulate(&[5, 5], &mut two, null, 0, sum),
            win.fetch_and_op(&5, &mut one, null, 0, sum),
            win.compare_and_swap(&5, &0, &mut one, null, 0),
            win.put_notify(&[5], null, 0, 0),
            win.accumulate_notify(&[5], null, 0, sum, 1),
            win.lock(LockType::Exclusive, null),
            win.flush(null),
            win.flush_local(null),
            win.unlock(null),
        ];
        rec.error_words(&first_error(&calls))?;
        rec.words(&[two[0], two[1], one])?;
        win.fence()?;
        // Ranges: 4 elements (16 bytes) per window.
        rec.error_words(&win.put(&[5, 5], next, 3))?;
        rec.error_words(&win.get(&mut two, next, 3))?;
        rec.error_words(&win.accumulate(&[5, 5], next, 3, sum))?;
        rec.error_words(&win.get_accumulate(&[5, 5], &mut two, next, 3, sum))?;
        rec.error_words(&win.fetch_and_op(&5, &mut one, next, 4, sum))?;
        rec.error_words(&win.compare_and_swap(&5, &0, &mut one, next, 4))?;
        rec.error_words(&win.put_notify(&[5], next, 4, 0))?;
        rec.error_words(&win.accumulate_notify(&[5], next, 4, sum, 0))?;
        rec.error_words(&win.put(&[5], next, usize::MAX))?;
        rec.error_words(&win.put(&[5; 5], next, 0))?;
        rec.error_words(&win.put(&[], next, 4))?;
        rec.error_words(&win.put(&[], next, 5))?;
        rec.error_words(&win.get(&mut two[..0], next, 4))?;
        // Ranks.
        rec.error_words(&win.put(&[5], p, 0))?;
        rec.error_words(&win.get(&mut two, -5, 0))?;
        rec.error_words(&win.accumulate(&[5], p + 3, 0, sum))?;
        rec.error_words(&win.fetch_and_op(&5, &mut one, p, 0, sum))?;
        rec.error_words(&win.lock(LockType::Exclusive, p))?;
        rec.error_words(&win.put_notify(&[5], -7, 0, 0))?;
        // Lengths.
        let mut three = [NONE; 3];
        rec.error_words(&win.get_accumulate(&[5, 5], &mut three, next, 0, sum))?;
        rec.error_words(&win.get_accumulate(&[5, 5], &mut three[..1], PROC_NULL, 0, sum))?;
        // Counters.
        let n = NOTIFICATIONS;
        rec.error_words(&win.put_notify(&[5], next, 0, n))?;
        rec.error_words(&win.accumulate_notify(&[5], next, 0, sum, n + 1))?;
        rec.error_words(&win.put_notify(&[5], PROC_NULL, 0, n))?;
        rec.error_words(&win.wait_notifications(n, 1))?;
        rec.error_words(&win.test_notifications(100))?;
        win.fence()?;
        rec.words(&[two[0], two[1], one, three[0], three[1], three[2]])?;
        rec.push(win.test_notifications(0)?)?;
        rec.push(win.test_notifications(1)?)?;
        win.free()
    }
}

gpu_mpi_device::kernel! {
    /// Windows of different element types on different ranks (an error of
    /// the program, which the library finds at the operation): even ranks
    /// make a window of 2 `u32`s, odd ranks of 2 `f32`s (the same size),
    /// collectively. Every rank records (5 words each) a put, get,
    /// accumulate, `fetch_and_op` and `compare_and_swap` to rank `r + 1`
    /// (the other type) and a put to rank `r + 2` (the same type).
    pub static RMA_TYPE_MISMATCH = fn rma_type_mismatch(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        let mut rec = recorder(args, r);
        if r % 2 == 0 {
            mismatch::<u32>(world, &mut rec)
        } else {
            mismatch::<f32>(world, &mut rec)
        }
    }
}

fn mismatch<T: Elem>(world: &World, rec: &mut Recorder) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let (r, p) = (world.rank(), world.size());
    let win = Window::<T>::allocate(world, 2)?;
    let (other, same) = ((r + 1) % p, (r + 2) % p);
    let sum = SystemOperation::sum();
    let mut one = [T::of(0)];
    win.fence()?;
    rec.error_words(&win.put(&[T::of(1)], other, 0))?;
    rec.error_words(&win.get(&mut one, other, 0))?;
    rec.error_words(&win.accumulate(&[T::of(1)], other, 0, sum))?;
    rec.error_words(&win.fetch_and_op(&T::of(1), &mut one[0], other, 0, sum))?;
    rec.error_words(&win.compare_and_swap(&T::of(1), &T::of(0), &mut one[0], other, 0))?;
    rec.error_words(&win.put(&[T::of(1)], same, 1))?;
    win.fence()?;
    win.free()
}

// ---- passive target ------------------------------------------------------

/// [`RMA_LOCK_COUNTER`]'s `param2`: exclusive locks (the test).
pub const COUNTER_EXCLUSIVE: u32 = 0;
/// [`RMA_LOCK_COUNTER`]'s `param2`: shared locks (no mutual exclusion:
/// the updates race, which shows that the test can fail).
pub const COUNTER_SHARED: u32 = 1;

gpu_mpi_device::kernel! {
    /// A counter in rank 0's window, incremented `param` times by every
    /// rank with lock, get, (a yield, so that other ranks run inside the
    /// critical section), put of the value + 1, unlock: exclusive locks,
    /// or shared ones (`param2`, [`COUNTER_EXCLUSIVE`] or
    /// [`COUNTER_SHARED`]). Every rank records each value it read
    /// (`param` words); after a barrier rank 0 records the counter (1
    /// word more, [`NONE`] on the others).
    pub static RMA_LOCK_COUNTER = fn rma_lock_counter(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        let kind = if args.param2 == COUNTER_SHARED {
            LockType::Shared
        } else {
            LockType::Exclusive
        };
        let mut rec = recorder(args, r);
        let win = Window::<u64>::allocate(world, 1)?;
        for _ in 0..args.param {
            win.lock(kind, 0)?;
            let mut value = [0u64];
            win.get(&mut value, 0, 0)?;
            yield_rank(world)?;
            win.put(&[value[0] + 1], 0, 0)?;
            win.unlock(0)?;
            rec.push(value[0] as u32)?;
        }
        world.barrier()?;
        if r == 0 {
            win.lock(LockType::Exclusive, 0)?;
            let mut total = [0u64];
            win.get(&mut total, 0, 0)?;
            win.unlock(0)?;
            rec.push(total[0] as u32)?;
        } else {
            rec.push(NONE)?;
        }
        win.free()
    }
}

gpu_mpi_device::kernel! {
    /// Atomic counters in rank 0's window of 5 `u64`s, under shared locks
    /// of rank 0 from every rank at once, `param` rounds: element 0 by
    /// `fetch_and_op` + 1, elements 3 and 4 by one `get_accumulate` + 1 of
    /// both; then element 1 by `accumulate` of `r + 1`, element 2 by a
    /// `fetch_and_op` replace with `r + 1` (a swap). Every rank records,
    /// per round, the values fetched from elements 0, 3 and 4 (3 words),
    /// then the value it swapped out of element 2 (1 word). After a
    /// barrier rank 0 reads the five elements with a `get_accumulate`
    /// with no_op (5 words, [`NONE`] elsewhere).
    pub static RMA_SHARED_COUNTERS = fn rma_shared_counters(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        let mut rec = recorder(args, r);
        let win = Window::<u64>::allocate(world, 5)?;
        let sum = SystemOperation::sum();
        win.lock(LockType::Shared, 0)?;
        for _ in 0..args.param {
            let mut old = 0u64;
            win.fetch_and_op(&1, &mut old, 0, 0, sum)?;
            let mut pair = [0u64; 2];
            win.get_accumulate(&[1, 1], &mut pair, 0, 3, sum)?;
            rec.words(&[old as u32, pair[0] as u32, pair[1] as u32])?;
            yield_rank(world)?;
        }
        win.accumulate(&[r as u64 + 1], 0, 1, sum)?;
        let mut swapped = 0u64;
        win.fetch_and_op(&(r as u64 + 1), &mut swapped, 0, 2, SystemOperation::replace())?;
        rec.push(swapped as u32)?;
        win.flush(0)?;
        win.unlock(0)?;
        world.barrier()?;
        if r == 0 {
            win.lock(LockType::Exclusive, 0)?;
            let mut all = [u64::MAX; 5];
            win.get_accumulate(&[0; 5], &mut all, 0, 0, SystemOperation::no_op())?;
            win.unlock(0)?;
            for v in all {
                rec.push(v as u32)?;
            }
        } else {
            rec.words(&[NONE; 5])?;
        }
        win.free()
    }
}

gpu_mpi_device::kernel! {
    /// `compare_and_swap` under `lock_all`, on windows over each rank's
    /// part of `data` (`p + 2` `u32`s, zero). Every rank claims a slot of
    /// rank 0's first `p` (the first whose swap of 0 for `r + 1`
    /// succeeds, scanning from slot 0; records the slot, 1 word); then a
    /// spin lock in rank 1's element `p` guards, `param` times, a get,
    /// yield, put of + 1 and flush of rank 1's element `p + 1` (records
    /// the swaps that found the lock taken, 1 word). The host reads the
    /// windows.
    pub static RMA_CAS = fn rma_cas(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let n = p as usize;
        let mut rec = recorder(args, r);
        let win = Window::<u32>::create(world, own(args, r as u32, n + 2)?)?;
        win.lock_all()?;
        let me = r as u32 + 1;
        let mut claimed = NONE;
        for slot in 0..n {
            let mut old = NONE;
            win.compare_and_swap(&me, &0, &mut old, 0, slot)?;
            win.flush(0)?;
            if old == 0 {
                claimed = slot as u32;
                break;
            }
        }
        rec.push(claimed)?;
        let (lock, counter) = (n, n + 1);
        let mut busy = 0u32;
        for _ in 0..args.param {
            loop {
                let mut old = NONE;
                win.compare_and_swap(&me, &0, &mut old, 1, lock)?;
                win.flush(1)?;
                if old == 0 {
                    break;
                }
                busy += 1;
                yield_rank(world)?;
            }
            let mut value = [0u32];
            win.get(&mut value, 1, counter)?;
            yield_rank(world)?;
            win.put(&[value[0] + 1], 1, counter)?;
            win.flush(1)?;
            let mut was = 0u32;
            win.compare_and_swap(&0, &me, &mut was, 1, lock)?;
            win.flush(1)?;
            if was != me {
                return Err(Error::application(3));
            }
        }
        rec.push(busy)?;
        win.unlock_all()?;
        world.barrier()?;
        win.free()
    }
}

// ---- notified access -----------------------------------------------------

/// Elements of a payload of [`RMA_NOTIFY_HANDOFF`].
pub const HANDOFF_WORDS: usize = 32;

/// Element `i` of round `j`'s payload of [`RMA_NOTIFY_HANDOFF`] from
/// producer `r`.
pub const fn handoff_value(r: u32, j: u32, i: usize) -> u64 {
    ((r as u64) << 40) | ((j as u64) << 20) | (i as u64 + 1)
}

gpu_mpi_device::kernel! {
    /// Producer and consumer pairs (`2i`, `2i + 1`) under `lock_all`,
    /// `param` rounds: the producer puts a payload of [`HANDOFF_WORDS`]
    /// `u64`s ([`handoff_value`]) with `put_notify` on counter 0 into one
    /// half of the consumer's window (halves alternate), then waits for
    /// the consumer's acknowledgement (an empty `put_notify` on its
    /// counter 1); the consumer waits for counter 0, checks the payload in
    /// its window, acknowledges. Records: the consumer the number of
    /// wrong elements, the producer the notifications left on counter 1
    /// (both then 0), and both the result of a `flush_local_all` and
    /// `sync` under `lock_all` (class).
    pub static RMA_NOTIFY_HANDOFF = fn rma_notify_handoff(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        let partner = r ^ 1;
        let mut rec = recorder(args, r);
        let mut win = Window::<u64>::allocate(world, 2 * HANDOFF_WORDS)?;
        win.lock_all()?;
        let mut wrong = 0u32;
        if r % 2 == 0 {
            let mut payload = [0u64; HANDOFF_WORDS];
            for j in 0..args.param {
                for (i, v) in payload.iter_mut().enumerate() {
                    *v = handoff_value(r as u32, j, i);
                }
                let half = (j as usize % 2) * HANDOFF_WORDS;
                win.put_notify(&payload, partner, half, 0)?;
                win.wait_notifications(1, 1)?;
            }
            wrong = win.test_notifications(1)?;
        } else {
            for j in 0..args.param {
                win.wait_notifications(0, 1)?;
                let half = (j as usize % 2) * HANDOFF_WORDS;
                let mine = win.local_mut();
                for (i, v) in mine[half..half + HANDOFF_WORDS].iter().enumerate() {
                    if *v != handoff_value(partner as u32, j, i) {
                        wrong += 1;
                    }
                }
                win.put_notify(&[], partner, 0, 1)?;
            }
        }
        rec.push(wrong)?;
        rec.class(&win.flush_local_all())?;
        win.sync();
        win.unlock_all()?;
        win.free()
    }
}

/// What producer `r` puts in its `j`-th slot of rank 0's window in
/// [`RMA_NOTIFY_MANY`].
pub const fn many_value(r: u32, j: u32) -> u32 {
    r * 1000 + j + 1
}

gpu_mpi_device::kernel! {
    /// Many producers, one consumer, under `lock_all`: rank 0's window
    /// holds a slot per producer and round plus one sum, the others' are
    /// empty. Every rank `r > 0` puts [`many_value`]`(r, j)` for `j <
    /// param` with `put_notify` on counter 2 of rank 0, adds `r` with
    /// `accumulate_notify` on counter 3, flushes; rank 0 waits for all on
    /// counter 2 and 3. After a barrier every producer sends one more
    /// notification (an empty put on counter 4); after a second barrier
    /// rank 0 tests counter 4. Rank 0 records: counter 2 tested before
    /// waiting (at most `(p - 1) param`), the wrong slots, the sum, counter
    /// 2 tested after the wait, counter 4 tested, counter 4 after a wait
    /// for that many, counter 5 (never used); producers record the results
    /// of `flush(0)`, `flush_all`, `flush_local(0)` (classes).
    pub static RMA_NOTIFY_MANY = fn rma_notify_many(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let m = args.param as usize;
        let producers = (p - 1) as usize;
        let total = producers * m;
        let mut rec = recorder(args, r);
        let len = if r == 0 { total + 1 } else { 0 };
        let mut win = Window::<u32>::allocate(world, len)?;
        win.lock_all()?;
        if r == 0 {
            rec.push(win.test_notifications(2)?)?;
            win.wait_notifications(2, total as u32)?;
            win.wait_notifications(3, producers as u32)?;
            let mut wrong = 0u32;
            let mine = win.local_mut();
            for q in 1..p as u32 {
                for j in 0..m {
                    if mine[(q as usize - 1) * m + j] != many_value(q, j as u32) {
                        wrong += 1;
                    }
                }
            }
            let sum = mine[total];
            rec.words(&[wrong, sum])?;
            rec.push(win.test_notifications(2)?)?;
        } else {
            let base = (r as usize - 1) * m;
            for j in 0..m {
                win.put_notify(&[many_value(r as u32, j as u32)], 0, base + j, 2)?;
            }
            win.accumulate_notify(&[r as u32], 0, total, SystemOperation::sum(), 3)?;
            rec.class(&win.flush(0))?;
            rec.class(&win.flush_all())?;
            rec.class(&win.flush_local(0))?;
        }
        world.barrier()?;
        if r != 0 {
            win.put_notify(&[], 0, 0, 4)?;
        }
        world.barrier()?;
        if r == 0 {
            let arrived = win.test_notifications(4)?;
            rec.push(arrived)?;
            win.wait_notifications(4, arrived)?;
            rec.push(win.test_notifications(4)?)?;
            rec.push(win.test_notifications(5)?)?;
        }
        win.unlock_all()?;
        win.free()
    }
}

// ---- deadlocks -----------------------------------------------------------

/// [`RMA_DEADLOCK`]: rank 0 returns holding an exclusive lock of itself,
/// the others wait for it.
pub const DEADLOCK_LOCK_HELD: u32 = 0;
/// [`RMA_DEADLOCK`]: rank 0 waits for a notification nobody sends.
pub const DEADLOCK_NOTIFICATION: u32 = 1;
/// [`RMA_DEADLOCK`]: rank 0 holds its lock and waits for a notification
/// that rank 1 sends only once it has the lock.
pub const DEADLOCK_CYCLE: u32 = 2;
/// [`RMA_DEADLOCK`]: rank 0 returns; the others enter a fence.
pub const DEADLOCK_FENCE: u32 = 3;
/// [`RMA_DEADLOCK`]: rank 0 returns; the others free the window.
pub const DEADLOCK_FREE: u32 = 4;
/// [`RMA_DEADLOCK`]: as [`DEADLOCK_FENCE`] on a duplicate of the world.
pub const DEADLOCK_SUB_FENCE: u32 = 5;
/// [`RMA_DEADLOCK`]: as [`DEADLOCK_FREE`] on a duplicate of the world.
pub const DEADLOCK_SUB_FREE: u32 = 6;

gpu_mpi_device::kernel! {
    /// One-sided deadlocks for the host's report (`param`:
    /// [`DEADLOCK_LOCK_HELD`], [`DEADLOCK_NOTIFICATION`],
    /// [`DEADLOCK_CYCLE`], [`DEADLOCK_FENCE`], [`DEADLOCK_FREE`],
    /// [`DEADLOCK_SUB_FENCE`], [`DEADLOCK_SUB_FREE`]), on an allocated
    /// window of one `u32` per rank.
    pub static RMA_DEADLOCK = fn rma_deadlock(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        match args.param {
            DEADLOCK_FREE => return abandon(world, true),
            DEADLOCK_SUB_FENCE => return abandon(&world.duplicate()?, false),
            DEADLOCK_SUB_FREE => return abandon(&world.duplicate()?, true),
            _ => {}
        }
        let win = Window::<u32>::allocate(world, 1)?;
        match args.param {
            DEADLOCK_LOCK_HELD => {
                if r == 0 {
                    win.lock(LockType::Exclusive, 0)?;
                }
                world.barrier()?;
                if r != 0 {
                    win.lock(LockType::Exclusive, 0)?;
                    win.unlock(0)?;
                }
                Ok(())
            }
            DEADLOCK_NOTIFICATION => {
                if r == 0 {
                    win.wait_notifications(3, 1)?;
                }
                Ok(())
            }
            DEADLOCK_FENCE => {
                if r != 0 {
                    win.fence()?;
                }
                Ok(())
            }
            _ => {
                if r == 0 {
                    win.lock(LockType::Exclusive, 0)?;
                }
                world.barrier()?;
                if r == 0 {
                    win.wait_notifications(2, 1)?;
                    win.unlock(0)?;
                } else if r == 1 {
                    win.lock(LockType::Exclusive, 0)?;
                    win.put_notify(&[1], 0, 0, 2)?;
                    win.unlock(0)?;
                }
                Ok(())
            }
        }
    }
}

/// A window on `comm` that its rank 0 leaves at once, while the others
/// fence it (`free`: free it).
fn abandon<C: Communicator>(comm: &C, free: bool) -> Result<(), Error> {
    let win = Window::<u32>::allocate(comm, 1)?;
    if comm.rank() == 0 {
        return Ok(());
    }
    if free {
        win.free()
    } else {
        win.fence()
    }
}

/// [`RMA_FAILS`]: rank 1 returns the error of a put past the end of rank
/// 2's window.
pub const FAIL_RANGE: u32 = 0;
/// [`RMA_FAILS`]: every rank returns the error of a fence while rank 0
/// holds a lock.
pub const FAIL_FENCE_WITH_LOCK: u32 = 1;
/// [`RMA_FAILS`]: no failure: every one-sided operation and epoch once,
/// for the traces of check/tests/trace.rs (here, so that it costs no
/// kernel of its own); see `traced`.
pub const TRACED_PROGRAM: u32 = 2;
/// Words [`TRACED_PROGRAM`] records per rank.
pub const TRACED_SLOTS: u32 = 10;

gpu_mpi_device::kernel! {
    /// Errors returned from the kernel, for the host's report (`param`:
    /// [`FAIL_RANGE`], [`FAIL_FENCE_WITH_LOCK`]), on an allocated window
    /// of 4 `u32`s per rank (at least 3 ranks); or, with
    /// [`TRACED_PROGRAM`], `traced` on that window.
    pub static RMA_FAILS = fn rma_fails(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let r = world.rank();
        let win = Window::<u32>::allocate(world, 4)?;
        if args.param == TRACED_PROGRAM {
            return traced(world, win, args);
        }
        if args.param == FAIL_RANGE {
            win.fence()?;
            let put = if r == 1 { win.put(&[1, 2], 2, 3) } else { Ok(()) };
            win.fence()?;
            win.free()?;
            put
        } else {
            if r == 0 {
                win.lock(LockType::Shared, 0)?;
            }
            win.fence()
        }
    }
}

/// [`TRACED_PROGRAM`] on rank `r` of `p` (`next` = `r + 1 mod p`, `prev`
/// = `r - 1 mod p`), on a window of 4 `u32`s per rank, each step's events
/// in check/tests/trace.rs's `rma_events`:
///
/// 1. a fence; put `r + 1` into `next`'s element 1; a fence; get it back;
///    a fence with `NO_SUCCEED`;
/// 2. an exclusive lock of `next`: accumulate (sum) `[1, 1]` into its
///    elements 2 and 3, `get_accumulate` (no_op) element 2; unlock;
/// 3. a shared lock of rank 0: `fetch_and_op` + 1 on its element 0; unlock;
/// 4. `lock_all`: `compare_and_swap` 7 for 1 in `next`'s element 3, `rget`
///    it, `put_notify` `r + 200` into element 1 and `accumulate_notify` 5
///    into element 2, both on counter 1; `unlock_all`;
/// 5. wait for 2 notifications on counter 1;
/// 6. `post` to `[prev]`, `start` `[next]`, get `next`'s element 1,
///    `complete`, `wait`;
/// 7. a fence, then `free`.
///
/// Records: the window id, the first get (`r + 1`), the `get_accumulate`
/// (1), the compare-and-swap's old value (1), the `rget` (7), the last
/// get (`r + 200`), and its own four elements after the last fence
/// (rank 0's element 0: `p`, else 0; `prev + 200`, 6, 7).
fn traced(world: &World, mut win: Window<'_, u32>, args: &RmaArgs) -> Result<(), Error> {
    let (r, p) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
    let sum = SystemOperation::sum();
    let mut rec = recorder(args, r);
    rec.push(win.id())?;
    let mut one = [0u32];
    win.fence()?;
    win.put(&[r as u32 + 1], next, 1)?;
    win.fence()?;
    win.get(&mut one, next, 1)?;
    rec.push(one[0])?;
    win.fence_with(Mode::NO_SUCCEED)?;
    win.lock(LockType::Exclusive, next)?;
    win.accumulate(&[1, 1], next, 2, sum)?;
    win.get_accumulate(&[0], &mut one, next, 2, SystemOperation::no_op())?;
    rec.push(one[0])?;
    win.unlock(next)?;
    win.lock(LockType::Shared, 0)?;
    let mut old = 0u32;
    win.fetch_and_op(&1, &mut old, 0, 0, sum)?;
    win.unlock(0)?;
    win.lock_all()?;
    win.compare_and_swap(&7, &1, &mut old, next, 3)?;
    rec.push(old)?;
    win.rget(&mut one, next, 3)?.wait()?;
    rec.push(one[0])?;
    win.put_notify(&[r as u32 + 200], next, 1, 1)?;
    win.accumulate_notify(&[5], next, 2, sum, 1)?;
    win.unlock_all()?;
    win.wait_notifications(1, 2)?;
    let exposure = win.post(&[prev])?;
    let targets = [next];
    let access = win.start(&targets)?;
    win.get(&mut one, next, 1)?;
    access.complete()?;
    exposure.wait()?;
    rec.push(one[0])?;
    win.fence()?;
    rec.words(win.local_mut())?;
    win.free()
}

// ---- random programs -------------------------------------------------------

/// A one-sided program's put (check/tests/proptest_rma.rs): elements
/// `value + i`.
pub const PROGRAM_PUT: u32 = 0;
/// A get, recorded at `out[value ..]` (2 words per element: the bits).
pub const PROGRAM_GET: u32 = 1;
/// An accumulate with sum of elements `value + i`.
pub const PROGRAM_SUM: u32 = 2;
/// An accumulate with replace of elements `value + i`.
pub const PROGRAM_REPLACE: u32 = 3;
/// A `get_accumulate` with no_op, recorded as a get.
pub const PROGRAM_FETCH: u32 = 4;
/// A bit of a program operation's kind: the operation is typed
/// (`put_typed` and the others): its target is `vector(len, 1, stride)` of
/// the element type at the displacement (the stride, an `i8`, in bits
/// [`PROGRAM_STRIDE_SHIFT`]..), its origin or result every other element
/// of a local buffer (a `View` or `MutView` of `vector(len, 1, 2)`).
pub const PROGRAM_TYPED: u32 = 1 << 8;
/// Where a typed operation's stride is in its kind.
pub const PROGRAM_STRIDE_SHIFT: u32 = 16;
/// Words of one operation of a program: origin, kind, target, element
/// displacement, length, value.
pub const PROGRAM_OP_WORDS: usize = 6;
/// Most elements of one operation.
pub const PROGRAM_MAX_LEN: usize = 8;

/// The arguments of [`RMA_PROGRAM`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RmaProgram {
    /// The program: the number of epochs, each rank's window length, then
    /// per epoch the number of operations and the operations
    /// ([`PROGRAM_OP_WORDS`] each).
    pub program: GlobalSlice<u32>,
    /// Window memory, as [`RmaArgs::data`].
    pub data: GlobalSlice<u64>,
    /// The gets' records.
    pub out: GlobalSlice<u32>,
    /// Words of `data` per rank.
    pub part: u32,
    /// The element type ([`T_U8`] ..= [`T_F64`]).
    pub elem: u32,
}

fn program<T: Elem>(world: &World, args: &RmaProgram) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let r = world.rank() as u32;
    let p = world.size() as usize;
    let code = &args.program;
    let epochs = code.read(0)?;
    let len = code.read(1 + r as usize)? as usize;
    let win = Window::<T>::create(world, part(&args.data, args.part, r, 0, len)?)?;
    let mut at = 1 + p;
    win.fence()?;
    for _ in 0..epochs {
        let n = code.read(at)? as usize;
        at += 1;
        for _ in 0..n {
            let mut w = [0u32; PROGRAM_OP_WORDS];
            for (k, x) in w.iter_mut().enumerate() {
                *x = code.read(at + k)?;
            }
            at += PROGRAM_OP_WORDS;
            let [origin, kind, target, disp, count, value] = w;
            if origin != r {
                continue;
            }
            let count = (count as usize).min(PROGRAM_MAX_LEN);
            let (target, disp) = (target as i32, disp as usize);
            if kind & PROGRAM_TYPED != 0 {
                typed_program_op(&win, args, kind, target, disp, count, value)?;
                continue;
            }
            let mut buf = [T::of(0); PROGRAM_MAX_LEN];
            for (i, b) in buf[..count].iter_mut().enumerate() {
                *b = T::of(value as i32 + i as i32);
            }
            match kind {
                PROGRAM_PUT => win.put(&buf[..count], target, disp)?,
                PROGRAM_SUM => win.accumulate(&buf[..count], target, disp, SystemOperation::sum())?,
                PROGRAM_REPLACE => win.accumulate(&buf[..count], target, disp, SystemOperation::replace())?,
                _ => {
                    let mut got = [T::of(0); PROGRAM_MAX_LEN];
                    if kind == PROGRAM_GET {
                        win.get(&mut got[..count], target, disp)?;
                    } else {
                        let no_op = SystemOperation::no_op();
                        win.get_accumulate(&buf[..count], &mut got[..count], target, disp, no_op)?;
                    }
                    for (i, g) in got[..count].iter().enumerate() {
                        let b = g.bits();
                        args.out.write(value as usize + 2 * i, b as u32)?;
                        args.out.write(value as usize + 2 * i + 1, (b >> 32) as u32)?;
                    }
                }
            }
        }
        win.fence()?;
    }
    win.free()
}

/// A typed operation of a program ([`PROGRAM_TYPED`]).
fn typed_program_op<T: Elem>(
    win: &Window<'_, T>,
    args: &RmaProgram,
    kind: u32,
    target: i32,
    disp: usize,
    count: usize,
    value: u32,
) -> Result<(), Error>
where
    SystemOperation: Operation<T>,
{
    let stride = (kind >> PROGRAM_STRIDE_SHIFT) as u8 as i8 as i32;
    let target_words = gpu_mpi_device::derived::vector::<T>(count as u32, 1, stride);
    let ty = TypeRef::new(&target_words)?;
    let to = TargetView::new(disp, 1, &ty);
    let every_other = gpu_mpi_device::derived::vector::<T>(count as u32, 1, 2);
    let local = TypeRef::new(&every_other)?;
    let mut buf = [T::of(0); 2 * PROGRAM_MAX_LEN];
    for i in 0..count {
        buf[2 * i] = T::of(value as i32 + i as i32);
    }
    let origin = View::with_count_and_datatype(&buf[..], 1, &local)?;
    match kind & 0xff {
        PROGRAM_PUT => win.put_typed(&origin, target, to),
        PROGRAM_SUM => win.accumulate_typed(&origin, target, to, SystemOperation::sum()),
        PROGRAM_REPLACE => win.accumulate_typed(&origin, target, to, SystemOperation::replace()),
        k => {
            let mut got = [T::of(0); 2 * PROGRAM_MAX_LEN];
            {
                let mut result = MutView::with_count_and_datatype(&mut got[..], 1, &local)?;
                if k == PROGRAM_GET {
                    win.get_typed(&mut result, target, to)?;
                } else {
                    let no_op = SystemOperation::no_op();
                    win.get_accumulate_typed(&origin, &mut result, target, to, no_op)?;
                }
            }
            for i in 0..count {
                let b = got[2 * i].bits();
                args.out.write(value as usize + 2 * i, b as u32)?;
                args.out.write(value as usize + 2 * i + 1, (b >> 32) as u32)?;
            }
            Ok(())
        }
    }
}

gpu_mpi_device::kernel! {
    /// Runs a one-sided program ([`RmaProgram`]): windows over each
    /// rank's part of `data`, of the lengths the program gives, then per
    /// epoch every operation whose origin is this rank, then a fence.
    pub static RMA_PROGRAM = fn rma_program(world: &World, args: &RmaProgram) -> Result<(), Error> {
        for_type!(args.elem, program(world, args))
    }
}

gpu_mpi_device::kernel! {
    /// The request-based operations (MPI 4.1 §12.3): under `lock_all`,
    /// rank `r` `rput`s `r + 1` into element `r + 1` of rank 0's window,
    /// `raccumulate`s 1 into element 0 of the next rank's and, after a
    /// flush and a barrier, `rget`s rank 0's element `r + 1` and
    /// `rget_accumulate`s (no-op) the next rank's element 0. Records: the
    /// two values read, whether every request tested complete, and the
    /// class of an `rput` outside a passive-target epoch (after a fence).
    pub static RMA_REQUESTS = fn rma_requests(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let next = (r + 1) % p;
        let win = Window::<u32>::allocate(world, p as usize + 1)?;
        win.lock_all()?;
        let put = win.rput(&[r as u32 + 1], 0, r as usize + 1)?;
        let acc = win.raccumulate(&[1], next, 0, SystemOperation::sum())?;
        let all_done = put.test() && acc.test();
        put.wait()?;
        acc.wait()?;
        win.flush_all()?;
        world.barrier()?;
        let mut mine = [0u32];
        let get = win.rget(&mut mine, 0, r as usize + 1)?;
        get.wait()?;
        let mut count = [0u32];
        win.rget_accumulate(&[0], &mut count, next, 0, SystemOperation::no_op())?
            .wait()?;
        win.unlock_all()?;
        win.fence()?;
        let outside = match win.rput(&[0], next, 0) {
            Err(e) => e.class() as u32,
            Ok(_) => 0,
        };
        win.fence_with(Mode::NO_SUCCEED)?;
        win.free()?;
        let base = r as usize * args.slots as usize;
        args.out.write(base, mine[0])?;
        args.out.write(base + 1, count[0])?;
        args.out.write(base + 2, all_done as u32)?;
        args.out.write(base + 3, outside)
    }
}

// ---- operations with datatypes -----------------------------------------------

/// [`RMA_TYPED`]'s `param`: columns of row-major matrices.
pub const TYPED_COLUMNS: u32 = 0;
/// [`RMA_TYPED`]'s `param`: strided and contiguous views on the origin side.
pub const TYPED_VIEWS: u32 = 1;
/// [`RMA_TYPED`]'s `param`: indexed and struct target types.
pub const TYPED_INDEXED: u32 = 2;
/// [`RMA_TYPED`]'s `param`: accumulates with a vector type from every rank.
pub const TYPED_ACCUMULATE: u32 = 3;
/// [`RMA_TYPED`]'s `param`: errors, which must leave every window as it was.
pub const TYPED_ERRORS: u32 = 4;
/// [`RMA_TYPED`]'s `param`: notified typed operations under `lock_all`.
pub const TYPED_NOTIFY: u32 = 5;
/// [`RMA_TYPED`]'s `param`: typed operations on a dynamic window.
pub const TYPED_DYNAMIC: u32 = 6;

/// The types of [`RMA_TYPED`]'s table, by index: a column of a 4 x 5
/// `u32` matrix (`vector(4, 1, 5)`).
pub const TY_COLUMN: usize = 0;
/// `u32`.
pub const TY_U32: usize = 1;
/// `vector(4, 1, 2)` of `u32`: every other element.
pub const TY_STRIDE2: usize = 2;
/// `indexed([2, 1, 3], [0, 5, 9])` of `u32`.
pub const TY_INDEXED: usize = 3;
/// `struct { u32 at 0, f32 at 8 }` (extent 12).
pub const TY_STRUCT_GAP: usize = 4;
/// `struct { u32 at 0, f32 at 4 }` (contiguous, extent 8).
pub const TY_STRUCT: usize = 5;
/// `struct { f32 at 0, u32 at 4 }`.
pub const TY_STRUCT_SWAP: usize = 6;
/// `vector(4, 1, 5)` of `f32`.
pub const TY_F32_COLUMN: usize = 7;
/// `hindexed([1], [2])` of `u32`: an element off its alignment.
pub const TY_ODD: usize = 8;
/// `hindexed([1], [-4])` of `u32`: below the buffer address.
pub const TY_BELOW: usize = 9;
/// Types in the table.
pub const TY_COUNT: usize = 10;

/// Elements of each rank's window in [`RMA_TYPED`]: a 4 x 5 `u32` matrix.
pub const TYPED_ELEMS: usize = 20;

/// The column rank `origin` puts into rank `target`'s matrix, element `i`.
pub const fn column_value(origin: u32, target: u32, i: u32) -> u32 {
    1000 * target + 10 * origin + i
}

/// Type `i` of the table the host puts in `args.data` after every rank's
/// part: the number of types, their lengths in words, their encodings.
fn table_type<'a>(args: &RmaArgs, ranks: usize, i: usize) -> Result<TypeRef<'a>, Error> {
    let at = ranks * args.part as usize;
    let n = args.data.read(at)? as usize;
    if i >= n {
        return Err(Error::application(2));
    }
    let mut start = at + 1 + n;
    for k in 0..i {
        start += args.data.read(at + 1 + k)? as usize;
    }
    let len = args.data.read(at + 1 + i)? as usize;
    // SAFETY: the table follows every rank's part (no window covers it)
    // and nothing writes it during the launch.
    let words = unsafe { args.data.slice(start, len) }?;
    TypeRef::new(words)
}

/// Every type of the table.
fn table<'a>(args: &RmaArgs, ranks: usize) -> Result<[TypeRef<'a>; TY_COUNT], Error> {
    let first = table_type(args, ranks, 0)?;
    let mut all = [first; TY_COUNT];
    for (i, t) in all.iter_mut().enumerate().skip(1) {
        *t = table_type(args, ranks, i)?;
    }
    Ok(all)
}

/// One instance of `ty` at element `disp`.
fn one<'t>(disp: usize, ty: &TypeRef<'t>) -> TargetView<'t> {
    TargetView::new(disp, 1, ty)
}

gpu_mpi_device::kernel! {
    /// One-sided operations with datatypes on either side (MPI 4.1
    /// §12.3), on windows of [`TYPED_ELEMS`] `u32`s (a 4 x 5 row-major
    /// matrix) over each rank's part of `data`, with the types of the
    /// host's table ([`TY_COLUMN`] ..): `param` is the case,
    /// [`TYPED_COLUMNS`] .. [`TYPED_DYNAMIC`]; check/tests/rma.rs's
    /// `typed_*` tests say what each records.
    pub static RMA_TYPED = fn rma_typed(world: &World, args: &RmaArgs) -> Result<(), Error> {
        let (r, p) = (world.rank(), world.size());
        let ty = table(args, p as usize)?;
        let mut rec = recorder(args, r);
        let mut win = Window::<u32>::create(world, own(args, r as u32, TYPED_ELEMS)?)?;
        let next = (r + 1) % p;
        let ru = r as u32;
        let sum = SystemOperation::sum();
        match args.param {
            TYPED_COLUMNS => {
                // Rank r's column into column r of every rank's matrix,
                // then a column back with a get.
                win.fence()?;
                for t in 0..p {
                    let col: [u32; 4] = core::array::from_fn(|i| column_value(ru, t as u32, i as u32));
                    win.put_typed(&col, t, one(r as usize, &ty[TY_COLUMN]))?;
                }
                win.fence()?;
                let mut got = [NONE; 4];
                let (c, t) = ((r + 1) % p, (r + 2) % p);
                win.get_typed(&mut got[..], t, one(c as usize, &ty[TY_COLUMN]))?;
                rec.words(&got)?;
            }
            TYPED_VIEWS => {
                win.fence()?;
                // A strided origin into a contiguous target: row 0,
                // columns 1..5 of the next rank.
                let src: [u32; 8] = core::array::from_fn(|k| 100 * ru + k as u32);
                let v = View::with_count_and_datatype(&src[..], 1, &ty[TY_STRIDE2])?;
                win.put_typed(&v, next, TargetView::new(1, 4, &ty[TY_U32]))?;
                // Strided into strided: column 0.
                let src2: [u32; 8] = core::array::from_fn(|k| 100 * ru + 50 + k as u32);
                let v2 = View::with_count_and_datatype(&src2[..], 1, &ty[TY_STRIDE2])?;
                win.put_typed(&v2, next, one(0, &ty[TY_COLUMN]))?;
                // A contiguous view (one block): row 2, columns 1..5.
                let src3: [u32; 4] = core::array::from_fn(|k| 100 * ru + 80 + k as u32);
                let v3 = View::with_count_and_datatype(&src3[..], 4, &ty[TY_U32])?;
                rec.push(v3.is_contiguous() as u32)?;
                win.put_typed(&v3, next, TargetView::new(11, 4, &ty[TY_U32]))?;
                win.fence()?;
                // Row 0 back into every other element of a local buffer.
                let mut dst = [NONE; 8];
                let mut mv = MutView::with_count_and_datatype(&mut dst[..], 1, &ty[TY_STRIDE2])?;
                win.get_typed(&mut mv, next, TargetView::new(1, 4, &ty[TY_U32]))?;
                rec.words(&dst)?;
            }
            TYPED_INDEXED => {
                win.fence()?;
                let src: [u32; 6] = core::array::from_fn(|k| 100 * ru + k as u32);
                win.put_typed(&src, next, one(1, &ty[TY_INDEXED]))?;
                // Two contiguous (u32, f32) pairs into two pairs with gaps.
                let pairs: [u32; 4] = core::array::from_fn(|k| 100 * ru + 50 + k as u32);
                let v = View::with_count_and_datatype(&pairs[..], 2, &ty[TY_STRUCT])?;
                win.put_typed(&v, next, TargetView::new(13, 2, &ty[TY_STRUCT_GAP]))?;
                win.fence()?;
                let mut six = [NONE; 6];
                win.get_typed(&mut six[..], next, one(1, &ty[TY_INDEXED]))?;
                rec.words(&six)?;
                let mut back = [NONE; 4];
                let mut mv = MutView::with_count_and_datatype(&mut back[..], 2, &ty[TY_STRUCT])?;
                win.get_typed(&mut mv, next, TargetView::new(13, 2, &ty[TY_STRUCT_GAP]))?;
                rec.words(&back)?;
            }
            TYPED_ACCUMULATE => {
                win.fence()?;
                let col: [u32; 4] = core::array::from_fn(|i| (ru + 1) * (i as u32 + 1));
                win.accumulate_typed(&col, 0, one(1, &ty[TY_COLUMN]), sum)?;
                // A strided origin view: elements 0, 2, 4, 6.
                let src: [u32; 8] = core::array::from_fn(|k| (ru + 1) * (k as u32 + 1));
                let v = View::with_count_and_datatype(&src[..], 1, &ty[TY_STRIDE2])?;
                win.accumulate_typed(&v, 1 % p, one(2, &ty[TY_COLUMN]), sum)?;
                let mut fetched = [NONE; 4];
                win.get_accumulate_typed(&[1u32; 4], &mut fetched[..], 0, one(3, &ty[TY_COLUMN]), sum)?;
                rec.words(&fetched)?;
                win.fence()?;
                // With no_op the origin is ignored: an empty one will do.
                let mut now = [NONE; 4];
                let none: [u32; 0] = [];
                win.get_accumulate_typed(&none, &mut now[..], 0, one(1, &ty[TY_COLUMN]), SystemOperation::no_op())?;
                rec.words(&now)?;
                win.fence_with(Mode::NO_SUCCEED)?;
                win.lock_all()?;
                let req = win.raccumulate_typed(&[ru; 4], 2 % p, one(4, &ty[TY_COLUMN]), SystemOperation::max())?;
                req.wait()?;
                win.unlock_all()?;
                world.barrier()?;
                // Every rank's max is in: read it back with a request.
                win.lock_all()?;
                let mut top = [NONE; 4];
                win.rget_typed(&mut top[..], 2 % p, one(4, &ty[TY_COLUMN]))?.wait()?;
                win.unlock_all()?;
                rec.words(&top)?;
            }
            TYPED_NOTIFY => {
                // Rank r hands its column to the next rank's column 0 with
                // a notified typed put (counter 1) and adds r + 1 to its
                // column 4 with a notified typed accumulate (counter 2);
                // after both notifications from the previous rank, the
                // two columns (8 words), then the class of a notified put
                // with a counter out of range.
                win.lock_all()?;
                let col: [u32; 4] = core::array::from_fn(|i| column_value(ru, next as u32, i as u32));
                win.put_notify_typed(&col, next, one(0, &ty[TY_COLUMN]), 1)?;
                win.accumulate_notify_typed(&[ru + 1; 4], next, one(4, &ty[TY_COLUMN]), sum, 2)?;
                win.wait_notifications(1, 1)?;
                win.wait_notifications(2, 1)?;
                let mut got = [NONE; 8];
                win.get_typed(&mut got[..4], r, one(0, &ty[TY_COLUMN]))?;
                win.get_typed(&mut got[4..], r, one(4, &ty[TY_COLUMN]))?;
                rec.words(&got)?;
                rec.class(&win.put_notify_typed(&col, next, one(0, &ty[TY_COLUMN]), NOTIFICATIONS))?;
                win.unlock_all()?;
            }
            TYPED_DYNAMIC => {
                // The matrix attached to a dynamic window instead; its
                // address goes to the previous rank. Between two fences,
                // rank r puts its column into column r % 5 of the next
                // rank's matrix (an address, unit 1), then records the
                // classes of a column starting at row 1 (its last element
                // one past the region) and of one at address 8 (nothing
                // attached); after the fence its own column r_prev % 5
                // (4 words).
                let dynamic = Window::<u32>::create_dynamic(world)?;
                // The memory of `win`, borrowed from it while attached.
                let attached = dynamic.attach(win.local_mut())?;
                let mine = attached.disp(0) as u64;
                world.process_at_rank((r + p - 1) % p).send(&mine)?;
                let mut theirs = 0u64;
                world.process_at_rank(next).receive_into(&mut theirs)?;
                let at = theirs as usize;
                dynamic.fence()?;
                let col: [u32; 4] = core::array::from_fn(|i| column_value(ru, next as u32, i as u32));
                dynamic.put_typed(&col, next, one(at + 4 * (r as usize % 5), &ty[TY_COLUMN]))?;
                rec.class(&dynamic.put_typed(&col, next, one(at + 4 * 5, &ty[TY_COLUMN])))?;
                rec.class(&dynamic.put_typed(&col, next, one(8, &ty[TY_COLUMN])))?;
                dynamic.fence()?;
                let prev = (r + p - 1) % p;
                let mut got = [NONE; 4];
                dynamic.get_typed(&mut got[..], r, one(mine as usize + 4 * (prev as usize % 5), &ty[TY_COLUMN]))?;
                rec.words(&got)?;
                attached.detach();
                dynamic.free()?;
            }
            _ => {
                let col = &ty[TY_COLUMN];
                let mut got = [NONE; 4];
                rec.error_words(&win.put_typed(&[1u32; 4], next, one(0, col)))?;
                win.fence()?;
                rec.error_words(&win.put_typed(&[1u32; 3], next, one(0, col)))?;
                rec.error_words(&win.put_typed(&[1f32; 4], next, one(0, col)))?;
                rec.error_words(&win.put_typed(&[1u32; 4], next, one(5, col)))?;
                rec.error_words(&win.get_typed(&mut got[..], next, one(5, col)))?;
                let pairs = [1u32; 4];
                let swapped = View::with_count_and_datatype(&pairs[..], 2, &ty[TY_STRUCT_SWAP])?;
                let gap2 = TargetView::new(0, 2, &ty[TY_STRUCT_GAP]);
                rec.error_words(&win.put_typed(&swapped, next, gap2))?;
                rec.error_words(&win.accumulate_typed(&[1u32; 4], next, one(0, &ty[TY_F32_COLUMN]), sum))?;
                let same = View::with_count_and_datatype(&pairs[..], 2, &ty[TY_STRUCT])?;
                rec.error_words(&win.accumulate_typed(&same, next, gap2, sum))?;
                rec.error_words(&win.accumulate_typed(&[1u32], next, one(0, &ty[TY_ODD]), sum))?;
                let empty: [u32; 0] = [];
                let calls = [
                    win.put_typed(&empty, next, TargetView::new(100, 0, col)),
                    win.get_typed(&mut got[..0], next, TargetView::new(100, 0, col)),
                    win.accumulate_typed(&empty, next, TargetView::new(1000, 0, col), sum),
                    win.put_typed(&[1u32; 3], PROC_NULL, one(100, col)),
                ];
                rec.error_words(&first_error(&calls))?;
                rec.error_words(&win.put_typed(&empty, next, one(0, col)))?;
                rec.error_words(&win.put_typed(&[1u32], next, one(0, &ty[TY_BELOW])))?;
                let mut three = [NONE; 3];
                rec.error_words(&win.get_accumulate_typed(&[1u32; 4], &mut three[..], next, one(0, col), sum))?;
                rec.error_words(&win.rput_typed(&[1u32; 4], next, one(0, col)).map(|_| ()))?;
                win.fence()?;
                rec.words(&got)?;
                rec.words(&three)?;
            }
        }
        win.free()
    }
}
