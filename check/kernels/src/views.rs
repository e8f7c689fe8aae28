//! Derived datatypes (views) between ranks: a view sent from rank 0 to
//! rank 1 (blocking, immediate, send-receive, matched probe) into a view or
//! bytes, with the status rank 1 saw; views in broadcast and gather; an
//! all-gather of views and an all-to-all whose counts disagree. One kernel,
//! the program picked by [`ViewArgs::program`]; check/tests/views.rs
//! builds the types on the host and checks the results against the host's
//! reference model.

use super::{prefix, prefix_mut};
use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::point_to_point::send_receive_into;
use gpu_mpi_device::request::scope;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{BufferMut, Error, GlobalSlice, MutView, TypeRef, View, World};

/// Rank 0 sends a view to rank 1, which receives into a view (or bytes)
/// and records the status: [`OUT_WORDS`] words at `out[0]`, rank 0's class
/// at `out[OUT_WORDS + 5]`.
pub const V_P2P: u32 = 0;
/// Rank 0 broadcasts a view to every rank's view, then every rank's view is
/// gathered at rank 0 into a view of `size` instances; rank `r` records the
/// two classes at `out[4 r..]`. Rank `r`'s view is at `dst[r s..]`, `s` =
/// `send_origin` bytes each; rank 0 gathers into `src`.
pub const V_COLLECTIVES: u32 = 1;
/// Every rank all-gathers column 1 of its 8 x 8 `u32` matrix (a view) into
/// a view of `size` columns of an `8 x 64` matrix (`recv_ty`: a column
/// resized to one element), then calls all-to-all with rank 0 passing a
/// column view of 8 elements where the others pass `8 x size` (a count
/// mismatch, found by the agreement), then a barrier. `out[r * 4..]`:
/// all-gather class, all-to-all class, barrier class; `dst[r * 2048..]`:
/// the all-gathered matrix.
pub const V_MISMATCH: u32 = 2;

/// How rank 0 sends and rank 1 receives ([`V_P2P`]).
pub const BLOCKING: u32 = 0;
/// `immediate_send` / `immediate_receive_into`, waited together.
pub const IMMEDIATE: u32 = 1;
/// Both ranks `send_receive_into` (a swap).
pub const SEND_RECEIVE: u32 = 2;
/// Rank 1 probes, then receives the matched message.
pub const MATCHED: u32 = 3;

/// Words rank 1 records: error class (0: success), bytes, count_of,
/// elements_of (`u32::MAX`: `MPI_UNDEFINED`), the datatype id, then for
/// `SEND_RECEIVE` rank 0's class at `OUT_WORDS + 5`.
pub const OUT_WORDS: usize = 8;

/// The arguments of [`SEMANTICS_VIEWS`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ViewArgs {
    /// The send type's encoding.
    pub send_ty: GlobalSlice<u64>,
    /// The receive type's encoding.
    pub recv_ty: GlobalSlice<u64>,
    /// Rank 0's buffer.
    pub src: GlobalSlice<u8>,
    /// Rank 1's buffer.
    pub dst: GlobalSlice<u8>,
    /// Rank 1's results.
    pub out: GlobalSlice<u32>,
    /// Instances of the send type.
    pub send_count: u32,
    /// Instances of the receive type.
    pub recv_count: u32,
    /// Where the send view's address lies in `src` (bytes).
    pub send_origin: u32,
    /// Where the receive view's address lies in `dst` (bytes).
    pub recv_origin: u32,
    /// How rank 0 sends and rank 1 receives ([`BLOCKING`] ...).
    pub mode: u32,
    /// 1: rank 1 receives into plain bytes (`u8`) instead of a view.
    pub recv_bytes: u32,
    /// Which program (the `V_*` constants).
    pub program: u32,
    /// Zero (alignment).
    pub reserved: u32,
}

gpu_mpi_device::kernel! {
    /// The `V_*` programs.
    pub static SEMANTICS_VIEWS = fn semantics_views(world: &World, args: &ViewArgs) -> Result<(), Error> {
        match args.program {
            V_P2P => view_p2p(world, args),
            V_COLLECTIVES => view_collectives(world, args),
            V_MISMATCH => view_mismatch(world, args),
            _ => Err(Error::OutOfBounds { index: args.program, len: V_MISMATCH + 1 }),
        }
    }
}

