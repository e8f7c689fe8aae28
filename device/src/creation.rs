//! Creating communicators (MPI 4.1 §7.4): the [`CommunicatorCreation`]
//! trait, provided for every [`Communicator`], and the split that every
//! creation is. A creation is collective over its parent and runs the
//! parent's collectives, so it sits above them.
//!
//! A [`SimpleCommunicator`] is made collectively from a parent (the
//! [`World`] or another `SimpleCommunicator`) by a split
//! ([`CommunicatorCreation::split_by_color`], `split_by_color_with_key`,
//! `split_shared`, `split_by_warp`, `duplicate`,
//! `split_by_subgroup_collective`). Nothing is allocated on a heap: each
//! creation takes the next free *context* of the world memory
//! (`WorldConfig::communicators` of them, never reused during a launch)
//! and its table of `ranks` [`CommEntry`](crate::records::CommEntry)s; the
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

use crate::buffers::Place;
use crate::collective::general::Tag;
use crate::communicator::{
    block_color, warp_color, Color, CommInfo, CommView, Communicator, Group, SimpleCommunicator,
};
use crate::error::Error;
use crate::records::{CommWord, Core};
use crate::shim::{self, Ordering};
use crate::trace::{self, Creation};

/// The creation calls of every communicator (`use
/// gpu_mpi_device::traits::*;` brings them in scope): collective over the
/// communicator they are called on.
pub trait CommunicatorCreation: Communicator {
    /// Splits the communicator by colour (`MPI_Comm_split` with the key
    /// of every rank its rank here: the new ranks keep this order).
    /// Collective; `Color::undefined()` ranks get `None`.
    ///
    /// Standard section: MPI 4.1 §7.4.2.
    fn split_by_color(&self, color: Color) -> Result<Option<SimpleCommunicator<'_>>, Error> {
        self.split_by_color_with_key(color, self.rank())
    }

    /// `MPI_Comm_split`: ranks of one colour form a communicator, ranked
    /// by `key`, ties broken by their rank here. Collective; fails with
    /// `MPI_ERR_COMM` on every rank when the world's communicators are all
    /// used.
    ///
    /// Standard section: MPI 4.1 §7.4.2.
    fn split_by_color_with_key(
        &self,
        color: Color,
        key: i32,
    ) -> Result<Option<SimpleCommunicator<'_>>, Error> {
        self.view().split(Creation::Split, color, key)
    }

    /// One communicator per block: the ranks that share a block's memory
    /// and barrier (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), in the
    /// order of their ranks here.
    ///
    /// Standard section: MPI 4.1 §7.4.2.
    fn split_shared(&self) -> Result<SimpleCommunicator<'_>, Error> {
        let v = self.view();
        let color = block_color(v.world, v.world.rank);
        v.split(Creation::SplitShared, color, self.rank())?
            .ok_or(Error::Intern)
    }

    /// One communicator per warp (our extension, in the manner of
    /// `MPI_Comm_split_type`): the ranks of 32 consecutive threads of a
    /// block (the last warp of a block whose size is not a multiple of 32
    /// is partial), in the order of their ranks here.
    fn split_by_warp(&self) -> Result<SimpleCommunicator<'_>, Error> {
        let v = self.view();
        let color = warp_color(v.world, v.world.rank);
        v.split(Creation::SplitByWarp, color, self.rank())?
            .ok_or(Error::Intern)
    }

    /// A new communicator of the same ranks in the same order, with a
    /// context of its own (`MPI_Comm_dup`). Collective.
    ///
    /// Standard section: MPI 4.1 §7.4.2.
    fn duplicate(&self) -> Result<SimpleCommunicator<'_>, Error> {
        self.view()
            .split(Creation::Duplicate, Color::with_value(0), self.rank())?
            .ok_or(Error::Intern)
    }

    /// The communicator of the ranks of `group`, ranked as in the group
    /// (`MPI_Comm_create`): collective over this communicator, every rank
    /// passing the same group (a subgroup of this communicator's); ranks
    /// outside it get `None`.
    ///
    /// Standard section: MPI 4.1 §7.4.2.
    fn split_by_subgroup_collective(
        &self,
        group: &Group<'_>,
    ) -> Result<Option<SimpleCommunicator<'_>>, Error> {
        let (color, key) = match group.rank() {
            Some(r) => (Color::with_value(0), r),
            None => (Color::undefined(), 0),
        };
        self.view().split(Creation::Subgroup, color, key)
    }
}

impl<C: Communicator + ?Sized> CommunicatorCreation for C {}

