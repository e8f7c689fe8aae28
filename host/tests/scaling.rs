//! Emulator scaling measurements (docs/emulator.md). Ignored by default; run
//! with `cargo test --release -p gpu-mpi-host --test scaling -- --ignored --nocapture`.
//! Prints a table; asserts only results, never times. Emulator only: it
//! measures the emulator.

use bytemuck::{Pod, Zeroable};
use gpu_mpi_device::collective::SystemOperation;
use gpu_mpi_device::traits::*;
use gpu_mpi_device::{Error, GlobalSlice, Kernel, World};
use gpu_mpi_host::{CpuOptions, Device, WorldSpec};
use std::time::Instant;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct PiArgs {
    intervals_per_rank: u32,
    reserved: u32,
    result: GlobalSlice<f64>,
}

fn partial(rank: i32, ranks: i32, per_rank: u32) -> f64 {
    let n = ranks as u64 * per_rank as u64;
    let w = 1.0 / n as f64;
    let mut s = 0.0;
    let mut i = rank as u64;
    while i < n {
        let x = (i as f64 + 0.5) * w;
        s += 4.0 / (1.0 + x * x);
        i += ranks as u64;
    }
    s * w
}

gpu_mpi_device::kernel! {
    /// Pi by point-to-point: every rank sends its part to rank 0.
    pub static PI_P2P = fn pi_p2p(world: &World, a: &PiArgs) -> Result<(), Error> {
        let p = partial(world.rank(), world.size(), a.intervals_per_rank);
        if world.rank() != 0 {
            return world.process_at_rank(0).send(&p);
        }
        let mut sum = p;
        for s in 1..world.size() {
            sum += world.process_at_rank(s).receive::<f64>()?.0;
        }
        a.result.write(0, sum)
    }
}

gpu_mpi_device::kernel! {
    /// Pi by reduction to rank 0.
    pub static PI_REDUCE = fn pi_reduce(world: &World, a: &PiArgs) -> Result<(), Error> {
        let p = partial(world.rank(), world.size(), a.intervals_per_rank);
        let root = world.process_at_rank(0);
        if world.rank() == 0 {
            let mut sum = 0.0f64;
            root.reduce_into_root(&p, &mut sum, SystemOperation::sum())?;
            a.result.write(0, sum)
        } else {
            root.reduce_into(&p, SystemOperation::sum())
        }
    }
}

gpu_mpi_device::kernel! {
    /// Ten barriers.
    pub static BARRIERS = fn barriers(world: &World, _a: &PiArgs) -> Result<(), Error> {
        for _ in 0..10 {
            world.barrier()?;
        }
        Ok(())
    }
}

fn usage() -> libc::rusage {
    // SAFETY: all-zero is a valid `rusage` (plain integers).
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage(RUSAGE_SELF) fills the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u
}

/// Peak resident memory of the process so far, in MiB.
fn max_rss_mib() -> f64 {
    usage().ru_maxrss as f64 / 1024.0
}

/// CPU seconds (user + system) the process has used so far.
fn cpu_seconds() -> f64 {
    let u = usage();
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

#[test]
#[ignore = "measurement; run explicitly in a release build"]
fn scaling_table() {
    let sizes: Vec<u32> = std::env::var("GPU_MPI_SIZES")
        .ok()
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|| vec![1024, 4096, 16384, 65536, 262144]);
    let workers: Vec<usize> = std::env::var("GPU_MPI_WORKERS")
        .ok()
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|| vec![1, 2]);
    let kernels: [(&str, &Kernel<PiArgs>); 3] = [
        ("pi_p2p", &PI_P2P),
        ("pi_reduce", &PI_REDUCE),
        ("10 barriers", &BARRIERS),
    ];
    println!("| kernel | ranks | workers | seconds (launch) | CPU seconds | max RSS MiB |");
    println!("|---|---|---|---|---|---|");
    for (name, k) in kernels {
        for &n in &sizes {
            for &w in &workers {
                let d = Device::cpu_with(CpuOptions {
                    workers: w,
                    ..CpuOptions::default()
                });
                let out = d.alloc_zeroed::<f64>(1).unwrap();
                let args = PiArgs {
                    intervals_per_rank: 100,
                    reserved: 0,
                    result: out.slice(),
                };
                let cpu0 = cpu_seconds();
                let t = Instant::now();
                let rep = d.launch(k, &args, &WorldSpec::ranks(n)).unwrap();
                let total = t.elapsed();
                let cpu = cpu_seconds() - cpu0;
                if name != "10 barriers" {
                    let pi = d.download(&out).unwrap()[0];
                    assert!((pi - std::f64::consts::PI).abs() < 1e-6, "{pi}");
                }
                println!(
                    "| {name} | {n} | {w} | {:.3} ({:.3}) | {cpu:.3} | {:.0} |",
                    rep.elapsed.as_secs_f64(),
                    total.as_secs_f64(),
                    max_rss_mib()
                );
            }
        }
    }
}
