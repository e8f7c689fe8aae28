//! The whole-GPU pack engine: `Device::pack` and `Device::unpack` run
//! [`gpu_mpi_device::derived::PACK_KERNEL`] over a world in which every rank
//! copies its share of chunks (rank `r` of `n`: chunks `r, r + n, ...`),
//! or every block moves square tiles through its shared scratch (the tiled
//! path, [`PackStrategy`]).
//!
//! Methods of [`Device`] only; the datatypes they move, their commit and
//! [`PackStrategy`] are in [`crate::datatype`], below the device.

use crate::datatype::{CommittedType, DatatypeError, PackStrategy};
use crate::device::{Device, DeviceBuffer};
use crate::error::HostError;
use crate::launch::LaunchReport;
use crate::spec::WorldSpec;
use gpu_mpi_device::derived::{PackArgs, PackPath, TileShape, TypeRef, PACK, PACK_KERNEL, UNPACK};

/// Ranks of a pack world on the emulator (each rank is a coroutine).
const CPU_PACK_RANKS: u32 = 256;
/// Ranks per block of a pack world.
const PACK_BLOCK_DIM: u32 = 256;
/// Ranks per block of a tiled pack world on the emulator.
const CPU_TILED_BLOCK_DIM: u32 = 64;

impl Device {
    /// Runs `f` with this device's copy of `ty`'s encoding, uploading it the
    /// first time.
    fn with_type<R>(
        &self,
        ty: &CommittedType,
        f: impl FnOnce(&DeviceBuffer<u64>) -> Result<R, HostError>,
    ) -> Result<R, HostError> {
        let uid = ty.datatype().uid() ^ (ty.header().chunk_bytes << 48);
        let mut map = match self.types.map.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let buf = match map.entry(uid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(self.upload(ty.words())?),
        };
        f(buf)
    }

    /// Drops this device's copy of `ty`'s encoding (uploaded by the first
    /// [`Device::pack`] or [`Device::unpack`] of the type).
    pub fn forget_type(&self, ty: &CommittedType) {
        let uid = ty.datatype().uid() ^ (ty.header().chunk_bytes << 48);
        if let Ok(mut m) = self.types.map.lock() {
            m.remove(&uid);
        }
    }

    /// The world a pack or unpack of `count` instances of `ty` runs on by
    /// the direct path: one rank per chunk, at most the whole device (256
    /// ranks on the emulator), in blocks of 256, with the smallest
    /// mailboxes (the kernel sends no message).
    pub fn pack_world(&self, ty: &CommittedType, count: usize) -> Result<WorldSpec, HostError> {
        self.pack_world_for(ty, count, PackPath::Direct)
    }

    /// [`Device::pack_world`] for `path`. The tiled path's world on the
    /// emulator has blocks of 64 ranks (4 blocks of 64 when there is work
    /// for 256 ranks), so that several blocks share the tiles and a block
    /// has fewer ranks than a tile has elements; on a GPU, blocks of 256.
    pub fn pack_world_for(
        &self,
        ty: &CommittedType,
        count: usize,
        path: PackPath,
    ) -> Result<WorldSpec, HostError> {
        let chunks = (ty.header().chunks_per_instance)
            .saturating_mul(count as u64)
            .max(1);
        let cpu = self.backend_name() == "cpu";
        let block = match path {
            PackPath::Tiled if cpu => CPU_TILED_BLOCK_DIM,
            _ => PACK_BLOCK_DIM,
        };
        let cap = if cpu {
            CPU_PACK_RANKS
        } else {
            self.max_ranks_for(&PACK_KERNEL, block)?
        };
        let ranks = chunks.min(cap as u64) as u32;
        let block_dim = if ranks >= block { block } else { ranks.max(1) };
        let ranks = ranks / block_dim * block_dim;
        Ok(WorldSpec::ranks(ranks.max(1))
            .block_dim(block_dim)
            .slots_per_rank(1)
            .slot_bytes(64)
            .max_message_bytes(64)
            .collective_bytes(64))
    }

    fn check_span(ty: &CommittedType, len: usize, origin: usize, count: usize) -> Result<(), HostError> {
        let (lo, hi) = ty.span(count)?;
        let o = origin as i64;
        if o + lo < 0 {
            return Err(DatatypeError::OutOfBuffer { index: o + lo, len }.into());
        }
        if o + hi > len as i64 {
            return Err(DatatypeError::OutOfBuffer { index: o + hi, len }.into());
        }
        Ok(())
    }

    /// `MPI_Pack` of a whole device buffer in one kernel: `count` instances
    /// of `ty` from `src` (the buffer address at `src[0]`) into a new buffer
    /// of [`CommittedType::pack_size`] bytes. On a GPU the program's kernel
    /// crate must invoke `gpu_mpi_device::pack_kernels!()`.
    pub fn pack(
        &self,
        ty: &CommittedType,
        src: &DeviceBuffer<u8>,
        count: usize,
    ) -> Result<DeviceBuffer<u8>, HostError> {
        self.pack_at(ty, src, 0, count)
    }

