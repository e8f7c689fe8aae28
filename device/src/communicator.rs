//! Sub-communicators and groups (MPI 4.1 chapter 7; rsmpi vocabulary).
//!
//! A [`SimpleCommunicator`] is made collectively from a parent (the
//! [`World`] or another `SimpleCommunicator`) by a split
//! ([`Communicator::split_by_color`], `split_by_color_with_key`,
//! `split_shared`, `split_by_warp`, `duplicate`,
//! `split_by_subgroup_collective`). Nothing is allocated on a heap: each
//! creation takes the next free *context* of the world memory
//! (`WorldConfig::communicators` of them, never reused during a launch)
//! and its table of `ranks` [`CommEntry`](crate::memory::CommEntry)s; the
//! handle itself is four words.
//!
//! A creation, on a parent of `n` ranks:
//! 1. parent rank 0 takes the next context id from the world's counter
//!    (`MPI_ERR_COMM` on every rank when none is left) and broadcasts it
//!    over the parent (binomial tree, ceil(log2 n) rounds);
//! 2. every rank writes its (colour, key) into the new table at its parent
//!    rank; a barrier of the parent (dissemination, ceil(log2 n) rounds);
//! 3. every rank reads the `n` pairs (O(n) per rank) and computes its
//!    communicator's first entry, size and its own position (colour, then
//!    key, then parent rank), writes its world rank there and its new rank
//!    at its world rank (the inverse map); a second barrier publishes them.
//!
//! The communicators of one creation share its context: their members are
//! disjoint, so their messages cannot meet. Messages carry the context in
//! their envelope (`SlotHeader::context`: `2 × id` for point-to-point, `2 ×
//! id + 1` for the collectives), so a receive on one communicator never
//! matches a message of another, even between the same ranks with the same
//! tag (MPI 3.5 and 7.1.2).

use crate::collective::general::{Place, View};
use crate::error::Error;
use crate::memory::{CommWord, Core};
use crate::shim::{self, Ordering};
use crate::topology::{AnyProcess, CommInfo, Communicator, Process, World, PROC_NULL};
use crate::trace::{self, Creation};
use crate::wait::Call;

/// The colour of a split (`MPI_Comm_split`'s `color`): ranks passing the
/// same colour land in the same new communicator.
///
/// Standard section: MPI 4.1 §7.4.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Color(u32);

impl Color {
    /// `MPI_UNDEFINED`: the rank joins no communicator (the split returns
    /// `None` to it).
    pub const fn undefined() -> Color {
        Color(u32::MAX)
    }
    /// A colour. `u32::MAX` is [`Color::undefined`].
    pub const fn with_value(value: u32) -> Color {
        Color(value)
    }
    /// Whether this is [`Color::undefined`].
    pub const fn is_undefined(&self) -> bool {
        self.0 == u32::MAX
    }
}

/// How two communicators relate (`MPI_Comm_compare`'s result).
///
/// Standard section: MPI 4.1 §7.4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommunicatorRelation {
    /// `MPI_IDENT`: the same communicator (same context and members).
    Identical,
    /// `MPI_CONGRUENT`: the same members in the same order, another context.
    Congruent,
    /// `MPI_SIMILAR`: the same members in another order.
    Similar,
    /// `MPI_UNEQUAL`: other members.
    Unequal,
}

/// A communicator made from a parent (rsmpi's `SimpleCommunicator`),
/// valid while the world lives. Its point-to-point calls go through
/// [`Communicator::process_at_rank`] and [`Communicator::any_process`] as
/// on the world (ranks and statuses in its own numbering); its collectives
/// are [`CommunicatorCollectives`](crate::collective::CommunicatorCollectives)
/// and [`Root`](crate::collective::Root), with the algorithms of
/// `collective/general.rs` (docs/limits.md gives their costs).
///
/// Standard section: MPI 4.1 §7.4.
#[derive(Clone, Copy)]
pub struct SimpleCommunicator<'w> {
    pub(crate) world: &'w World,
    pub(crate) info: CommInfo,
    pub(crate) rank: u32,
}

