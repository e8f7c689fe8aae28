//! rsmpi's examples done in a kernel: one kernel per example of rsmpi's
//! `examples/` directory whose features this project has, named after it
//! (docs/rsmpi-examples.md lists what differs and why).
//!
//! Where rsmpi's example asserts, the kernel records: every rank writes
//! what it saw, in order, into its row of [`WORDS`] words of `out`
//! (`Row`); the host program (`examples/rsmpi/src`) computes what each
//! rank should have seen from the example's own formula and compares.
//! Worlds are small: at most [`MAX_RANKS`] ranks (the kernels keep their
//! tables on the stack); a larger world fails with `MPI_ERR_ARG`.
#![no_std]

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::abi::layout::IMMEDIATE_SLOTS;
use gpu_mpi_device::collective::{
    reduce_local_into, Partition, PartitionMut, SystemOperation, UserOperation,
};
use gpu_mpi_device::derived::{self, TypeRef};
use gpu_mpi_device::point_to_point::{send_receive_into, send_receive_replace_into};
use gpu_mpi_device::request::{
    self, test_all, test_any, test_some, wait_all, wait_any, wait_some, AnyCompletion,
};
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{
    intrinsics, CommunicatorRelation, Error, GlobalSlice, MutView, Request, Status, View, World,
};

/// Words each rank may record.
pub const WORDS: usize = 160;
/// The largest world the kernels accept.
pub const MAX_RANKS: usize = 8;
/// What the host fills `out` with: a word no rank wrote.
pub const UNWRITTEN: i64 = i64::MIN;
/// What a kernel records for "none" (`Option::None`, `MPI_UNDEFINED`).
pub const NONE: i64 = -1;

/// Arguments of every example kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ExampleArgs {
    /// [`WORDS`] words per rank, filled with [`UNWRITTEN`] by the host.
    pub out: GlobalSlice<i64>,
    /// The host's commit of the example's first derived datatype (empty
    /// when it has none).
    pub type_a: GlobalSlice<u64>,
    /// The host's commit of its second derived datatype.
    pub type_b: GlobalSlice<u64>,
}

/// One rank's row of `out`: [`Row::put`] appends a word.
struct Row<'a> {
    out: &'a GlobalSlice<i64>,
    base: usize,
    next: usize,
}

impl<'a> Row<'a> {
    fn of(world: &World, args: &'a ExampleArgs) -> Row<'a> {
        Row {
            out: &args.out,
            base: world.rank() as usize * WORDS,
            next: 0,
        }
    }

    fn put(&mut self, v: i64) -> Result<(), Error> {
        if self.next >= WORDS {
            return Err(Error::OutOfBounds {
                index: self.next as u32,
                len: WORDS as u32,
            });
        }
        self.out.write(self.base + self.next, v)?;
        self.next += 1;
        Ok(())
    }

    fn put_all(&mut self, values: impl IntoIterator<Item = i64>) -> Result<(), Error> {
        for v in values {
            self.put(v)?;
        }
        Ok(())
    }
}

/// The world's size, if the kernels' tables hold it.
fn ranks(world: &World) -> Result<usize, Error> {
    let n = world.size() as usize;
    if n > MAX_RANKS {
        return Err(Error::OutOfBounds {
            index: n as u32,
            len: MAX_RANKS as u32,
        });
    }
    Ok(n)
}

/// The class of an outcome as a word (0 for success).
fn class<T>(r: &Result<T, Error>) -> i64 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as i64,
    }
}

/// An optional rank as a word ([`NONE`] for `None`).
fn opt(r: Option<i32>) -> i64 {
    r.map_or(NONE, i64::from)
}

/// The host's derived datatype `t`.
fn host_type(t: &GlobalSlice<u64>) -> Result<TypeRef<'_>, Error> {
    // SAFETY: the host wrote the encoding before the launch and no rank
    // writes it.
    unsafe { TypeRef::from_global(t) }
}

/// A complex number of two `f64` (rsmpi's examples use num-complex's
/// `Complex64`): a `#[repr(C)]` pair declared a message type.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Complex64 {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}
gpu_mpi_device::user_datatype!(Complex64);

impl Complex64 {
    const fn new(re: f64, im: f64) -> Complex64 {
        Complex64 { re, im }
    }
}

/// The nested part of [`ComplexData`]: two `f32` and a `u8`, padded.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Pair {
    /// Two floats.
    pub floats: [f32; 2],
    /// A byte.
    pub tag: u8,
    /// Padding: not in the datatype.
    pub pad: [u8; 3],
}

/// rsmpi's `ComplexDatatype` in C layout: a flag byte (rsmpi's `bool`),
/// four `i32` and a nested [`Pair`]; the padding bytes are no part of the
/// host's struct datatype (`complex_datatype`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct ComplexData {
    /// The flag.
    pub flag: u8,
    /// Padding: not in the datatype.
    pub pad: [u8; 3],
    /// Four ints.
    pub ints: [i32; 4],
    /// The nested pair.
    pub pair: Pair,
}

/// The padding byte the root of `complex_datatype` writes (receivers must
/// keep their zeroes: padding is not sent).
pub const PAD_BYTE: u8 = 0xAA;

/// `struct`'s record in C field order: flag, float, short (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct RecordC {
    /// The flag byte.
    pub flag: u8,
    /// Padding.
    pub pad: [u8; 7],
    /// The float.
    pub value: f64,
    /// The short.
    pub count: u16,
    /// Padding.
    pub pad2: [u8; 6],
}

/// `struct`'s record with the fields stored as Rust would reorder them:
/// float, short, flag (16 bytes); the same type signature as [`RecordC`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct RecordPacked {
    /// The float.
    pub value: f64,
    /// The short.
    pub count: u16,
    /// The flag byte.
    pub flag: u8,
    /// Padding.
    pub pad: [u8; 5],
}