impl<'w> CommView<'w> {
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
        let (end, limit) = core.context_range();
        let mut id = 0u32;
        if self.rank == 0 {
            let counter = core.comm_counter();
            // Relaxed: the number itself publishes nothing; the table the
            // creation writes is published by its own barriers.
            let mut seen = counter.load(Ordering::Relaxed);
            while seen < end {
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
        if self.world.creation_by_messages() {
            return self.split_by_messages(color, key);
        }
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
            // The pairs were written before the barrier above, which this
            // rank passed.
            let (start, size, before) = self.place(id, color, key);
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

impl<'w> CommView<'w> {
    /// [`CommView::split`] in a world across processes
    /// (docs/distributed.md): each process holds its own copy of the new
    /// table, so a rank cannot read the others' entries after a barrier.
    /// Every rank instead sends its entry to every other rank of the parent
    /// (step `s`: to `rank + s`, from `rank - s`; `n - 1` exchanges of 8
    /// bytes) and writes each one it gets into its own process's table: the
    /// (colour, key) pairs, then, once it has computed its place, each
    /// member's (place, new rank), from which it writes the whole member
    /// and inverse tables of its process. 2 (n - 1) exchanges per rank
    /// instead of two barriers; the results are those of the split above.
    fn split_by_messages(&self, color: Color, key: i32) -> Result<Option<SimpleCommunicator<'w>>, Error> {
        let id = self.new_context()?;
        self.each_entry([color.0, key as u32], |q, [c, k]| {
            // Relaxed: every rank of this process that writes the word
            // writes the same value, and each reads only words it wrote
            // itself (this exchange is its own copy of the parent's entries).
            self.word(id, q, CommWord::Color).store(c, Ordering::Relaxed);
            // Relaxed, as above.
            self.word(id, q, CommWord::Key).store(k, Ordering::Relaxed);
        })?;
        let mut found = None;
        let mut place = [u32::MAX; 2];
        if !color.is_undefined() {
            // The pairs were written by this rank above.
            let (start, size, before) = self.place(id, color, key);
            place = [start + before, before];
            found = Some(SimpleCommunicator {
                world: self.world,
                info: CommInfo { id, start, size },
                rank: before,
            });
        }
        let write_place = |q: u32, [at, new_rank]: [u32; 2]| {
            if at == u32::MAX {
                return;
            }
            let w = self.comm.member(self.world, q);
            // Relaxed: as the pairs above, every writer of this process
            // writes the same value.
            self.word(id, at, CommWord::Member).store(w, Ordering::Relaxed);
            // Relaxed, as above.
            self.word(id, w, CommWord::Inverse)
                .store(new_rank, Ordering::Relaxed);
        };
        self.each_entry(place, write_place)?;
        if let Some(c) = &found {
            crate::collective::hardware::store_kind(self.world, c.info);
        }
        Ok(found)
    }

    /// Where this rank lands in the split `id` by (`color`, `key`), from
    /// the table's pairs of every rank of this communicator: the first
    /// entry of its colour's communicator, that communicator's size, and
    /// its rank there (colour, then key, then rank here).
    fn place(&self, id: u32, color: Color, key: i32) -> (u32, u32, u32) {
        let (mut start, mut size, mut before) = (0u32, 0u32, 0u32);
        for q in 0..self.size {
            // Relaxed: the caller made every pair visible to this rank (a
            // barrier after them, or its own writes).
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
                if k < key || (k == key && q < self.rank) {
                    before += 1;
                }
            }
        }
        (start, size, before)
    }

    /// Sends `mine` to every other rank of this communicator and calls
    /// `take(q, entry)` with this rank's own entry and then each other
    /// rank `q`'s, on the collective context (tag `Creation`).
    fn each_entry(&self, mine: [u32; 2], mut take: impl FnMut(u32, [u32; 2])) -> Result<(), Error> {
        let (me, n) = (self.rank, self.size);
        take(me, mine);
        for s in 1..n {
            let mut got = [0u32; 2];
            self.send_receive(
                Some((me + s) % n),
                Place::plain(mine.as_ptr() as *const u8),
                8,
                Some((me + n - s) % n),
                Place::plain(got.as_mut_ptr() as *const u8),
                8,
                Tag::Creation,
                <u32 as crate::Equivalence>::DATATYPE,
            )?;
            take((me + n - s) % n, got);
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! One-rank worlds on a plain host thread: creation, the limit, and
    //! context isolation of self-sends. Multi-rank behaviour is tested on
    //! the emulator (check/tests/comm.rs).
    extern crate std;
    use super::*;
    use crate::communicator::{CommunicatorRelation, World};
    use crate::layout::WorldConfig;
    use crate::point_to_point::{Destination, Source};
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
    fn a_process_draws_contexts_from_its_own_range() {
        let mut config = WorldConfig::new(1, 1);
        config.communicators = 6;
        let layout = config.layout().unwrap();
        let mut mem: Vec<u64> = vec![0; layout.total.div_ceil(8)];
        let bytes = bytemuck::cast_slice_mut::<u64, u8>(&mut mem);
        config.write_header(bytes).unwrap();
        // The second of three processes: ids 3 and 4.
        layout.write_context_range(bytes, 2, 2).unwrap();
        assert_eq!(layout.write_context_range(bytes, 5, 2), None);
        // SAFETY: initialised world memory that outlives the world.
        let w = unsafe { World::attach(bytes.as_mut_ptr()) }.unwrap();
        assert_eq!(w.duplicate().unwrap().context_id(), 3);
        assert_eq!(w.duplicate().unwrap().context_id(), 4);
        let e = w.duplicate().map(|_| ()).unwrap_err();
        assert_eq!(e, Error::CommunicatorLimit { limit: 2 });
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