impl<'w> SimpleCommunicator<'w> {
    /// The world it was made in.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// Its context id (1 to the world's `communicators`; the world is 0).
    /// The communicators of one split share it.
    pub fn context_id(&self) -> u32 {
        self.info.id
    }

    /// The world rank of its rank `r`, or `MPI_ERR_RANK`.
    pub fn world_rank_of(&self, r: i32) -> Result<i32, Error> {
        if r == PROC_NULL {
            return Err(Error::InvalidRank {
                rank: r,
                size: self.info.size as i32,
            });
        }
        self.info.world_rank(self.world, r)
    }
}

impl Communicator for SimpleCommunicator<'_> {
    fn rank(&self) -> i32 {
        self.rank as i32
    }
    fn size(&self) -> i32 {
        self.info.size as i32
    }
    fn process_at_rank(&self, r: i32) -> Process<'_> {
        Process {
            world: self.world,
            comm: self.info,
            rank: r,
        }
    }
    fn null_process(&self) -> Process<'_> {
        Process {
            world: self.world,
            comm: self.info,
            rank: PROC_NULL,
        }
    }
    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess {
            world: self.world,
            comm: self.info,
        }
    }
    #[allow(private_interfaces)]
    fn view(&self) -> View<'_> {
        View {
            world: self.world,
            comm: self.info,
            rank: self.rank,
            size: self.info.size,
        }
    }
}

impl<'w> View<'w> {
    /// The view of the communicator `comm` for the calling rank (its rank
    /// there from the inverse map; the world's as it is).
    pub(crate) fn of(world: &'w World, comm: CommInfo) -> View<'w> {
        if comm.id == 0 {
            return View {
                world,
                comm,
                rank: world.rank,
                size: world.layout.ranks,
            };
        }
        View {
            world,
            comm,
            rank: world.core().comm_rank_of(comm.context(), world.rank) as u32,
            size: comm.size,
        }
    }

    /// Runs collective `call` (root `root` in this communicator's
    /// numbering, -2 for none) as `f`, traced as a span: entered before
    /// `f`, left with its result on every path (`trace::Span`).
    #[inline(always)]
    pub(crate) fn traced(
        &self,
        call: Call,
        root: i32,
        f: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let c = self.comm;
        let span = trace::Span::enter_in(&self.world.core(), call as u32, root, c.id, c.start, c.size);
        span.leave(f())
    }

    fn word(&self, id: u32, index: u32, word: CommWord) -> &'w shim::AtomicU32 {
        let core: Core = self.world.core();
        let a = core.comm_word(id, index, word) as *const shim::AtomicU32;
        // SAFETY: the word lies in the world memory, which lives as long
        // as the world (`'w`).
        unsafe { &*a }
    }

    /// Takes a context id for a creation on this communicator: rank 0
    /// draws it from the world's counter and broadcasts it; 0 when none
    /// was left (the same on every rank).
    fn new_context(&self) -> Result<u32, Error> {
        let core = self.world.core();
        let limit = core.communicators();
        let mut id = 0u32;
        if self.rank == 0 {
            let counter = core.comm_counter();
            // Relaxed: the number itself publishes nothing; the table the
            // creation writes is published by its own barriers.
            let mut seen = counter.load(Ordering::Relaxed);
            while seen < limit {
                // Relaxed, as above.
                match counter.compare_exchange(seen, seen + 1, Ordering::Relaxed) {
                    Ok(_) => {
                        id = seen + 1;
                        break;
                    }
                    Err(now) => seen = now,
                }
            }
        }
        let mut word = id;
        self.broadcast_bytes(
            0,
            <u32 as crate::Equivalence>::DATATYPE,
            Place::plain(&mut word as *mut u32 as *const u8),
            4,
        )?;
        if word == 0 {
            return Err(Error::CommunicatorLimit { limit });
        }
        Ok(word)
    }