gpu_mpi_device::kernel! {
    /// `simple`: every rank records its rank and the world's size.
    pub static SIMPLE = fn simple(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let mut row = Row::of(world, args);
        row.put(world.rank() as i64)?;
        row.put(world.size() as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `all_gather`: all-gather of `2^(r+1)`, of the row `(k + 1)(r + 1)`
    /// (a table), and of the same rows as one instance each of the host's
    /// `contiguous(size, u64)` (`type_a`). Every rank records the sequence
    /// and both tables.
    pub static ALL_GATHER = fn all_gather(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank() as u64;
        let mut row = Row::of(world, args);
        let mut seq = [0u64; MAX_RANKS];
        world.all_gather_into(&(1u64 << (rank + 1)), &mut seq[..n])?;
        row.put_all(seq[..n].iter().map(|&v| v as i64))?;
        let mut mine = [0u64; MAX_RANKS];
        for (k, v) in mine[..n].iter_mut().enumerate() {
            *v = (k as u64 + 1) * (rank + 1);
        }
        let mut table = [0u64; MAX_RANKS * MAX_RANKS];
        world.all_gather_into(&mine[..n], &mut table[..n * n])?;
        row.put_all(table[..n * n].iter().map(|&v| v as i64))?;
        table.fill(0);
        let ty = host_type(&args.type_a)?;
        let send = View::with_count_and_datatype(&mine[..n], 1, &ty)?;
        let mut recv = MutView::with_count_and_datatype(&mut table[..n * n], n, &ty)?;
        world.all_gather_into(&send, &mut recv)?;
        row.put_all(table[..n * n].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `all_gather_bool`: all-gather of "is my rank even" as a byte (0 or
    /// 1: `bool` is no message type here); every rank records the bytes.
    pub static ALL_GATHER_BOOL = fn all_gather_bool(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let mut flags = [0u8; MAX_RANKS];
        world.all_gather_into(&((world.rank() % 2 == 0) as u8), &mut flags[..n])?;
        Row::of(world, args).put_all(flags[..n].iter().map(|&v| v as i64))
    }
}

/// `counts[r] = r` and their exclusive prefix sums, the varcount
/// examples' partition; returns the total.
fn triangle(n: usize, counts: &mut [i32; MAX_RANKS], displs: &mut [i32; MAX_RANKS]) -> usize {
    let mut total = 0;
    for r in 0..n {
        counts[r] = r as i32;
        displs[r] = total as i32;
        total += r;
    }
    total
}

/// Most elements of a varcount example's receive buffer.
const TRIANGLE: usize = MAX_RANKS * (MAX_RANKS - 1) / 2;

gpu_mpi_device::kernel! {
    /// `all_gather_varcount`: rank `r` contributes `0..r`; every rank
    /// records the concatenation.
    pub static ALL_GATHER_VARCOUNT = fn all_gather_varcount(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank() as usize;
        let mut msg = [0i32; MAX_RANKS];
        for (i, v) in msg.iter_mut().enumerate() {
            *v = i as i32;
        }
        let (mut counts, mut displs) = ([0i32; MAX_RANKS], [0i32; MAX_RANKS]);
        let total = triangle(n, &mut counts, &mut displs);
        let mut buf = [0i32; TRIANGLE];
        let mut partition = PartitionMut::new(&mut buf[..total], &counts[..n], &displs[..n]);
        world.all_gather_varcount_into(&msg[..rank], &mut partition)?;
        Row::of(world, args).put_all(buf[..total].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `all_to_all`: rank `r` sends `r` to everyone; every rank records
    /// what it received (`0..size`).
    pub static ALL_TO_ALL = fn all_to_all(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let send = [world.rank(); MAX_RANKS];
        let mut recv = [0i32; MAX_RANKS];
        world.all_to_all_into(&send[..n], &mut recv[..n])?;
        Row::of(world, args).put_all(recv[..n].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `arrays`: an array of three `i32` sent to oneself, twice: a receive
    /// posted, a blocking send, then a wait (the status recorded: source,
    /// count); then a receive whose request the scope completes at its end.
    pub static ARRAYS = fn arrays(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let me = world.process_at_rank(world.rank());
        let to_send = [1i32, 2, 3];
        let mut row = Row::of(world, args);
        let mut msg = [0i32; 3];
        let status = request::scope(|scope| -> Result<Status, Error> {
            let req = world.any_process().immediate_receive_into(scope, &mut msg)?;
            me.send(&to_send)?;
            req.wait()
        })?;
        row.put_all(msg.iter().map(|&v| v as i64))?;
        row.put(status.source_rank() as i64)?;
        row.put(opt(status.count::<i32>().map(|c| c as i32)))?;
        let mut msg = [0i32; 3];
        request::scope(|scope| -> Result<(), Error> {
            let _req = world.any_process().immediate_receive_into(scope, &mut msg)?;
            me.send(&to_send)
        })?;
        row.put_all(msg.iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `barrier`: every rank but 0 sends 1, passes a barrier, sends 2;
    /// rank 0 receives `size - 1` messages from any source, passes the
    /// barrier, receives `size - 1` more, and records them in order: all
    /// the 1s come before the barrier, so all precede the 2s.
    pub static BARRIER = fn barrier(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        if world.rank() != 0 {
            world.process_at_rank(0).send(&1u64)?;
            world.barrier()?;
            return world.process_at_rank(0).send(&2u64);
        }
        let mut buf = [0u64; 2 * MAX_RANKS];
        for x in &mut buf[..n - 1] {
            world.any_process().receive_into(x)?;
        }
        world.barrier()?;
        for x in &mut buf[n - 1..2 * (n - 1)] {
            world.any_process().receive_into(x)?;
        }
        Row::of(world, args).put_all(buf[..2 * (n - 1)].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `broadcast`: rank 0 broadcasts 1024, then `[2, 4, 8, 16]`; every
    /// rank records both.
    pub static BROADCAST = fn broadcast(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let root = world.process_at_rank(0);
        let is_root = world.rank() == 0;
        let mut x = if is_root { 1u64 << 10 } else { 0 };
        root.broadcast_into(&mut x)?;
        let mut a = if is_root { [2u64, 4, 8, 16] } else { [0; 4] };
        root.broadcast_into(&mut a[..])?;
        let mut row = Row::of(world, args);
        row.put(x as i64)?;
        row.put_all(a.iter().map(|&v| v as i64))
    }
}

/// Broadcasts `values` (the root's) from rank 0 and records real and
/// imaginary parts.
fn broadcast_complex_values<const N: usize>(
    world: &World,
    args: &ExampleArgs,
    values: [Complex64; N],
) -> Result<(), Error> {
    let mut data = if world.rank() == 0 {
        values
    } else {
        [Complex64::default(); N]
    };
    world.process_at_rank(0).broadcast_into(&mut data[..])?;
    let mut row = Row::of(world, args);
    for c in &data {
        row.put(c.re as i64)?;
        row.put(c.im as i64)?;
    }
    Ok(())
}

gpu_mpi_device::kernel! {
    /// `broadcast_complex`: rank 0 broadcasts four [`Complex64`]; every
    /// rank records their parts.
    pub static BROADCAST_COMPLEX = fn broadcast_complex(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let values = [
            Complex64::new(1.0, -2.0),
            Complex64::new(8.0, -4.0),
            Complex64::new(3.0, -9.0),
            Complex64::new(7.0, -5.0),
        ];
        broadcast_complex_values(world, args, values)
    }
}

gpu_mpi_device::kernel! {
    /// `complex_numbers`: rank 0 broadcasts three [`Complex64`]; every rank
    /// records their parts.
    pub static COMPLEX_NUMBERS = fn complex_numbers(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let values = [
            Complex64::new(1.0, 2.0),
            Complex64::new(2.0, 3.0),
            Complex64::new(3.0, 4.0),
        ];
        broadcast_complex_values(world, args, values)
    }
}

/// Elements of `buffered`'s message (1 KiB: the host sets the slot size).
pub const BUFFERED_WORDS: usize = 256;

gpu_mpi_device::kernel! {
    /// `buffered`: every rank sends 256 `f32` (pi) to itself with a
    /// blocking send BEFORE posting the receive: the send returns because
    /// the message is buffered (in the world's outbox slots, sized by the
    /// host's `WorldSpec::slot_bytes`, our attached buffer), then the
    /// receive takes it. Records how many elements arrived equal, and the
    /// status's count.
    pub static BUFFERED = fn buffered(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let me = world.process_at_rank(world.rank());
        let x = [core::f32::consts::PI; BUFFERED_WORDS];
        let mut y = [0f32; BUFFERED_WORDS];
        me.send(&x[..])?;
        let status = world.any_process().receive_into(&mut y[..])?;
        let mut row = Row::of(world, args);
        row.put(y.iter().filter(|&&v| v == core::f32::consts::PI).count() as i64)?;
        row.put(opt(status.count::<f32>().map(|c| c as i32)))
    }
}

gpu_mpi_device::kernel! {
    /// `complex_datatype`: rank 0 broadcasts a [`ComplexData`] described by
    /// the host's struct datatype (`type_a`: the flag, four ints, the
    /// nested pair; no padding). Every rank records the flag, the ints, the
    /// floats' bits, the pair's byte and its padding bytes (the root's
    /// [`PAD_BYTE`]s do not travel).
    pub static COMPLEX_DATATYPE = fn complex_datatype(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let ty = host_type(&args.type_a)?;
        let mut data = ComplexData::default();
        if world.rank() == 0 {
            data = ComplexData {
                flag: 1,
                pad: [PAD_BYTE; 3],
                ints: [1, -2, 3, -4],
                pair: Pair {
                    floats: [-0.1, 0.1],
                    tag: 7,
                    pad: [PAD_BYTE; 3],
                },
            };
        }
        {
            let bytes: &mut [u8] = bytemuck::bytes_of_mut(&mut data);
            let mut view = MutView::with_count_and_datatype(bytes, 1, &ty)?;
            world.process_at_rank(0).broadcast_into(&mut view)?;
        }
        let mut row = Row::of(world, args);
        row.put(data.flag as i64)?;
        row.put_all(data.ints.iter().map(|&v| v as i64))?;
        row.put_all(data.pair.floats.iter().map(|v| v.to_bits() as i64))?;
        row.put(data.pair.tag as i64)?;
        row.put_all(data.pad.iter().chain(&data.pair.pad).map(|&v| v as i64))
    }
}

/// Sends one instance of `ty` from `send` to the next rank and receives one
/// into `recv` from the previous one (`contiguous`, `vector`); returns the
/// status.
fn ring_shift_typed(
    world: &World,
    ty: &TypeRef<'_>,
    send: &[i32],
    recv: &mut [i32],
) -> Result<Status, Error> {
    let (rank, size) = (world.rank(), world.size());
    let next = world.process_at_rank((rank + 1) % size);
    let previous = world.process_at_rank((rank + size - 1) % size);
    let v1 = View::with_count_and_datatype(send, 1, ty)?;
    let mut v2 = MutView::with_count_and_datatype(recv, 1, ty)?;
    send_receive_into(&v1, &next, &mut v2, &previous)
}

gpu_mpi_device::kernel! {
    /// `contiguous`: rank `r` sends `[r, 2r, 3r]` as one instance of the
    /// host's `contiguous(3, i32)` (`type_a`) to the next rank and receives
    /// one from the previous (send-receive); records what arrived and the
    /// status's source.
    pub static CONTIGUOUS = fn contiguous(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let ty = host_type(&args.type_a)?;
        let rank = world.rank();
        let b1 = [rank, 2 * rank, 3 * rank];
        let mut b2 = [-1i32; 3];
        world.barrier()?;
        let status = ring_shift_typed(world, &ty, &b1, &mut b2)?;
        world.barrier()?;
        let mut row = Row::of(world, args);
        row.put_all(b2.iter().map(|&v| v as i64))?;
        row.put(status.source_rank() as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `datatype_dup`: rank 0 broadcasts four `i32` as four instances of
    /// the host's duplicate of `i32` (`type_a`); every rank records them.
    pub static DATATYPE_DUP = fn datatype_dup(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let ty = host_type(&args.type_a)?;
        let mut ints = if world.rank() == 0 { [1i32, 2, 3, 4] } else { [0; 4] };
        {
            let mut view = MutView::with_count_and_datatype(&mut ints[..], 4, &ty)?;
            world.process_at_rank(0).broadcast_into(&mut view)?;
        }
        Row::of(world, args).put_all(ints.iter().map(|&v| v as i64))
    }
}

/// A relation as a word: 0 identical, 1 congruent, 2 similar, 3 unequal
/// (the order of `MPI_IDENT` ... `MPI_UNEQUAL`).
fn relation(r: CommunicatorRelation) -> i64 {
    match r {
        CommunicatorRelation::Identical => 0,
        CommunicatorRelation::Congruent => 1,
        CommunicatorRelation::Similar => 2,
        CommunicatorRelation::Unequal => 3,
    }
}

gpu_mpi_device::kernel! {
    /// `duplicate`: the world duplicated (`moon`); a barrier on each;
    /// records `compare(world, moon)` (congruent), `compare(moon, moon)`
    /// (identical), moon's rank and size, and the value of a message sent
    /// on moon to the next rank while one on the world goes the same way
    /// with the same tag: each receive gets its own communicator's message.
    pub static DUPLICATE = fn duplicate(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let moon = world.duplicate()?;
        world.barrier()?;
        moon.barrier()?;
        let mut row = Row::of(world, args);
        row.put(relation(world.compare(&moon)))?;
        row.put(relation(moon.compare(&moon)))?;
        row.put(moon.rank() as i64)?;
        row.put(moon.size() as i64)?;
        let (rank, size) = (world.rank(), world.size());
        let next = (rank + 1) % size;
        let previous = (rank + size - 1) % size;
        world.process_at_rank(next).send_with_tag(&(100 + rank), 5)?;
        moon.process_at_rank(next).send_with_tag(&(200 + rank), 5)?;
        let mut on_moon = 0i32;
        moon.process_at_rank(previous).receive_into_with_tag(&mut on_moon, 5)?;
        let mut on_world = 0i32;
        world.process_at_rank(previous).receive_into_with_tag(&mut on_world, 5)?;
        row.put(on_moon as i64)?;
        row.put(on_world as i64)
    }
}

/// The inclusive prefix sum of the ranks of `comm` (`dyn_communicator`'s
/// function: generic over the communicator instead of `&dyn`).
fn prefix_sum<C: Communicator + CommunicatorCollectives>(comm: &C) -> Result<i64, Error> {
    let rank = comm.rank();
    let mut target = 0i32;
    comm.scan_into(&rank, &mut target, SystemOperation::sum())?;
    Ok(target as i64)
}

gpu_mpi_device::kernel! {
    /// `dyn_communicator`: the same prefix-sum function over the world,
    /// the communicator of the odd ranks and that of the even ranks (each
    /// made from a group, `split_by_subgroup_collective`); records the
    /// three sums ([`NONE`] where the rank is not a member).
    pub static DYN_COMMUNICATOR = fn dyn_communicator(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let mut row = Row::of(world, args);
        row.put(prefix_sum(world)?)?;
        let (mut odd, mut even) = ([0i32; MAX_RANKS], [0i32; MAX_RANKS]);
        let (mut no, mut ne) = (0, 0);
        for r in 0..n as i32 {
            if r % 2 != 0 {
                odd[no] = r;
                no += 1;
            } else {
                even[ne] = r;
                ne += 1;
            }
        }
        let all = world.group();
        let g1 = all.include(&odd[..no])?;
        let g2 = all.include(&even[..ne])?;
        for g in [&g1, &g2] {
            match world.split_by_subgroup_collective(g)? {
                Some(c) => row.put(prefix_sum(&c)?)?,
                None => row.put(NONE)?,
            }
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `gather`: as `all_gather`, gathered at rank 0 only, which records
    /// the sequence and both tables (the last through `type_a`,
    /// `contiguous(size, u64)`); the other ranks record nothing.
    pub static GATHER = fn gather(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank() as u64;
        let root = world.process_at_rank(0);
        let i = 1u64 << (rank + 1);
        let mut mine = [0u64; MAX_RANKS];
        for (k, v) in mine[..n].iter_mut().enumerate() {
            *v = (k as u64 + 1) * (rank + 1);
        }
        let ty = host_type(&args.type_a)?;
        if rank != 0 {
            root.gather_into(&i)?;
            root.gather_into(&mine[..n])?;
            return root.gather_into(&View::with_count_and_datatype(&mine[..n], 1, &ty)?);
        }
        let mut row = Row::of(world, args);
        let mut seq = [0u64; MAX_RANKS];
        root.gather_into_root(&i, &mut seq[..n])?;
        row.put_all(seq[..n].iter().map(|&v| v as i64))?;
        let mut table = [0u64; MAX_RANKS * MAX_RANKS];
        root.gather_into_root(&mine[..n], &mut table[..n * n])?;
        row.put_all(table[..n * n].iter().map(|&v| v as i64))?;
        table.fill(0);
        {
            let send = View::with_count_and_datatype(&mine[..n], 1, &ty)?;
            let mut recv = MutView::with_count_and_datatype(&mut table[..n * n], n, &ty)?;
            root.gather_into_root(&send, &mut recv)?;
        }
        row.put_all(table[..n * n].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `gather_varcount`: rank `r` contributes `0..r`; rank 0 records the
    /// concatenation.
    pub static GATHER_VARCOUNT = fn gather_varcount(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank() as usize;
        let mut msg = [0i32; MAX_RANKS];
        for (i, v) in msg.iter_mut().enumerate() {
            *v = i as i32;
        }
        let root = world.process_at_rank(0);
        if rank != 0 {
            return root.gather_varcount_into(&msg[..rank]);
        }
        let (mut counts, mut displs) = ([0i32; MAX_RANKS], [0i32; MAX_RANKS]);
        let total = triangle(n, &mut counts, &mut displs);
        let mut buf = [0i32; TRIANGLE];
        let mut partition = PartitionMut::new(&mut buf[..total], &counts[..n], &displs[..n]);
        root.gather_varcount_into_root(&msg[..rank], &mut partition)?;
        Row::of(world, args).put_all(buf[..total].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `group`: the world's group; its first half `f` (include) and the
    /// rest `s` (exclude). Records the group's size and rank, the sizes of
    /// `f` and `s`, this rank's rank in each ([`NONE`] outside), the rank in
    /// the world of this rank's rank in the reversed group, the rank in `s`
    /// of `f`'s rank 0 ([`NONE`]: not a member), and the error class of
    /// translating rank `size` (out of range).
    pub static GROUP = fn group(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let g = world.group();
        let mut row = Row::of(world, args);
        row.put(g.size() as i64)?;
        let me = g.rank().ok_or(Error::Intern)?;
        row.put(me as i64)?;
        let mut first = [0i32; MAX_RANKS];
        for (i, r) in first.iter_mut().enumerate() {
            *r = i as i32;
        }
        let f = g.include(&first[..n / 2])?;
        let s = g.exclude(&first[..n / 2])?;
        row.put(f.size() as i64)?;
        row.put(s.size() as i64)?;
        row.put(opt(f.rank()))?;
        row.put(opt(s.rank()))?;
        let mut rev = [0i32; MAX_RANKS];
        for (i, r) in rev[..n].iter_mut().enumerate() {
            *r = (n - 1 - i) as i32;
        }
        let r = g.include(&rev[..n])?;
        row.put(opt(r.translate_rank(me, &g)?))?;
        if f.size() > 0 {
            row.put(opt(f.translate_rank(0, &s)?))?;
        }
        row.put(class(&g.translate_rank(n as i32, &g)))
    }
}

gpu_mpi_device::kernel! {
    /// `immediate`: non-blocking calls on messages to oneself. (1) an
    /// immediate send and receive, the receive waited, the send tested
    /// until complete; (2) immediate probes with nothing pending; (3) an
    /// immediate synchronous send found by an immediate matched probe and
    /// received; (4) a receive tested before its send (not complete), then
    /// tested until it completes. Records pi's bits after each exchange, the
    /// probes' emptiness and the statuses' sources.
    pub static IMMEDIATE = fn immediate(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let me = world.process_at_rank(world.rank());
        let any = world.any_process();
        let x = core::f32::consts::PI;
        let mut row = Row::of(world, args);
        let mut y = 0f32;
        request::scope(|scope| -> Result<(), Error> {
            let mut sreq = me.immediate_send(scope, &x)?;
            let rreq = any.immediate_receive_into(scope, &mut y)?;
            rreq.wait()?;
            loop {
                if let Some(r) = sreq.test() {
                    return r.map(|_| ());
                }
            }
        })?;
        row.put(y.to_bits() as i64)?;
        row.put(any.immediate_probe()?.is_none() as i64)?;
        row.put(any.immediate_matched_probe()?.is_none() as i64)?;
        let mut y = 0f32;
        let source = request::scope(|scope| -> Result<i32, Error> {
            let sreq = me.immediate_synchronous_send(scope, &x)?;
            let (msg, _) = loop {
                if let Some(found) = any.immediate_matched_probe()? {
                    break found;
                }
            };
            let status = msg.matched_receive_into(&mut y)?;
            sreq.wait()?;
            Ok(status.source_rank())
        })?;
        row.put(y.to_bits() as i64)?;
        row.put(source as i64)?;
        let mut y = 0f32;
        let early = request::scope(|scope| -> Result<bool, Error> {
            let mut rreq = any.immediate_receive_into(scope, &mut y)?;
            let early = rreq.test().is_some();
            me.send(&x)?;
            loop {
                if let Some(r) = rreq.test() {
                    r?;
                    return Ok(early);
                }
            }
        })?;
        row.put(early as i64)?;
        row.put(y.to_bits() as i64)
    }
}

/// Requests per kind in the multiple-request examples: sends and receives
/// together fill the default 8 request records of a rank.
pub const MULTIPLE: usize = 4;

gpu_mpi_device::kernel! {
    /// `immediate_multiple_requests`: three rounds of 4 immediate sends of
    /// this rank to the next rank and 4 receives from the previous one,
    /// completed by `wait_any` (records the sends and receives counted),
    /// `wait_some` (the same), and `wait_all` (records each receive's
    /// source); then the values `0..4` sent in order: they arrive in order
    /// (non-overtaking), recorded unsorted.
    pub static IMMEDIATE_MULTIPLE_REQUESTS = fn immediate_multiple_requests(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let next = world.process_at_rank((rank + 1) % size);
        let previous = world.process_at_rank((rank + size - 1) % size);
        let mut row = Row::of(world, args);
        for round in 0..4 {
            let values = [0i32, 1, 2, 3];
            let mut result = [-1i32; MULTIPLE];
            let counted = request::scope(|scope| -> Result<(i64, i64), Error> {
                let mut reqs = [const { Request::null() }; 2 * MULTIPLE];
                for (k, r) in reqs[..MULTIPLE].iter_mut().enumerate() {
                    *r = if round == 3 {
                        next.immediate_send(scope, &values[k])?
                    } else {
                        next.immediate_send(scope, &rank)?
                    };
                }
                for (r, v) in reqs[MULTIPLE..].iter_mut().zip(result.iter_mut()) {
                    *r = previous.immediate_receive_into(scope, v)?;
                }
                let (mut sends, mut receives) = (0, 0);
                let mut count = |index: usize| {
                    if index < MULTIPLE {
                        sends += 1;
                    } else {
                        receives += 1;
                    }
                };
                match round {
                    0 => {
                        while let AnyCompletion::Completed { index, result } = wait_any(&mut reqs)? {
                            result?;
                            count(index);
                        }
                    }
                    1 => {
                        let mut done = [None; 2 * MULTIPLE];
                        while let Some(k) = wait_some(&mut reqs, &mut done)? {
                            for (index, result) in done[..k].iter().flatten() {
                                (*result)?;
                                count(*index);
                            }
                        }
                    }
                    _ => {
                        let mut statuses = [Status::empty(); 2 * MULTIPLE];
                        wait_all(&mut reqs, &mut statuses)?;
                        for (index, s) in statuses.iter().enumerate() {
                            // A receive counts when its status names the
                            // previous rank.
                            if index < MULTIPLE || s.source_rank() == previous.rank() {
                                count(index);
                            }
                        }
                    }
                }
                Ok((sends, receives))
            })?;
            row.put(counted.0)?;
            row.put(counted.1)?;
            row.put_all(result.iter().map(|&v| v as i64))?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_multiple_test`: three rounds of 4 immediate sends of
    /// `[k, k+1, k+2, k+3]` (k = 0..4) to the next rank and 4 receives from
    /// the previous one, polled to completion with `test_any`, `test_some`
    /// and `test_all`; records the completions counted and the arrays
    /// received, per round.
    pub static IMMEDIATE_MULTIPLE_TEST = fn immediate_multiple_test(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let next = world.process_at_rank((rank + 1) % size);
        let previous = world.process_at_rank((rank + size - 1) % size);
        let mut x = [[0i32; 4]; MULTIPLE];
        for (k, v) in x.iter_mut().enumerate() {
            *v = [k as i32, k as i32 + 1, k as i32 + 2, k as i32 + 3];
        }
        let mut row = Row::of(world, args);
        for round in 0..3 {
            let mut recv = [[0i32; 4]; MULTIPLE];
            let completed = request::scope(|scope| -> Result<i64, Error> {
                let mut reqs = [const { Request::null() }; 2 * MULTIPLE];
                for (r, v) in reqs[..MULTIPLE].iter_mut().zip(x.iter()) {
                    *r = next.immediate_send(scope, v)?;
                }
                for (r, v) in reqs[MULTIPLE..].iter_mut().zip(recv.iter_mut()) {
                    *r = previous.immediate_receive_into(scope, v)?;
                }
                let mut completed = 0;
                match round {
                    0 => loop {
                        match test_any(&mut reqs) {
                            Some(AnyCompletion::Completed { result, .. }) => {
                                result?;
                                completed += 1;
                            }
                            Some(AnyCompletion::AllNull) => break,
                            None => {}
                        }
                    },
                    1 => {
                        let mut done = [None; 2 * MULTIPLE];
                        while let Some(k) = test_some(&mut reqs, &mut done) {
                            for (_, result) in done[..k].iter().flatten() {
                                (*result)?;
                            }
                            completed += k as i64;
                        }
                    }
                    _ => {
                        let mut statuses = [Status::empty(); 2 * MULTIPLE];
                        loop {
                            if let Some(r) = test_all(&mut reqs, &mut statuses) {
                                r?;
                                completed = 2 * MULTIPLE as i64;
                                break;
                            }
                        }
                    }
                }
                Ok(completed)
            })?;
            row.put(completed)?;
            row.put_all(recv.iter().flatten().map(|&v| v as i64))?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_multiple_wait`: every even rank sends its rank to every
    /// odd rank and the other way round, all immediate; the receives are
    /// completed with `wait_some`, each status checked against its
    /// request's peer, the sends with `wait_all`. Records the number of
    /// receives, whether every status matched its request, and the ranks
    /// received in request order.
    pub static IMMEDIATE_MULTIPLE_WAIT = fn immediate_multiple_wait(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank();
        let is_even = rank % 2 == 0;
        let targets = n / 2 + (n % 2 != 0 && !is_even) as usize;
        let lbound = if is_even { 1 } else { 0 };
        let peer = |k: usize| (2 * k + lbound) as i32;
        let mut received = [-1i32; MULTIPLE];
        let mut row = Row::of(world, args);
        let matched = request::scope(|scope| -> Result<bool, Error> {
            let mut sends = [const { Request::null() }; MULTIPLE];
            let mut recvs = [const { Request::null() }; MULTIPLE];
            for (k, r) in sends[..targets].iter_mut().enumerate() {
                *r = world.process_at_rank(peer(k)).immediate_send(scope, &rank)?;
            }
            for (k, (r, v)) in recvs[..targets].iter_mut().zip(received.iter_mut()).enumerate() {
                *r = world.process_at_rank(peer(k)).immediate_receive_into(scope, v)?;
            }
            let mut seen = [false; MULTIPLE];
            let mut matched = true;
            let mut done = [None; MULTIPLE];
            while let Some(k) = wait_some(&mut recvs[..targets], &mut done)? {
                for (index, result) in done[..k].iter().flatten() {
                    let status = (*result)?;
                    matched &= !seen[*index] && status.source_rank() == peer(*index);
                    seen[*index] = true;
                }
            }
            matched &= seen[..targets].iter().all(|&s| s);
            wait_all(&mut sends[..targets], &mut [])?;
            Ok(matched)
        })?;
        row.put(targets as i64)?;
        row.put(matched as i64)?;
        row.put_all(received[..targets].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_barrier`: every rank but 0 sends 1, starts a non-blocking
    /// barrier, sends 2, waits for the barrier, sends 3; rank 0 receives
    /// `2 (size - 1)` messages from any source, starts the barrier, receives
    /// `size - 1` more, and waits. No 3 can arrive before the barrier
    /// completes, and it cannot complete before rank 0 has received every 1
    /// and 2. Rank 0 records how many 1s and 2s the first `2 (size - 1)`
    /// words hold (their order varies) and the last `size - 1` words.
    pub static IMMEDIATE_BARRIER = fn immediate_barrier(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let root = world.process_at_rank(0);
        if world.rank() != 0 {
            root.send(&1u64)?;
            request::scope(|scope| -> Result<Status, Error> {
                let barrier = world.immediate_barrier(scope)?;
                root.send(&2u64)?;
                barrier.wait()
            })?;
            return root.send(&3u64);
        }
        let m = n - 1;
        let mut buf = [0u64; 3 * (MAX_RANKS - 1)];
        for x in &mut buf[..2 * m] {
            world.any_process().receive_into(x)?;
        }
        request::scope(|scope| -> Result<Status, Error> {
            let barrier = world.immediate_barrier(scope)?;
            for x in &mut buf[2 * m..3 * m] {
                world.any_process().receive_into(x)?;
            }
            barrier.wait()
        })?;
        let mut row = Row::of(world, args);
        let first = &buf[..2 * m];
        row.put(first.iter().filter(|&&v| v == 1).count() as i64)?;
        row.put(first.iter().filter(|&&v| v == 2).count() as i64)?;
        row.put_all(buf[2 * m..3 * m].iter().map(|&v| v as i64))
    }
}

/// Barriers each completion call of the barrier-collection examples
/// completes (rsmpi's `COUNT` is 128; 8 keeps the six schedules of
/// `tests/examples.rs` fast while every slot is reused 4 times per call).
pub const BARRIERS_PER_CALL: usize = 8;

/// Non-blocking collectives a rank may have outstanding
/// (`IMMEDIATE_SLOTS`): the barrier-collection examples start this many at
/// a time, in `BARRIERS_PER_CALL / BARRIERS_AT_ONCE` rounds, where rsmpi
/// starts all of them at once.
pub const BARRIERS_AT_ONCE: usize = IMMEDIATE_SLOTS as usize;

/// The six ways rsmpi's `RequestCollection` completes requests.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Completion {
    WaitAny,
    WaitSome,
    WaitAll,
    TestAny,
    TestSome,
    TestAll,
}

/// The completion calls in the order the barrier-collection examples use
/// them.
const COMPLETIONS: [Completion; 6] = [
    Completion::WaitAny,
    Completion::WaitSome,
    Completion::WaitAll,
    Completion::TestAny,
    Completion::TestSome,
    Completion::TestAll,
];

/// What the rounds of one completion call found.
#[derive(Clone, Copy, Default)]
struct Tally {
    /// Barriers completed.
    finished: i64,
    /// Times the requests still active were not the started less the
    /// completed (rsmpi's `incomplete()` check).
    miscounted: i64,
    /// Completions reported for a request that was already complete, not
    /// made null, or never reported (rsmpi's check of the result entries).
    misreported: i64,
}

impl Tally {
    /// Notes `index` reported complete: it must be new and its request
    /// null now.
    fn report(&mut self, seen: &mut u32, reqs: &[Request<'_, '_>], index: usize) {
        let bit = 1u32 << index;
        let fresh = *seen & bit == 0 && reqs.get(index).is_some_and(Request::is_null);
        self.misreported += (!fresh) as i64;
        *seen |= bit;
    }

    /// Notes the active requests after `done` of the round completed.
    fn count(&mut self, reqs: &[Request<'_, '_>], done: usize) {
        let active = reqs.iter().filter(|r| !r.is_null()).count();
        self.miscounted += (active + done != reqs.len()) as i64;
    }
}

/// One round: [`BARRIERS_AT_ONCE`] barriers started, then completed with
/// `how` (a test call polled until everything completed).
fn barrier_round(world: &World, how: Completion, tally: &mut Tally) -> Result<(), Error> {
    request::scope(|scope| -> Result<(), Error> {
        let mut reqs = [const { Request::null() }; BARRIERS_AT_ONCE];
        for r in reqs.iter_mut() {
            *r = world.immediate_barrier(scope)?;
        }
        let mut seen = 0u32;
        let mut done = 0;
        match how {
            Completion::WaitAny | Completion::TestAny => loop {
                let c = if how == Completion::WaitAny {
                    Some(wait_any(&mut reqs)?)
                } else {
                    test_any(&mut reqs)
                };
                match c {
                    Some(AnyCompletion::Completed { index, result }) => {
                        result?;
                        tally.report(&mut seen, &reqs, index);
                        done += 1;
                    }
                    Some(AnyCompletion::AllNull) => break,
                    None => {}
                }
                tally.count(&reqs, done);
            },
            Completion::WaitSome | Completion::TestSome => loop {
                let mut completions = [None; BARRIERS_AT_ONCE];
                let k = if how == Completion::WaitSome {
                    wait_some(&mut reqs, &mut completions)?
                } else {
                    test_some(&mut reqs, &mut completions)
                };
                let Some(k) = k else { break };
                for c in &completions[..k] {
                    match c {
                        Some((index, result)) => {
                            (*result)?;
                            tally.report(&mut seen, &reqs, *index);
                        }
                        None => tally.misreported += 1,
                    }
                }
                tally.misreported += completions[k..].iter().filter(|c| c.is_some()).count() as i64;
                done += k;
                tally.count(&reqs, done);
            },
            Completion::WaitAll | Completion::TestAll => {
                let mut statuses = [Status::empty(); BARRIERS_AT_ONCE];
                if how == Completion::WaitAll {
                    wait_all(&mut reqs, &mut statuses)?;
                } else {
                    while test_all(&mut reqs, &mut statuses).transpose()?.is_none() {
                        tally.count(&reqs, 0);
                    }
                }
                for index in 0..reqs.len() {
                    tally.report(&mut seen, &reqs, index);
                }
                done = reqs.len();
                tally.count(&reqs, done);
            }
        }
        tally.misreported += (seen != (1 << reqs.len()) - 1) as i64;
        tally.finished += done as i64;
        Ok(())
    })
}

/// rsmpi's six collections of [`BARRIERS_PER_CALL`] barriers: per
/// completion call, its rounds' tally.
#[inline(never)]
fn barrier_collections(world: &World) -> Result<[Tally; 6], Error> {
    let mut tallies = [Tally::default(); 6];
    for (how, tally) in COMPLETIONS.iter().zip(tallies.iter_mut()) {
        for _ in 0..BARRIERS_PER_CALL / BARRIERS_AT_ONCE {
            barrier_round(world, *how, tally)?;
        }
    }
    Ok(tallies)
}

gpu_mpi_device::kernel! {
    /// `immediate_multiple_barrier`: [`BARRIERS_PER_CALL`] non-blocking
    /// barriers completed with each of `wait_any`, `wait_some`, `wait_all`,
    /// `test_any`, `test_some` and `test_all`, [`BARRIERS_AT_ONCE`] at a
    /// time; after every call the requests still active must be the
    /// started less the completed. Then one barrier more than may be
    /// outstanding: the extra start fails with `MPI_ERR_REQUEST`, the
    /// others complete. Records per call the barriers completed and the
    /// miscounts, then the extra start's class and the others'.
    pub static IMMEDIATE_MULTIPLE_BARRIER = fn immediate_multiple_barrier(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let mut row = Row::of(world, args);
        for t in barrier_collections(world)? {
            row.put(t.finished)?;
            row.put(t.miscounted)?;
        }
        let (extra, rest) = request::scope(|scope| -> Result<(i64, i64), Error> {
            let mut reqs = [const { Request::null() }; BARRIERS_AT_ONCE];
            for r in reqs.iter_mut() {
                *r = world.immediate_barrier(scope)?;
            }
            let extra = class(&world.immediate_barrier(scope));
            Ok((extra, class(&wait_all(&mut reqs, &mut []))))
        })?;
        row.put(extra)?;
        row.put(rest)
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_barrier_multiple`: the same collections of barriers as
    /// `immediate_multiple_barrier`, checking what each call reports
    /// instead: every completion names a request not completed before and
    /// now null, `wait_some`/`test_some` fill exactly the entries they
    /// count, and every barrier is reported once. Records per call the
    /// barriers completed and the bad reports.
    pub static IMMEDIATE_BARRIER_MULTIPLE = fn immediate_barrier_multiple(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let mut row = Row::of(world, args);
        for t in barrier_collections(world)? {
            row.put(t.finished)?;
            row.put(t.misreported)?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_broadcast`: rank 0 broadcasts 1024, then `[2, 4, 8, 16]`,
    /// each with a non-blocking broadcast waited at once; every rank
    /// records both.
    pub static IMMEDIATE_BROADCAST = fn immediate_broadcast(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let root = world.process_at_rank(0);
        let is_root = world.rank() == 0;
        let mut x = if is_root { 1u64 << 10 } else { 0 };
        request::scope(|scope| root.immediate_broadcast_into(scope, &mut x)?.wait())?;
        let mut a = [0u64; 4];
        if is_root {
            for (i, v) in a.iter_mut().enumerate() {
                *v = 2 << i;
            }
        }
        request::scope(|scope| root.immediate_broadcast_into(scope, &mut a[..])?.wait())?;
        let mut row = Row::of(world, args);
        row.put(x as i64)?;
        row.put_all(a.iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `immediate_reduce`: non-blocking, each waited at once: the sum of
    /// the ranks reduced to rank 0 (recorded there), the all-reduced
    /// maximum, the product of `0..size` all-reduced as a vector of which
    /// rank `r` keeps element `r` (`r^size`: rsmpi's reduce-scatter-block),
    /// and all-reduced sums of the ranks with a commutative closure and
    /// with a function. Every rank records its results.
    pub static IMMEDIATE_REDUCE = fn immediate_reduce(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank();
        let root = world.process_at_rank(0);
        let mut row = Row::of(world, args);
        if rank == 0 {
            let mut sum = 0i32;
            request::scope(|scope| {
                root.immediate_reduce_into_root(scope, &rank, &mut sum, SystemOperation::sum())?
                    .wait()
            })?;
            row.put(sum as i64)?;
        } else {
            request::scope(|scope| {
                root.immediate_reduce_into(scope, &rank, SystemOperation::sum())?
                    .wait()
            })?;
        }
        let mut max = -1i32;
        request::scope(|scope| {
            world
                .immediate_all_reduce_into(scope, &rank, &mut max, SystemOperation::max())?
                .wait()
        })?;
        row.put(max as i64)?;
        let mut a = [0i32; MAX_RANKS];
        for (i, v) in a[..n].iter_mut().enumerate() {
            *v = i as i32;
        }
        let mut b = [0i32; MAX_RANKS];
        request::scope(|scope| {
            world
                .immediate_all_reduce_into(scope, &a[..n], &mut b[..n], SystemOperation::product())?
                .wait()
        })?;
        row.put(b[rank as usize] as i64)?;
        let mut c = 0i32;
        let sum = UserOperation::commutative(|x: &i32, y: &i32| x.wrapping_add(*y));
        request::scope(|scope| world.immediate_all_reduce_into(scope, &rank, &mut c, sum)?.wait())?;
        row.put(c as i64)?;
        let mut d = 0i32;
        request::scope(|scope| {
            world
                .immediate_all_reduce_into(scope, &rank, &mut d, UserOperation::associative(add))?
                .wait()
        })?;
        row.put(d as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `null_process`: a receive from the null process (returns at once:
    /// source `PROC_NULL`, tag `ANY_TAG`, count 0, the value untouched), a
    /// send to it, and a matched probe of it (`MPI_MESSAGE_NO_PROC`) whose
    /// receive returns the same status. Records all of these.
    pub static NULL_PROCESS = fn null_process(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let mut row = Row::of(world, args);
        let (value, status) = world.null_process().receive::<u64>()?;
        row.put(value as i64)?;
        row.put(status.source_rank() as i64)?;
        row.put(status.tag() as i64)?;
        row.put(opt(status.count::<u64>().map(|c| c as i32)))?;
        row.put(class(&world.null_process().send(&1u64)))?;
        let (msg, status) = world.null_process().matched_probe()?;
        row.put(msg.is_no_proc() as i64)?;
        row.put(status.source_rank() as i64)?;
        let (value, status) = msg.matched_receive::<f64>()?;
        row.put(value.to_bits() as i64)?;
        row.put(status.source_rank() as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `pack`: packs `[3, 2, 1]` with a type built in the kernel
    /// (`derived::vector::<i32>(3, 1, 1)`, no host), unpacks into a zeroed
    /// array; records the bytes packed, the array, the pack size, and the
    /// error class of packing into one byte too few.
    pub static PACK = fn pack(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let words = derived::vector::<i32>(3, 1, 1);
        let ty = TypeRef::new(&words)?;
        let ints = [3i32, 2, 1];
        let mut packed = [0u8; 12];
        let used = derived::pack_into(bytemuck::cast_slice(&ints), 1, &ty, &mut packed)?;
        let mut new_ints = [0i32; 3];
        derived::unpack_from(&packed[..used], 1, &ty, bytemuck::cast_slice_mut(&mut new_ints))?;
        let mut row = Row::of(world, args);
        row.put(used as i64)?;
        row.put_all(new_ints.iter().map(|&v| v as i64))?;
        row.put(derived::pack_size(1, &ty)? as i64)?;
        let mut short = [0u8; 11];
        row.put(class(&derived::pack_into(bytemuck::cast_slice(&ints), 1, &ty, &mut short)))
    }
}

/// Most `i32` a probed message of `readme` or `send_receive` may hold.
const PROBED: usize = 8;

gpu_mpi_device::kernel! {
    /// `readme` (rsmpi's README program): every rank sends `[r, 2r, 4r]` to
    /// the next rank with an immediate send, probes for a message from any
    /// source and receives exactly what the probe announced (rsmpi's
    /// `receive_vec`); rank 0 then broadcasts `[2, 4, 8, 16]`. Records the
    /// source, the count, the values and the broadcast.
    pub static README = fn readme(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let (rank, size) = (world.rank(), world.size());
        let next = world.process_at_rank((rank + 1) % size);
        let msg = [rank, 2 * rank, 4 * rank];
        let mut row = Row::of(world, args);
        request::scope(|scope| -> Result<(), Error> {
            let sreq = next.immediate_send(scope, &msg[..])?;
            let status = world.any_process().probe()?;
            let count = status.count::<i32>().unwrap_or(0).min(PROBED);
            let mut got = [0i32; PROBED];
            world
                .process_at_rank(status.source_rank())
                .receive_into(&mut got[..count])?;
            row.put(status.source_rank() as i64)?;
            row.put(count as i64)?;
            row.put_all(got[..count].iter().map(|&v| v as i64))?;
            let mut a = if rank == 0 { [2i32, 4, 8, 16] } else { [0; 4] };
            world.process_at_rank(0).broadcast_into(&mut a[..])?;
            row.put_all(a.iter().map(|&v| v as i64))?;
            sreq.wait().map(|_| ())
        })
    }
}

gpu_mpi_device::kernel! {
    /// `ready_send`: rank 0 posts one receive per other rank, then passes a
    /// barrier; the others pass the barrier (so every receive is posted),
    /// then send their rank as a byte. Standard sends stand for rsmpi's
    /// ready sends (no ready mode here). Rank 0 records the bytes.
    pub static READY_SEND = fn ready_send(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank();
        if rank > 0 {
            world.barrier()?;
            return world.process_at_rank(0).send(&(rank as u8));
        }
        let mut v = [0u8; MAX_RANKS];
        request::scope(|scope| -> Result<(), Error> {
            let mut reqs = [const { Request::null() }; MAX_RANKS];
            for (i, (r, x)) in reqs[..n - 1].iter_mut().zip(v.iter_mut()).enumerate() {
                *r = world.process_at_rank(i as i32 + 1).immediate_receive_into(scope, x)?;
            }
            world.barrier()?;
            for r in reqs[..n - 1].iter_mut() {
                core::mem::replace(r, Request::null()).wait()?;
            }
            Ok(())
        })?;
        Row::of(world, args).put_all(v[..n - 1].iter().map(|&x| x as i64))
    }
}

/// `reduce`'s second user operation: a plain function (rsmpi's
/// `UnsafeUserOperation` over a C function).
fn add(x: &i32, y: &i32) -> i32 {
    x.wrapping_add(*y)
}

gpu_mpi_device::kernel! {
    /// `reduce`: the sum of ranks at rank 0 (recorded there), the
    /// all-reduced maximum, three local bitwise reductions of two `u16`,
    /// a reduce-scatter-block of `0..size` by product (rank `r` gets
    /// `r^size`, wrapping), and all-reduced sums of `r + 1` with a
    /// commutative closure and a function. Every rank records its results.
    pub static REDUCE = fn reduce(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank();
        let root = world.process_at_rank(0);
        let mut row = Row::of(world, args);
        if rank == 0 {
            let mut sum = 0i32;
            root.reduce_into_root(&rank, &mut sum, SystemOperation::sum())?;
            row.put(sum as i64)?;
        } else {
            root.reduce_into(&rank, SystemOperation::sum())?;
        }
        let mut max = -1i32;
        world.all_reduce_into(&rank, &mut max, SystemOperation::max())?;
        row.put(max as i64)?;
        let a: u16 = 0b0000_1111_1111_0000;
        let b: u16 = 0b0011_1100_0011_1100;
        for op in [
            SystemOperation::bitwise_and(),
            SystemOperation::bitwise_or(),
            SystemOperation::bitwise_xor(),
        ] {
            let mut c = b;
            reduce_local_into(&a, &mut c, op)?;
            row.put(c as i64)?;
        }
        let mut f = [0i32; MAX_RANKS];
        for (i, v) in f[..n].iter_mut().enumerate() {
            *v = i as i32;
        }
        let mut g = 0i32;
        world.reduce_scatter_block_into(&f[..n], &mut g, SystemOperation::product())?;
        row.put(g as i64)?;
        let mut h = 0i32;
        let sum = UserOperation::commutative(|x: &i32, y: &i32| x.wrapping_add(*y));
        world.all_reduce_into(&(rank + 1), &mut h, sum)?;
        row.put(h as i64)?;
        let mut i = 0i32;
        world.all_reduce_into(&(rank + 1), &mut i, UserOperation::associative(add))?;
        row.put(i as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `scan`: the inclusive sum scan of the ranks and the exclusive
    /// product scan of `r + 1` (rank 0's is undefined, MPI 6.11.2: not
    /// recorded). Records both.
    pub static SCAN = fn scan(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let rank = world.rank();
        let mut row = Row::of(world, args);
        let mut x = 0i32;
        world.scan_into(&rank, &mut x, SystemOperation::sum())?;
        row.put(x as i64)?;
        let mut z = 0i32;
        world.exclusive_scan_into(&(rank + 1), &mut z, SystemOperation::product())?;
        if rank > 0 {
            row.put(z as i64)?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `scatter`: rank 0 scatters `0..size`; every rank records its value.
    pub static SCATTER = fn scatter(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let root = world.process_at_rank(0);
        let mut x = -1i32;
        if world.rank() == 0 {
            let mut v = [0i32; MAX_RANKS];
            for (i, e) in v[..n].iter_mut().enumerate() {
                *e = i as i32;
            }
            root.scatter_into_root(&v[..n], &mut x)?;
        } else {
            root.scatter_into(&mut x)?;
        }
        Row::of(world, args).put(x as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `scatter_varcount`: rank 0 scatters the concatenation of `0..r` for
    /// every `r`, `r` elements to rank `r`; every rank records what it got.
    pub static SCATTER_VARCOUNT = fn scatter_varcount(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank() as usize;
        let root = world.process_at_rank(0);
        let mut buf = [-1i32; MAX_RANKS];
        if rank == 0 {
            let (mut counts, mut displs) = ([0i32; MAX_RANKS], [0i32; MAX_RANKS]);
            let total = triangle(n, &mut counts, &mut displs);
            let mut msg = [0i32; TRIANGLE];
            for r in 0..n {
                for j in 0..r {
                    msg[displs[r] as usize + j] = j as i32;
                }
            }
            let partition = Partition::new(&msg[..total], &counts[..n], &displs[..n]);
            root.scatter_varcount_into_root(&partition, &mut buf[..rank])?;
        } else {
            root.scatter_varcount_into(&mut buf[..rank])?;
        }
        Row::of(world, args).put_all(buf[..rank].iter().map(|&v| v as i64))
    }
}

gpu_mpi_device::kernel! {
    /// `send_receive`: each rank sends its rank to the previous rank and
    /// receives from the next (send-receive, records value and source);
    /// ranks `r > 0` then send `[r, r+1, r-1]` to rank 0, which probes each
    /// from any source and records the three values at the sender's place;
    /// last, a send-receive-replace to the next rank (records the value
    /// from the previous one).
    pub static SEND_RECEIVE = fn send_receive(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let (rank, size) = (world.rank(), world.size());
        let next = world.process_at_rank((rank + 1) % size);
        let previous = world.process_at_rank((rank + size - 1) % size);
        let mut row = Row::of(world, args);
        let mut msg = -1i32;
        let status = send_receive_into(&rank, &previous, &mut msg, &next)?;
        row.put(msg as i64)?;
        row.put(status.source_rank() as i64)?;
        world.barrier()?;
        if rank > 0 {
            world.process_at_rank(0).send(&[rank, rank + 1, rank - 1])?;
        } else {
            let mut by_source = [[0i32; 3]; MAX_RANKS];
            for _ in 1..n {
                let status = world.any_process().probe()?;
                let source = status.source_rank();
                let count = status.count::<i32>().unwrap_or(0).min(PROBED);
                let mut got = [0i32; PROBED];
                world.process_at_rank(source).receive_into(&mut got[..count])?;
                if count == 3 && (1..n as i32).contains(&source) {
                    by_source[source as usize].copy_from_slice(&got[..3]);
                }
            }
            row.put_all(by_source[1..n].iter().flatten().map(|&v| v as i64))?;
        }
        world.barrier()?;
        let mut x = rank;
        send_receive_replace_into(&mut x, &next, &previous)?;
        row.put(x as i64)
    }
}

/// Whether `comm`'s ranks are `group`'s ranks in the same order (our
/// stand-in for rsmpi's `GroupRelation::Identical`).
fn same_members<C: Communicator>(comm: &C, group: &gpu_mpi_device::Group<'_>) -> Result<bool, Error> {
    let mine = comm.group();
    if mine.size() != group.size() {
        return Ok(false);
    }
    for k in 0..mine.size() {
        if mine.translate_rank(k, group)? != Some(k) {
            return Ok(false);
        }
    }
    Ok(true)
}

gpu_mpi_device::kernel! {
    /// `split`: the odd ranks' group (include) and the even ranks' (the
    /// rest: exclude); the communicator of the odd ranks made from their
    /// group (`split_by_subgroup_collective`, every rank passing the same
    /// group), then the odd/even communicators by colour, and the odd ones
    /// alone (even ranks pass `Color::undefined()`). Records membership,
    /// whether each communicator exists here, and whether its members are
    /// the group's in order.
    pub static SPLIT = fn split(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let n = ranks(world)?;
        let rank = world.rank();
        let mut odd = [0i32; MAX_RANKS];
        let mut k = 0;
        for r in (1..n as i32).step_by(2) {
            odd[k] = r;
            k += 1;
        }
        let all = world.group();
        let odd_group = all.include(&odd[..k])?;
        let even_group = all.exclude(&odd[..k])?;
        let mut row = Row::of(world, args);
        row.put(odd_group.rank().is_some() as i64)?;
        row.put(even_group.rank().is_some() as i64)?;
        let my_group = if odd_group.rank().is_some() { &odd_group } else { &even_group };
        match world.split_by_subgroup_collective(&odd_group)? {
            Some(c) => row.put(same_members(&c, &odd_group)? as i64)?,
            None => row.put(NONE)?,
        }
        let oddness = world
            .split_by_color(gpu_mpi_device::Color::with_value((rank % 2) as u32))?
            .ok_or(Error::Intern)?;
        row.put(same_members(&oddness, my_group)? as i64)?;
        row.put(oddness.size() as i64)?;
        let color = if rank % 2 != 0 {
            gpu_mpi_device::Color::with_value(0)
        } else {
            gpu_mpi_device::Color::undefined()
        };
        match world.split_by_color(color)? {
            Some(c) => row.put(same_members(&c, &odd_group)? as i64),
            None => row.put(NONE),
        }
    }
}

gpu_mpi_device::kernel! {
    /// `struct`: a record packed with the host's struct type of its C
    /// layout (`type_a`: flag, float, short) and unpacked with the type of
    /// the reordered layout (`type_b`, the same signature), locally on every
    /// rank; records the unpacked fields (the float's bits), the bytes
    /// packed, whether the two types' signatures match, and whether `type_a`
    /// matches 11 bytes (it does not).
    pub static STRUCT = fn struct_example(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let c_type = host_type(&args.type_a)?;
        let reordered = host_type(&args.type_b)?;
        let record = RecordC {
            flag: 1,
            value: 3.4,
            count: 7,
            ..RecordC::default()
        };
        let mut packed = [0u8; 16];
        let used = derived::pack_into(bytemuck::bytes_of(&record), 1, &c_type, &mut packed)?;
        let mut out = RecordPacked::default();
        derived::unpack_from(&packed[..used], 1, &reordered, bytemuck::bytes_of_mut(&mut out))?;
        let mut row = Row::of(world, args);
        row.put(out.flag as i64)?;
        row.put(out.value.to_bits() as i64)?;
        row.put(out.count as i64)?;
        row.put(used as i64)?;
        row.put(c_type.signature_matches(&reordered) as i64)?;
        let bytes = derived::vector::<u8>(11, 1, 1);
        row.put(c_type.signature_matches(&TypeRef::new(&bytes)?) as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `structured`: rank 0 broadcasts `[3, 2, 1]` as one instance of the
    /// host's struct type whose fields lie in reverse order (`type_a`);
    /// the others receive three plain `i32` (`[1, 2, 3]`). Then rank 1
    /// adds 10 to its ints and broadcasts them the same way round (rank 0
    /// receives through the reversed type). Records the ints after each.
    pub static STRUCTURED = fn structured(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let ty = host_type(&args.type_a)?;
        let rank = world.rank();
        let first = world.process_at_rank(0);
        let second = world.process_at_rank(1 % world.size());
        let mut row = Row::of(world, args);
        let mut ints = if rank == 0 { [3i32, 2, 1] } else { [0; 3] };
        for (k, root) in [first, second].into_iter().enumerate() {
            if k == 1 {
                for i in ints.iter_mut() {
                    *i = if rank == root.rank() { *i + 10 } else { -1 };
                }
            }
            if rank == 0 {
                let mut view = MutView::with_count_and_datatype(&mut ints[..], 1, &ty)?;
                root.broadcast_into(&mut view)?;
            } else {
                root.broadcast_into(&mut ints[..])?;
            }
            row.put_all(ints.iter().map(|&v| v as i64))?;
        }
        Ok(())
    }
}

gpu_mpi_device::kernel! {
    /// `time`: reads the clock (`%globaltimer` on the GPU, the host's
    /// monotonic clock on the emulator) before and after a barrier; records
    /// both (the host checks that no rank left before the last one came).
    pub static TIME = fn time(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let start = intrinsics::clock_ns();
        world.barrier()?;
        let end = intrinsics::clock_ns();
        let mut row = Row::of(world, args);
        row.put(start as i64)?;
        row.put(end as i64)
    }
}

gpu_mpi_device::kernel! {
    /// `vector`: rank `r` sends `r * [1..=6]` as one instance of the host's
    /// `vector(2, 2, 3, i32)` (`type_a`: elements 0, 1, 3, 4) to the next
    /// rank and receives one from the previous into `[-1; 6]`; records it
    /// (elements 2 and 5 stay -1) and the status's source.
    pub static VECTOR = fn vector(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        let ty = host_type(&args.type_a)?;
        let rank = world.rank();
        let mut b1 = [0i32; 6];
        for (x, v) in b1.iter_mut().enumerate() {
            *v = rank * (x as i32 + 1);
        }
        let mut b2 = [-1i32; 6];
        world.barrier()?;
        let status = ring_shift_typed(world, &ty, &b1, &mut b2)?;
        world.barrier()?;
        let mut row = Row::of(world, args);
        row.put_all(b2.iter().map(|&v| v as i64))?;
        row.put(status.source_rank() as i64)
    }
}

/// Rank 0's part of `wait_any` and `wait_all`: immediate synchronous sends
/// of pi to every other rank, completed by `wait_any` one by one (records
/// each index's completion as a bit, then the count) or by one `wait_all`
/// (records 1). The other ranks receive from any source and record pi's
/// bits.
fn synchronous_fan_out(world: &World, args: &ExampleArgs, any: bool) -> Result<(), Error> {
    let n = ranks(world)?;
    let x = core::f32::consts::PI;
    let mut row = Row::of(world, args);
    if world.rank() != 0 {
        let mut y = 0f32;
        request::scope(|scope| -> Result<(), Error> {
            world
                .any_process()
                .immediate_receive_into(scope, &mut y)?
                .wait()
                .map(|_| ())
        })?;
        return row.put(y.to_bits() as i64);
    }
    request::scope(|scope| -> Result<(), Error> {
        let mut reqs = [const { Request::null() }; MAX_RANKS];
        for (i, r) in reqs[..n - 1].iter_mut().enumerate() {
            *r = world
                .process_at_rank(i as i32 + 1)
                .immediate_synchronous_send(scope, &x)?;
        }
        if !any {
            wait_all(&mut reqs[..n - 1], &mut [])?;
            return row.put(1);
        }
        let (mut bits, mut count) = (0i64, 0i64);
        while let AnyCompletion::Completed { index, result } = wait_any(&mut reqs[..n - 1])? {
            result?;
            bits |= 1 << index;
            count += 1;
        }
        row.put(bits)?;
        row.put(count)
    })
}

gpu_mpi_device::kernel! {
    /// `wait_any`: rank 0's synchronous sends completed with `wait_any`.
    pub static WAIT_ANY = fn wait_any_example(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        synchronous_fan_out(world, args, true)
    }
}

gpu_mpi_device::kernel! {
    /// `wait_all`: rank 0's synchronous sends completed with `wait_all`.
    pub static WAIT_ALL = fn wait_all_example(world: &World, args: &ExampleArgs) -> Result<(), Error> {
        synchronous_fan_out(world, args, false)
    }
}