/// The class of a result, 0 for success.
fn class(r: &Result<gpu_mpi_device::Status, Error>) -> u32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.class() as u32,
    }
}

/// Rank 1's record of a receive: class, bytes, count_of, elements_of,
/// datatype id (the last four only with a status).
fn record(args: &ViewArgs, r: &Result<gpu_mpi_device::Status, Error>, ty: &TypeRef<'_>) -> Result<(), Error> {
    let status = match r {
        Ok(s) => Some(*s),
        Err(Error::Truncate { status, .. }) | Err(Error::TypeMismatch { status, .. }) => Some(*status),
        Err(_) => None,
    };
    let undefined = |x: Option<usize>| x.map_or(u32::MAX, |v| v as u32);
    args.out.write(0, class(r))?;
    if let Some(s) = status {
        args.out.write(1, s.bytes())?;
        args.out.write(2, undefined(s.count_of(ty)))?;
        args.out.write(3, undefined(s.elements_of(ty)))?;
        args.out.write(4, s.datatype_id())?;
    }
    Ok(())
}

/// [`V_P2P`].
fn view_p2p(world: &World, args: &ViewArgs) -> Result<(), Error> {
    // SAFETY: the host writes none of these buffers during the launch; rank
    // 0 alone reads `src` (and writes it in SEND_RECEIVE), rank 1 alone
    // writes `dst`.
    let (sty, rty) = unsafe {
        (
            TypeRef::from_global(&args.send_ty)?,
            TypeRef::from_global(&args.recv_ty)?,
        )
    };
    let me = world.rank();
    if me == 0 {
        // SAFETY: only rank 0 touches `src`; the host does not meanwhile.
        let src = unsafe { args.src.slice_mut(0, args.src.len()) }?;
        let peer = world.process_at_rank(1);
        let r = match args.mode {
            SEND_RECEIVE => {
                // Rank 0 sends its view and takes rank 1's message as bytes.
                let mut back = [0u8; 8];
                let v = View::with_origin(&*src, args.send_origin as usize, args.send_count as usize, &sty)?;
                send_receive_into(&v, &peer, &mut back[..], &peer).map(|_| ())
            }
            IMMEDIATE => {
                let v = View::with_origin(&*src, args.send_origin as usize, args.send_count as usize, &sty)?;
                scope(|s| peer.immediate_send_with_tag(s, &v, 5)?.wait().map(|_| ()))
            }
            _ => {
                let v = View::with_origin(&*src, args.send_origin as usize, args.send_count as usize, &sty)?;
                peer.send_with_tag(&v, 5)
            }
        };
        args.out
            .write(OUT_WORDS + 5, r.err().map_or(0, |e| e.class() as u32))?;
        return Ok(());
    }
    if me != 1 {
        return Ok(());
    }
    // SAFETY: only rank 1 touches `dst`; the host does not meanwhile.
    let dst = unsafe { args.dst.slice_mut(0, args.dst.len()) }?;
    let peer = world.process_at_rank(0);
    let origin = args.recv_origin as usize;
    let count = args.recv_count as usize;
    let r = if args.recv_bytes == 1 {
        receive(&peer, args.mode, &mut dst[..])
    } else {
        match MutView::with_origin(&mut *dst, origin, count, &rty) {
            Ok(mut mv) => receive(&peer, args.mode, &mut mv),
            Err(e) => {
                // A bad receive buffer: record its class, take the message
                // as bytes so that rank 0 completes.
                args.out.write(0, e.class() as u32)?;
                let mut sink = [0u8; 4096];
                let _ = peer.receive_into(&mut sink[..]);
                return Ok(());
            }
        }
    };
    record(args, &r, &rty)
}

