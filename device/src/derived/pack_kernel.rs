//! The whole-GPU pack kernel ([`PACK_KERNEL`], entry `gpu_mpi_pack`) that
//! the host's `Device::pack` and `Device::unpack` launch, and
//! [`pack_kernels!`](crate::pack_kernels), which adds its PTX entry point.

use super::share::{pack_share, unpack_share, Share};
use super::tiles::{pack_tiles, unpack_tiles, PackPath};
use crate::communicator::World;
use crate::error::Error;
use crate::kernel::GlobalSlice;
use crate::typemap::TypeRef;
use bytemuck::{Pod, Zeroable};

/// [`PackArgs::direction`]: pack.
#[doc(hidden)]
pub const PACK: u32 = 0;
/// [`PackArgs::direction`]: unpack.
#[doc(hidden)]
pub const UNPACK: u32 = 1;

/// Arguments of the whole-GPU pack kernel [`gpu_mpi_pack`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[doc(hidden)]
pub struct PackArgs {
    /// The committed type's encoding.
    pub ty: GlobalSlice<u64>,
    /// The typed buffer (read by a pack, written by an unpack).
    pub typed: GlobalSlice<u8>,
    /// The packed buffer (written by a pack, read by an unpack).
    pub packed: GlobalSlice<u8>,
    /// Instances.
    pub count: u64,
    /// Index of the buffer address in `typed`.
    pub origin: u64,
    /// [`PACK`] or [`UNPACK`].
    pub direction: u32,
    /// The walk: a [`PackPath`] as `u32` (`Direct` 0, `Tiled` 1).
    pub path: u32,
}

/// The whole-GPU pack and unpack: every rank of the world takes its share
/// ([`Share::of_world`]) of the walk `args` describe.
#[doc(hidden)]
pub fn gpu_mpi_pack(world: &World, args: &PackArgs) -> Result<(), Error> {
    // SAFETY: the host does not write the encoding during the launch.
    let ty = unsafe { TypeRef::from_global(&args.ty) }?;
    let share = Share::of_world(world);
    if args.path == PackPath::Tiled as u32 {
        // Uniform over the world: every rank takes the same branch.
        return match args.direction {
            PACK => pack_tiles(&args.typed, args.origin as usize, args.count, &ty, &args.packed),
            _ => unpack_tiles(&args.packed, args.count, &ty, &args.typed, args.origin as usize),
        }
        .map(|_| ());
    }
    match args.direction {
        PACK => pack_share(
            &args.typed,
            args.origin as usize,
            args.count,
            &ty,
            &args.packed,
            share,
        ),
        _ => unpack_share(
            &args.packed,
            args.count,
            &ty,
            &args.typed,
            args.origin as usize,
            share,
        ),
    }?;
    Ok(())
}

/// Launch descriptor of [`gpu_mpi_pack`], used by the host's `Device::pack`
/// and `Device::unpack`. On the emulator it runs as is; on a GPU the PTX of
/// the program's kernel crate must hold the entry point, which
/// [`pack_kernels!`](crate::pack_kernels) adds.
#[doc(hidden)]
pub static PACK_KERNEL: crate::kernel::Kernel<PackArgs> = crate::kernel::Kernel {
    name: "gpu_mpi_pack",
    entry: |world: *mut u8, args: *const PackArgs| {
        // SAFETY: the launcher upholds `rank_main`'s contract.
        unsafe { crate::kernel::rank_main(world, args, gpu_mpi_pack) }
    },
};

/// Adds the whole-GPU pack kernel's PTX entry point (`gpu_mpi_pack`) to the
/// kernel crate that invokes it, for `Device::pack` and `Device::unpack` on
/// a GPU. Kernel crates that do not invoke it carry no pack code in their
/// PTX (the link step keeps only exported entry points).
///
/// ```ignore
/// gpu_mpi_device::pack_kernels!();
/// ```
#[macro_export]
macro_rules! pack_kernels {
    () => {
        const _: () = {
            use $crate::derived::gpu_mpi_pack;
            $crate::__kernel_entry!(gpu_mpi_pack, $crate::derived::PackArgs);
        };
    };
}