    /// [`Device::pack`] with the buffer address at `src[origin]` (for types
    /// with negative displacements).
    pub fn pack_at(
        &self,
        ty: &CommittedType,
        src: &DeviceBuffer<u8>,
        origin: usize,
        count: usize,
    ) -> Result<DeviceBuffer<u8>, HostError> {
        Device::check_span(ty, src.len(), origin, count)?;
        let out = self.alloc_zeroed::<u8>(ty.pack_size(count)?)?;
        self.pack_into(ty, src, origin, count, &out)?;
        Ok(out)
    }

    /// [`Device::pack_at`] into an existing buffer of at least
    /// [`CommittedType::pack_size`] bytes; the launch's report (`None` when
    /// there was nothing to move).
    pub fn pack_into(
        &self,
        ty: &CommittedType,
        src: &DeviceBuffer<u8>,
        origin: usize,
        count: usize,
        out: &DeviceBuffer<u8>,
    ) -> Result<Option<LaunchReport>, HostError> {
        self.run_pack(ty, src, origin, count, out, PACK, PackStrategy::Auto)
    }

    /// [`Device::pack_into`] with the walk chosen by `strategy` (to measure
    /// the tiled and the direct path on the same type).
    pub fn pack_into_using(
        &self,
        ty: &CommittedType,
        src: &DeviceBuffer<u8>,
        origin: usize,
        count: usize,
        out: &DeviceBuffer<u8>,
        strategy: PackStrategy,
    ) -> Result<Option<LaunchReport>, HostError> {
        self.run_pack(ty, src, origin, count, out, PACK, strategy)
    }

    /// The walk `strategy` picks for `count` instances of `ty`:
    /// [`PackPath::Tiled`] or [`PackPath::Direct`].
    pub fn pack_path(
        ty: &CommittedType,
        count: usize,
        strategy: PackStrategy,
    ) -> Result<PackPath, HostError> {
        let shape = TypeRef::new(ty.words())
            .ok()
            .and_then(|t| TileShape::of(&t, count as u64));
        match (strategy, shape) {
            (PackStrategy::Direct, _) => Ok(PackPath::Direct),
            (PackStrategy::Tiled, Some(_)) => Ok(PackPath::Tiled),
            (PackStrategy::Tiled, None) => Err(DatatypeError::NotTileable.into()),
            (PackStrategy::Auto, Some(s)) if s.profitable() => Ok(PackPath::Tiled),
            (PackStrategy::Auto, _) => Ok(PackPath::Direct),
        }
    }

    /// `MPI_Unpack` of a whole device buffer in one kernel: `count`
    /// instances of `ty` from `packed` into `dst` (the buffer address at
    /// `dst[origin]`). The type's blocks must not overlap. Returns the
    /// launch's report (`None` when there was nothing to move).
    pub fn unpack(
        &self,
        ty: &CommittedType,
        packed: &DeviceBuffer<u8>,
        count: usize,
        dst: &DeviceBuffer<u8>,
        origin: usize,
    ) -> Result<Option<LaunchReport>, HostError> {
        self.run_pack(ty, dst, origin, count, packed, UNPACK, PackStrategy::Auto)
    }

    /// [`Device::unpack`] with the walk chosen by `strategy`.
    pub fn unpack_using(
        &self,
        ty: &CommittedType,
        packed: &DeviceBuffer<u8>,
        count: usize,
        dst: &DeviceBuffer<u8>,
        origin: usize,
        strategy: PackStrategy,
    ) -> Result<Option<LaunchReport>, HostError> {
        self.run_pack(ty, dst, origin, count, packed, UNPACK, strategy)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_pack(
        &self,
        ty: &CommittedType,
        typed: &DeviceBuffer<u8>,
        origin: usize,
        count: usize,
        packed: &DeviceBuffer<u8>,
        direction: u32,
        strategy: PackStrategy,
    ) -> Result<Option<LaunchReport>, HostError> {
        Device::check_span(ty, typed.len(), origin, count)?;
        let path = Device::pack_path(ty, count, strategy)?;
        let need = ty.pack_size(count)?;
        if packed.len() < need {
            return Err(DatatypeError::OutOfBuffer {
                index: need as i64,
                len: packed.len(),
            }
            .into());
        }
        if need == 0 {
            return Ok(None);
        }
        let spec = self.pack_world_for(ty, count, path)?;
        self.with_type(ty, |enc| {
            let args = PackArgs {
                ty: enc.slice(),
                typed: typed.slice(),
                packed: packed.slice(),
                count: count as u64,
                origin: origin as u64,
                direction,
                path: path as u32,
            };
            Ok(Some(self.launch(&PACK_KERNEL, &args, &spec)?))
        })
    }
}