    /// The split of this communicator by (`color`, `key`): the creation
    /// described in the module docs, traced as a span of creation `how`
    /// (`trace::creation_entered`, `trace::creation_left`).
    pub(crate) fn split(
        &self,
        how: Creation,
        color: Color,
        key: i32,
    ) -> Result<Option<SimpleCommunicator<'w>>, Error> {
        let core = self.world.core();
        trace::creation_entered(&core, how, self.comm.id, color.0, key, self.rank, self.size);
        let r = self.split_untraced(color, key);
        let made = match &r {
            Ok(Some(c)) => Some((c.info.id, c.info.start, c.info.size, c.rank)),
            _ => None,
        };
        trace::creation_left(&core, how, made, r.as_ref().map(|_| ()));
        r
    }

    fn split_untraced(&self, color: Color, key: i32) -> Result<Option<SimpleCommunicator<'w>>, Error> {
        let id = self.new_context()?;
        let me = self.rank;
        // Relaxed: published by the barrier below (its messages' Release
        // swaps and Acquire takes).
        self.word(id, me, CommWord::Color)
            .store(color.0, Ordering::Relaxed);
        self.word(id, me, CommWord::Key)
            .store(key as u32, Ordering::Relaxed);
        self.barrier()?;
        let mut found = None;
        if !color.is_undefined() {
            let (mut start, mut size, mut before) = (0u32, 0u32, 0u32);
            for q in 0..self.size {
                // Relaxed: written before the barrier above, which this
                // rank passed.
                let c = self.word(id, q, CommWord::Color).load(Ordering::Relaxed);
                if c == u32::MAX {
                    continue;
                }
                if c < color.0 {
                    start += 1;
                } else if c == color.0 {
                    size += 1;
                    // Relaxed, as above.
                    let k = self.word(id, q, CommWord::Key).load(Ordering::Relaxed) as i32;
                    if k < key || (k == key && q < me) {
                        before += 1;
                    }
                }
            }
            let w = self.world.rank;
            // Relaxed: published by the closing barrier below.
            self.word(id, start + before, CommWord::Member)
                .store(w, Ordering::Relaxed);
            self.word(id, w, CommWord::Inverse)
                .store(before, Ordering::Relaxed);
            found = Some(SimpleCommunicator {
                world: self.world,
                info: CommInfo { id, start, size },
                rank: before,
            });
        }
        self.barrier()?;
        if let Some(c) = &found {
            crate::collective::hardware::store_kind(self.world, c.info);
        }
        Ok(found)
    }
}

/// The colour `split_shared` gives world rank `w`: its block.
pub(crate) fn block_color(world: &World, w: u32) -> Color {
    Color(w / world.layout.block_dim)
}

/// The colour `split_by_warp` gives world rank `w`: its warp (32
/// consecutive threads of its block; a block whose size is not a multiple
/// of 32 ends with a partial warp).
pub(crate) fn warp_color(world: &World, w: u32) -> Color {
    let bd = world.layout.block_dim;
    let warps = bd.div_ceil(32);
    Color((w / bd) * warps + (w % bd) / 32)
}

/// `MPI_Comm_compare` of two views.
pub(crate) fn compare_views(a: &View<'_>, b: &View<'_>) -> CommunicatorRelation {
    if a.comm == b.comm && a.size == b.size {
        return CommunicatorRelation::Identical;
    }
    if a.size != b.size {
        return CommunicatorRelation::Unequal;
    }
    let n = a.size;
    if (0..n).all(|r| a.comm.member(a.world, r) == b.comm.member(b.world, r)) {
        return CommunicatorRelation::Congruent;
    }
    let in_b = |w: u32| (0..n).any(|r| b.comm.member(b.world, r) == w);
    if (0..n).all(|r| in_b(a.comm.member(a.world, r))) {
        CommunicatorRelation::Similar
    } else {
        CommunicatorRelation::Unequal
    }
}

/// A group of processes (`MPI_Group`, MPI 4.1 §7.3): an ordered set of
/// world ranks, heap-free. The group of a communicator reads its members
/// from the communicator's table; [`Group::include`] and
/// [`Group::exclude`] borrow their rank lists and the group they select
/// from.
///
/// Standard section: MPI 4.1 §7.3.
#[derive(Clone, Copy)]
pub struct Group<'a> {
    world: &'a World,
    members: Members<'a>,
}