/// Rank 1's receive from rank 0 in `mode`.
fn receive<B: BufferMut + ?Sized>(
    peer: &gpu_mpi_device::Process<'_>,
    mode: u32,
    buf: &mut B,
) -> Result<gpu_mpi_device::Status, Error> {
    match mode {
        IMMEDIATE => scope(|s| peer.immediate_receive_into_with_tag(s, buf, 5)?.wait()),
        SEND_RECEIVE => {
            let none = [0u8; 0];
            send_receive_into(&none[..], peer, buf, peer)
        }
        MATCHED => {
            let (m, _) = peer.matched_probe_with_tag(5)?;
            m.matched_receive_into(buf)
        }
        _ => peer.receive_into_with_tag(buf, 5),
    }
}

/// [`V_COLLECTIVES`].
fn view_collectives(world: &World, args: &ViewArgs) -> Result<(), Error> {
    // SAFETY: the host writes no encoding during the launch.
    let ty = unsafe { TypeRef::from_global(&args.send_ty)? };
    let r = world.rank() as usize;
    let span = args.send_origin as usize;
    // SAFETY: rank r alone touches `dst[r * span..(r + 1) * span]`.
    let mine = unsafe { args.dst.slice_mut(r * span, span)? };
    let c1 = {
        let mut v = MutView::with_count_and_datatype(&mut *mine, 1, &ty)?;
        class(
            &world
                .process_at_rank(0)
                .broadcast_into(&mut v)
                .map(|_| gpu_mpi_device::Status::empty()),
        )
    };
    let c2 = if r == 0 {
        // SAFETY: only rank 0 touches `src`.
        let src = unsafe { args.src.slice_mut(0, args.src.len())? };
        let v = View::with_count_and_datatype(&*mine, 1, &ty)?;
        let mut rv = MutView::with_count_and_datatype(&mut *src, world.size() as usize, &ty)?;
        class(
            &world
                .process_at_rank(0)
                .gather_into_root(&v, &mut rv)
                .map(|_| gpu_mpi_device::Status::empty()),
        )
    } else {
        let v = View::with_count_and_datatype(&*mine, 1, &ty)?;
        class(
            &world
                .process_at_rank(0)
                .gather_into(&v)
                .map(|_| gpu_mpi_device::Status::empty()),
        )
    };
    args.out.write(r * 4, c1)?;
    args.out.write(r * 4 + 1, c2)?;
    Ok(())
}

/// [`V_MISMATCH`].
fn view_mismatch(world: &World, args: &ViewArgs) -> Result<(), Error> {
    use gpu_mpi_device::derived::vector;
    let r = world.rank() as usize;
    let n = world.size() as usize;
    let col = vector::<u32>(8, 1, 8);
    let ty = TypeRef::new(&col)?;
    // SAFETY: the host writes no encoding during the launch.
    let wty = unsafe { TypeRef::from_global(&args.recv_ty)? };
    let m: [u32; 64] = core::array::from_fn(|k| (1000 * r + k) as u32);
    // SAFETY: rank r alone touches its 2048 bytes of `dst`.
    let mine = unsafe { args.dst.slice_mut(r * 2048, 2048)? };
    // Into `n` instances of the resized column: instance q is column q.
    let c1 = {
        let v = View::with_origin(&m[..], 4, 1, &ty)?;
        let mut into = MutView::with_count_and_datatype(&mut *mine, n, &wty)?;
        world.all_gather_into(&v, &mut into)
    };
    let c2 = if r == 0 {
        let v = View::with_origin(&m[..], 4, 1, &ty)?;
        let mut recv = [0u32; 8 * 64];
        world.all_to_all_into(&v, prefix_mut(&mut recv[..], 8 * n)?)
    } else {
        let send = [r as u32; 8 * 64];
        let mut recv = [0u32; 8 * 64];
        world.all_to_all_into(prefix(&send[..], 8 * n)?, prefix_mut(&mut recv[..], 8 * n)?)
    };
    let c3 = world.barrier();
    let class = |r: &Result<(), Error>| r.err().map_or(0, |e| e.class() as u32);
    args.out.write(r * 4, class(&c1))?;
    args.out.write(r * 4 + 1, class(&c2))?;
    args.out.write(r * 4 + 2, class(&c3))?;
    Ok(())
}
