//! Launches `my_kernels::SUM_OF_RANKS` on the GPU, or on the CPU emulator
//! when there is none: `my-app [auto|cpu|cuda] [RANKS]`.

use gpu_mpi::{BackendKind, Device, HostError, KernelImages, WorldSpec};
use my_kernels::SUM_OF_RANKS;

/// The kernels build.rs compiled: PTX and SASS for each SM.
static KERNELS: KernelImages = gpu_mpi::include_kernels!();

fn main() -> Result<(), HostError> {
    let mut args = std::env::args().skip(1);
    let backend: BackendKind = match args.next() {
        Some(b) => b.parse().unwrap_or_else(|e| usage(&format!("{e}"))),
        None => BackendKind::Auto,
    };
    let ranks: u32 = match args.next() {
        Some(n) => n.parse().unwrap_or_else(|_| usage(&format!("{n:?} is not a rank count"))),
        None => 4096,
    };

    let device = Device::open(backend, &KERNELS)?;
    let out = device.alloc_zeroed::<u64>(1)?;
    let report = device.launch(&SUM_OF_RANKS, &out.slice(), &WorldSpec::ranks(ranks))?;
    let sum = device.download(&out)?[0];
    let expected = u64::from(ranks) * u64::from(ranks).saturating_sub(1) / 2;
    println!("sum of ranks = {sum} (expected {expected}) on {ranks} ranks, {} backend", report.backend);
    if sum != expected {
        eprintln!("error: wrong sum");
        std::process::exit(1);
    }
    Ok(())
}

fn usage(problem: &str) -> ! {
    eprintln!("error: {problem}\nusage: my-app [auto|cpu|cuda] [RANKS]");
    std::process::exit(2)
}