#[derive(Clone, Copy)]
enum Members<'a> {
    /// A communicator's members.
    Comm(CommInfo, u32),
    /// Ranks `ranks[i]` of `parent`, in that order.
    Include(&'a Group<'a>, &'a [i32]),
    /// The ranks of `parent` not in the list, in their order.
    Exclude(&'a Group<'a>, &'a [i32]),
}

impl<'a> Group<'a> {
    pub(crate) fn of_view(view: &View<'a>) -> Group<'a> {
        Group {
            world: view.world,
            members: Members::Comm(view.comm, view.size),
        }
    }

    /// Its size (`MPI_Group_size`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn size(&self) -> i32 {
        match self.members {
            Members::Comm(_, n) => n as i32,
            Members::Include(_, ranks) => ranks.len() as i32,
            Members::Exclude(parent, ranks) => parent.size() - ranks.len() as i32,
        }
    }

    /// The world rank of its rank `r < size` (unchecked beyond the bounds
    /// of its parts).
    fn world_of(&self, r: i32) -> u32 {
        match self.members {
            Members::Comm(c, _) => c.member(self.world, r as u32),
            Members::Include(parent, ranks) => parent.world_of(ranks[r as usize]),
            Members::Exclude(parent, ranks) => {
                let mut seen = -1;
                for q in 0..parent.size() {
                    if !ranks.contains(&q) {
                        seen += 1;
                        if seen == r {
                            return parent.world_of(q);
                        }
                    }
                }
                u32::MAX
            }
        }
    }

    /// The rank in this group of world rank `w`, if it is a member (O(size)).
    fn rank_of_world(&self, w: u32) -> Option<i32> {
        (0..self.size()).find(|&r| self.world_of(r) == w)
    }

    /// The calling rank's rank in the group, `None` when it is not a
    /// member (`MPI_Group_rank`, `MPI_UNDEFINED`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn rank(&self) -> Option<i32> {
        self.rank_of_world(self.world.rank)
    }

    /// The rank in `other` of this group's rank `r`: `Some(None)` when it
    /// is not in `other` (`MPI_UNDEFINED`); `MPI_ERR_RANK` for a bad `r`.
    /// `PROC_NULL` translates to itself.
    ///
    /// Standard section: MPI 4.1 §7.3.1 (`MPI_Group_translate_ranks`).
    pub fn translate_rank(&self, r: i32, other: &Group<'_>) -> Result<Option<i32>, Error> {
        if r == PROC_NULL {
            return Ok(Some(PROC_NULL));
        }
        if r < 0 || r >= self.size() {
            return Err(Error::InvalidRank {
                rank: r,
                size: self.size(),
            });
        }
        Ok(other.rank_of_world(self.world_of(r)))
    }

    /// `MPI_Group_translate_ranks`: `out[i]` is the rank in `other` of
    /// `ranks[i]` (`-32766`, `MPI_UNDEFINED`'s value here, for none);
    /// `out` needs `ranks.len()` entries (`MPI_ERR_COUNT`).
    ///
    /// Standard section: MPI 4.1 §7.3.1.
    pub fn translate_ranks(&self, ranks: &[i32], other: &Group<'_>, out: &mut [i32]) -> Result<(), Error> {
        if out.len() < ranks.len() {
            return Err(Error::CountMismatch {
                count: out.len() as u32,
                expected: ranks.len() as u32,
            });
        }
        for (o, &r) in out.iter_mut().zip(ranks) {
            *o = self.translate_rank(r, other)?.unwrap_or(UNDEFINED);
        }
        Ok(())
    }

    /// Checks a rank list of [`Group::include`] or [`Group::exclude`]:
    /// each in `0..size` and distinct, else `MPI_ERR_RANK`.
    fn check_list(&self, ranks: &[i32]) -> Result<(), Error> {
        for (i, &r) in ranks.iter().enumerate() {
            if r < 0 || r >= self.size() || ranks[..i].contains(&r) {
                return Err(Error::InvalidRank {
                    rank: r,
                    size: self.size(),
                });
            }
        }
        Ok(())
    }

    /// The group of this group's ranks `ranks`, in that order
    /// (`MPI_Group_incl`); `MPI_ERR_RANK` for a rank out of range or
    /// listed twice.
    ///
    /// Standard section: MPI 4.1 §7.3.2.
    pub fn include(&'a self, ranks: &'a [i32]) -> Result<Group<'a>, Error> {
        self.check_list(ranks)?;
        Ok(Group {
            world: self.world,
            members: Members::Include(self, ranks),
        })
    }

    /// The group of this group's ranks not in `ranks`, in their order
    /// (`MPI_Group_excl`); `MPI_ERR_RANK` as [`Group::include`].
    ///
    /// Standard section: MPI 4.1 §7.3.2.
    pub fn exclude(&'a self, ranks: &'a [i32]) -> Result<Group<'a>, Error> {
        self.check_list(ranks)?;
        Ok(Group {
            world: self.world,
            members: Members::Exclude(self, ranks),
        })
    }
}

