//! The shim's warp collectives and block-shared scratch in one kernel, so
//! that ptxas assembles every one of them (`scripts/ptx-check.sh`) and the
//! emulator checks their values (gpu-mpi-check's `warp` test).

use crate::CaseArgs;
use gpu_mpi_device::intrinsics;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, World};

/// Words each rank of [`SEMANTICS_WARP`] writes.
pub const WARP_WORDS: u32 = 13;

gpu_mpi_device::kernel! {
    /// Every warp collective with the warp's own mask, then a block sum
    /// through the shared scratch; rank `r` writes [`WARP_WORDS`] words at
    /// `r * stride`: xor-butterfly sum (full warps; 0 on partial ones),
    /// shfl_down sum at lane 0 (0 elsewhere), shfl_up inclusive prefix,
    /// ballot of odd lanes, match_any of lane / 3, lane 0's value, the next
    /// lane's value, packed votes (all(v > 0), any(last lane), any(false),
    /// all(even lane), match_all of one 64-bit value, match_all of values
    /// whose high halves differ on the last lane), the low and high halves of a 64-bit broadcast from
    /// the last lane, the block sum, the active mask, the SM id.
    /// The value of rank `r` is `r + 1`.
    pub static SEMANTICS_WARP = fn semantics_warp(world: &World, args: &CaseArgs) -> Result<(), Error> {
        let r = world.rank() as usize;
        let c = intrinsics::coordinates();
        let lane = c.thread % 32;
        let m = intrinsics::warp_mask();
        let n = m.count_ones();
        let v = r as u32 + 1;
        let mut s = v;
        for off in [16, 8, 4, 2, 1] {
            s = s.wrapping_add(intrinsics::shfl_xor_sync(m, s, off));
        }
        let mut d = v;
        for off in [16, 8, 4, 2, 1] {
            let o = intrinsics::shfl_down_sync(m, d, off);
            if lane + off < n {
                d = d.wrapping_add(o);
            }
        }
        let mut p = v;
        for off in [1, 2, 4, 8, 16] {
            let o = intrinsics::shfl_up_sync(m, p, off);
            if lane >= off {
                p = p.wrapping_add(o);
            }
        }
        let ballot = intrinsics::vote_ballot_sync(m, lane % 2 == 1);
        let same = intrinsics::match_any_sync(m, lane / 3);
        let first = intrinsics::shfl_sync(m, v, 0);
        let next = intrinsics::shfl_sync(m, v, if lane + 1 < n { lane + 1 } else { 0 });
        let votes = u32::from(intrinsics::vote_all_sync(m, v > 0))
            | u32::from(intrinsics::vote_any_sync(m, lane + 1 == n)) << 1
            | u32::from(intrinsics::vote_any_sync(m, false)) << 2
            | u32::from(intrinsics::vote_all_sync(m, lane.is_multiple_of(2))) << 3
            | u32::from(intrinsics::match_all_sync_u64(m, 0x1_0000_0003)) << 4
            | u32::from(intrinsics::match_all_sync_u64(m, u64::from(lane + 1 == n) << 40 | 7)) << 5;
        let wide = intrinsics::shfl_sync_u64(m, (u64::from(v) << 33) | u64::from(lane), n.wrapping_sub(1));
        intrinsics::warp_sync(intrinsics::active_mask() & m);
        // Block sum through the shared scratch: 256 words, so blocks of at
        // most 256 ranks (others record 0).
        let words = intrinsics::SHARED_BLOCK_BYTES / 4;
        let sh = intrinsics::shared_block::<{ intrinsics::SHARED_BLOCK_BYTES }>() as *mut u32;
        let fits = (c.block_dim as usize) <= words;
        if fits {
            // SAFETY: `thread < block_dim <= words`: inside the scratch; each
            // rank writes its own word before the barrier.
            unsafe { sh.add(c.thread as usize).write(v) };
        }
        intrinsics::block_barrier();
        let mut block_sum = 0u32;
        if fits {
            for t in 0..c.block_dim as usize {
                // SAFETY: inside the scratch; word `t` was written by rank
                // `t` of this block before the barrier above and is not
                // written again before the one below.
                block_sum = block_sum.wrapping_add(unsafe { sh.add(t).read() });
            }
        }
        intrinsics::block_barrier();
        let words_out = [
            if n == 32 { s } else { 0 },
            if lane == 0 { d } else { 0 },
            p,
            ballot,
            same,
            first,
            next,
            votes,
            wide as u32,
            (wide >> 32) as u32,
            block_sum,
            intrinsics::active_mask(),
            // The SM id differs between runs; the emulator's is its worker.
            intrinsics::sm_id(),
        ];
        let base = r * args.stride as usize;
        for (k, w) in words_out.iter().enumerate() {
            args.out.write(base + k, *w)?;
        }
        Ok(())
    }
}