/// `MPI_UNDEFINED` as [`Group::translate_ranks`] writes it.
pub const UNDEFINED: i32 = -32766;

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread: creation, the limit, and
    //! context isolation of self-sends. Multi-rank behaviour is tested on
    //! the emulator (check/tests/comm.rs).
    extern crate std;
    use super::*;
    use crate::point_to_point::{Destination, Source};
    use crate::state::WorldConfig;
    use std::vec;
    use std::vec::Vec;

    fn with_world(config: WorldConfig, f: impl FnOnce(&World)) {
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // SAFETY: freshly initialised world memory that outlives the world.
        let world = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        f(&world);
    }

    #[test]
    fn self_messages_match_only_their_own_context() {
        with_world(WorldConfig::new(1, 1), |w| {
            let d = w.duplicate().unwrap();
            assert_eq!((d.rank(), d.size(), d.context_id()), (0, 1, 1));
            d.process_at_rank(0).send_with_tag(&11u32, 3).unwrap();
            w.process_at_rank(0).send_with_tag(&22u32, 3).unwrap();
            assert_eq!(
                d.any_process().immediate_probe().unwrap().map(|s| s.tag()),
                Some(3)
            );
            let (v, s) = w.any_process().receive::<u32>().unwrap();
            assert_eq!((v, s.source_rank()), (22, 0));
            assert_eq!(w.any_process().immediate_probe().unwrap(), None);
            let (v, _) = d.process_at_rank(0).receive::<u32>().unwrap();
            assert_eq!(v, 11);
            assert_eq!(
                d.process_at_rank(1).send(&1u8),
                Err(Error::InvalidRank { rank: 1, size: 1 })
            );
        });
    }

    #[test]
    fn requests_on_a_duplicate_match_only_its_messages() {
        use crate::request::scope;
        with_world(WorldConfig::new(1, 1), |w| {
            let d = w.duplicate().unwrap();
            let (mut on_d, mut on_w) = (0u32, 0u32);
            scope(|s| {
                let mut rd = d
                    .any_process()
                    .immediate_receive_into_with_tag(s, &mut on_d, 1)
                    .unwrap();
                let rw = w
                    .process_at_rank(0)
                    .immediate_receive_into_with_tag(s, &mut on_w, 1)
                    .unwrap();
                w.process_at_rank(0).send_with_tag(&7u32, 1).unwrap();
                assert_eq!(rd.test(), None);
                d.process_at_rank(0).send_with_tag(&8u32, 1).unwrap();
                assert_eq!(rd.wait().unwrap().source_rank(), 0);
                assert_eq!(rw.wait().unwrap().tag(), 1);
            });
            assert_eq!((on_d, on_w), (8, 7));
        });
    }

    #[test]
    fn the_limit_gives_mpi_err_comm_and_undefined_gives_none() {
        let mut c = WorldConfig::new(1, 1);
        c.communicators = 2;
        with_world(c, |w| {
            assert!(w.split_by_color(Color::undefined()).unwrap().is_none());
            let s = w.split_shared().unwrap();
            assert_eq!(s.compare(w), CommunicatorRelation::Congruent);
            assert_eq!(s.compare(&s), CommunicatorRelation::Identical);
            let e = w.duplicate().map(|_| ()).unwrap_err();
            assert_eq!(e, Error::CommunicatorLimit { limit: 2 });
            assert_eq!(e.class(), crate::ErrorClass::Comm);
            // The world still works.
            w.process_at_rank(0).send(&5u8).unwrap();
            assert_eq!(w.any_process().receive::<u8>().unwrap().0, 5);
        });
    }
}
