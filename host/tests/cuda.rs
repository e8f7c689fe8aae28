//! The cuda backend without a GPU: opening fails cleanly, `auto` falls back
//! to the emulator, and the backend's pure decisions (PTX choice, occupancy,
//! the limiting resource, the refusal's wording) hold for H100 numbers.
//! On a machine with a GPU, scripts/gpu-check.sh runs the real thing.
//! One backend by nature: what is tested is what happens where no GPU
//! opens, and pure functions of a GPU's numbers.

use gpu_mpi_device::{Error, World};
use gpu_mpi_host::cuda::plan::ImageKind;
use gpu_mpi_host::cuda::plan::{
    ptx_candidates, ptx_entries, ptx_sm, Bounds, DeviceLimits, KernelOccupancy, KernelResources,
};
use gpu_mpi_host::cuda::CudaOptions;
use gpu_mpi_host::{BackendKind, Device, HostError, KernelImages, RankCount, Resource, WorldSpec};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// An H100 SXM as the driver describes it.
fn h100() -> DeviceLimits {
    DeviceLimits {
        sms: 132,
        warp_size: 32,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        max_threads_per_block: 1024,
        registers_per_sm: 65536,
        registers_per_block: 65536,
        shared_memory_per_sm: 228 * 1024,
        reserved_shared_memory_per_block: 1024,
        shared_memory_per_block_optin: 227 * 1024,
    }
}

/// A kernel using `registers` per thread and no shared memory; its largest
/// block is what 65536 registers per block allow, in whole warps counted in
/// fours (the hardware's per-block check).
fn kernel(registers: u32) -> KernelResources {
    let per_warp = (registers * 32).div_ceil(256) * 256;
    let warps = (1..=32u32)
        .rev()
        .find(|w| per_warp * w.div_ceil(4) * 4 <= 65536)
        .unwrap_or(0);
    KernelResources {
        registers,
        shared_bytes: 0,
        dynamic_shared_bytes: 0,
        max_threads_per_block: warps * 32,
        local_bytes: 0,
    }
}

fn occupancy(registers: u32, block_dim: u32) -> KernelOccupancy {
    KernelOccupancy::new("k", &h100(), &kernel(registers), block_dim, None)
}

#[test]
fn opening_cuda_without_a_gpu_or_ptx_is_no_gpu() {
    // No PTX: no usable GPU on any machine, whether it has a driver or not.
    match Device::open(BackendKind::Cuda, &KernelImages::EMPTY) {
        Err(HostError::NoGpu(why)) => assert!(!why.to_string().is_empty()),
        other => panic!("expected NoGpu, got {other:?}"),
    }
    match Device::cuda_with(CudaOptions::default(), &[]) {
        Err(HostError::NoGpu(_)) => {}
        other => panic!("expected NoGpu, got {other:?}"),
    }
}

#[test]
fn opening_cuda_with_ptx_fails_cleanly_here() {
    // With a PTX: fails without a panic wherever it fails (no driver: NoGpu;
    // a driver: the JIT rejects this text).
    let ptx = ".version 7.0\n.target sm_70\n.address_size 64\nnot ptx\n";
    match Device::open_variants(BackendKind::Cuda, &[("sm_70", ptx)]) {
        Err(HostError::NoGpu(_)) | Err(HostError::Cuda(_)) => {}
        other => panic!("expected NoGpu or Cuda, got {other:?}"),
    }
}

#[test]
fn devices_and_buffers_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Device>();
    send_sync::<gpu_mpi_host::cuda::CudaDevice>();
    send_sync::<gpu_mpi_host::cuda::CudaBuffer>();
    send_sync::<gpu_mpi_host::DeviceBuffer<u32>>();
}

#[test]
fn auto_falls_back_to_the_emulator() {
    let d = Device::open(BackendKind::Auto, &KernelImages::EMPTY).unwrap();
    assert_eq!(d.backend_name(), "cpu");
    assert!(d.as_cpu().is_some() && d.as_cuda().is_none());
    let d = Device::open_variants(BackendKind::Auto, &[]).unwrap();
    assert_eq!(d.backend_name(), "cpu");
    let d = Device::open(BackendKind::Auto, &WITHOUT).unwrap();
    assert_eq!(d.backend_name(), "cpu");
    assert_eq!(
        Device::open(BackendKind::Cpu, &KernelImages::EMPTY)
            .unwrap()
            .backend_name(),
        "cpu"
    );
}

/// What a build without the nightly toolchain embeds.
static WITHOUT: KernelImages = KernelImages::from_parts((
    &[],
    &[],
    "",
    Some("the Rust `nightly` toolchain is missing; run `rustup toolchain install nightly`"),
));

#[test]
fn opening_cuda_without_kernels_says_why_they_are_missing() {
    // Before any driver call, so on every machine.
    match Device::open(BackendKind::Cuda, &WITHOUT) {
        Err(HostError::NoGpu(why)) => assert_eq!(
            why.to_string(),
            "built without GPU kernels: the Rust `nightly` toolchain is missing; \
             run `rustup toolchain install nightly`"
        ),
        other => panic!("expected NoGpu, got {other:?}"),
    }
}

#[test]
fn options_come_from_the_environment() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    assert_eq!(CudaOptions::from_vars(vars(&[])).unwrap(), CudaOptions::default());
    let o = CudaOptions::from_vars(vars(&[
        ("GPU_MPI_MAX_REGISTERS", "128"),
        ("GPU_MPI_TIMEOUT_MS", "2500"),
        ("GPU_MPI_WATCHDOG_S", "0"),
        ("GPU_MPI_CUDA_DEVICE", "1"),
        ("GPU_MPI_BACKOFF_NS", "256"),
    ]))
    .unwrap();
    assert_eq!(o.default_backoff_max_ns, Some(256));
    assert_eq!(o.max_registers, Some(128));
    assert_eq!(o.default_timeout, Duration::from_millis(2500));
    assert_eq!(o.watchdog, None);
    assert_eq!(o.ordinal, 1);
    assert_eq!(
        CudaOptions::from_vars(vars(&[("GPU_MPI_MAX_REGISTERS", "0")]))
            .unwrap()
            .max_registers,
        None
    );
    assert!(CudaOptions::from_vars(vars(&[("GPU_MPI_MAX_REGISTERS", "8")])).is_err());
    assert!(CudaOptions::from_vars(vars(&[("GPU_MPI_MAX_REGISTERS", "lots")])).is_err());
    assert!(CudaOptions::from_vars(vars(&[("GPU_MPI_TIMEOUT_MS", "0")])).is_err());
    assert!(CudaOptions::from_vars(vars(&[("GPU_MPI_BACKOFF_NS", "0")])).is_err());
    // Every GPU wait is bounded by default.
    assert_eq!(CudaOptions::default().default_timeout, Duration::from_secs(5));
}

#[test]
fn the_best_ptx_is_the_highest_sm_not_above_the_device() {
    let v70 = ".version 7.0\n.target sm_70\n.address_size 64\n";
    let v90 = ".version 7.8\n.target sm_90\n.address_size 64\n";
    let variants = [("sm_70", v70), ("sm_90", v90)];
    let sms = |cc| -> Vec<u32> { ptx_candidates(&variants, cc).iter().map(|c| c.0).collect() };
    assert_eq!(sms(90), vec![90, 70]); // H100
    assert_eq!(sms(80), vec![70]); // A100: sm_70 PTX, JIT-compiled
    assert_eq!(sms(89), vec![70]); // L40
    assert_eq!(sms(75), vec![70]);
    assert_eq!(sms(70), vec![70]); // V100
    assert_eq!(sms(100), vec![90, 70]); // B200
    assert_eq!(sms(120), vec![90, 70]);
    assert_eq!(sms(61), Vec::<u32>::new()); // Pascal: none
    assert_eq!(ptx_candidates(&variants, 90)[0].1, v90);
    // Unlabelled PTX: the `.target` line decides.
    assert_eq!(ptx_sm("", v90), Some(90));
    let unlabelled = [("", v70), ("", v90)];
    assert_eq!(ptx_candidates(&unlabelled, 86)[0].0, 70);
    assert!(ptx_candidates(&[("", "no target")], 90).is_empty());
}

#[test]
fn kernel_entries_are_listed() {
    let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\n\
               // .globl\tring\n.visible .entry ring(\n\t.param .u64 .ptr .align 1 ring_param_0,\n\
               \t.param .u64 .ptr .align 1 ring_param_1\n)\n{\n}\n\
               .func (.param .b32 r) helper()\n{\n}\n\
               .visible .entry pi_reduce(\n)\n";
    assert_eq!(ptx_entries(ptx), vec!["ring", "pi_reduce"]);
}

#[test]
fn h100_occupancy_by_registers() {
    // `ring` (214 registers): 6912 registers per warp, 2 warps per register
    // sub-partition, 8 warps per SM: one block of 256.
    let o = occupancy(214, 256);
    assert_eq!(o.bounds.registers_per_warp, 216 * 32);
    assert_eq!(
        (o.residency.blocks_per_sm, o.residency.limit),
        (1, Resource::Registers)
    );
    assert_eq!(o.capacity(), 132 * 256);
    // Capped at 128 registers: twice as many.
    let o = occupancy(128, 256);
    assert_eq!((o.capacity(), o.residency.limit), (67_584, Resource::Registers));
    // `pi_reduce` (56 registers): 9 warps per sub-partition, 36 per SM.
    let o = occupancy(56, 256);
    assert_eq!(
        (o.residency.blocks_per_sm, o.residency.limit),
        (4, Resource::Registers)
    );
    assert_eq!(o.capacity(), 135_168);
    // 32 registers: registers and threads both allow 8 blocks; threads win.
    let o = occupancy(32, 256);
    assert_eq!(
        (o.capacity(), o.residency.limit),
        (270_336, Resource::ThreadsPerSm)
    );
    // Blocks of one rank: the SM's 32 block slots.
    let o = occupancy(56, 1);
    assert_eq!((o.capacity(), o.residency.limit), (4224, Resource::BlocksPerSm));
    let o = occupancy(214, 1);
    assert_eq!((o.capacity(), o.residency.limit), (132 * 8, Resource::Registers));
}

#[test]
fn h100_blocks_too_large() {
    // 214 registers x 512 threads needs 110 592 registers; a block may have 65 536.
    assert_eq!(kernel(214).max_threads_per_block, 256);
    // 9 warps count as 12 in the per-block check: 82 944 registers.
    let b = Bounds::new(
        &h100(),
        &KernelResources {
            max_threads_per_block: 1024,
            ..kernel(214)
        },
        288,
    );
    assert_eq!(
        (b.registers_per_block_needed, b.too_large),
        (82_944, Some(Resource::Registers))
    );
    let o = occupancy(214, 512);
    assert_eq!(o.bounds.too_large, Some(Resource::Registers));
    assert_eq!((o.capacity(), o.residency.limit), (0, Resource::Registers));
    let e = o.check(512).unwrap_err().to_string();
    assert!(
        e.contains("a block of 512 ranks needs 110592 registers, 65536 allowed"),
        "{e}"
    );
    // Beyond the device's 1024 threads per block.
    let o = occupancy(32, 2048);
    assert_eq!((o.capacity(), o.residency.limit), (0, Resource::ThreadsPerBlock));
    assert!(o.check(2048).is_err());
    let o = occupancy(32, 0);
    assert_eq!(o.residency.limit, Resource::ThreadsPerBlock);
}

#[test]
fn h100_occupancy_by_shared_memory() {
    // 48 KiB of static shared memory + 1 KiB reserved: 4 blocks of 228 KiB.
    let k = KernelResources {
        shared_bytes: 48 * 1024,
        ..kernel(32)
    };
    let b = Bounds::new(&h100(), &k, 128);
    assert_eq!(b.shared_memory, Some(4));
    assert_eq!(b.limit(), (4, Resource::SharedMemory));
    // Without shared memory, only the reservation counts: 228 blocks, no limit.
    let b = Bounds::new(&h100(), &kernel(32), 128);
    assert_eq!(b.shared_memory, Some(228));
    assert_eq!(b.limit(), (16, Resource::ThreadsPerSm));
}

#[test]
fn h100_occupancy_with_shared_window_memory() {
    // 4 KiB static + 100 KiB of shared window memory + 1 KiB reserved:
    // two blocks of 228 KiB per SM.
    let k = KernelResources {
        shared_bytes: 4096,
        dynamic_shared_bytes: 100 * 1024,
        ..kernel(32)
    };
    let b = Bounds::new(&h100(), &k, 128);
    assert_eq!(b.shared_memory, Some(2));
    assert_eq!(b.limit(), (2, Resource::SharedMemory));
    // One byte past what a block may have: no block fits, and the refusal
    // names both parts and the limit.
    let k = KernelResources {
        dynamic_shared_bytes: 227 * 1024 - 4096 + 1,
        ..k
    };
    let o = KernelOccupancy::new("win", &h100(), &k, 128, None);
    assert_eq!(o.bounds.too_large, Some(Resource::SharedMemory));
    assert_eq!(o.capacity(), 0);
    let d = o.describe();
    assert!(
        d.contains("+ 228353 B of dynamic shared memory")
            && d.contains("needs 232449 B of shared memory, 232448 B allowed"),
        "{d}"
    );
    assert!(o.check(128).is_err());
}

#[test]
fn the_drivers_count_decides() {
    // The driver's occupancy is authoritative; the model only names the
    // resource and says when it disagrees.
    let o = KernelOccupancy::new("ring", &h100(), &kernel(214), 256, Some(2));
    assert_eq!(o.capacity(), 132 * 2 * 256);
    assert_eq!(o.residency.limit, Resource::Registers);
    assert!(
        o.describe().ends_with("(the driver's occupancy: 2)"),
        "{}",
        o.describe()
    );
    let o = KernelOccupancy::new("ring", &h100(), &kernel(214), 256, Some(1));
    assert!(!o.describe().contains("driver"), "{}", o.describe());
}

/// `world of R ranks cannot be co-resident: F fit (S SMs x B blocks of D
/// ranks[, more]; limit: L)` as its numbers and limit.
fn shape(message: &str) -> (u32, u32, u32, u32, u32, String) {
    let num = |s: &str| -> u32 {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{s:?} in {message:?}"))
    };
    let rest = message.strip_prefix("world of ").expect(message);
    let (requested, rest) = rest.split_once(" ranks cannot be co-resident: ").expect(message);
    let (fits, rest) = rest.split_once(" fit (").expect(message);
    let (sms, rest) = rest.split_once(" SMs x ").expect(message);
    let (blocks, rest) = rest.split_once(" blocks of ").expect(message);
    let (block_dim, rest) = rest.split_once(" ranks").expect(message);
    let (_, limit) = rest.rsplit_once("; limit: ").expect(message);
    let limit = limit.strip_suffix(')').expect(message);
    (
        num(requested),
        num(fits),
        num(sms),
        num(blocks),
        num(block_dim),
        limit.to_string(),
    )
}

#[test]
fn the_cuda_refusal_reads_like_the_emulators() {
    // The emulator's refusal of 5000 ranks in blocks of one.
    let cpu = Device::cpu()
        .resolve(&WorldSpec::ranks(5000).block_dim(1))
        .unwrap_err()
        .to_string();
    // The cuda backend's, for a kernel with few registers on an H100.
    let cuda = KernelOccupancy::new("pi_reduce", &h100(), &kernel(56), 1, Some(32))
        .check(5000)
        .unwrap_err();
    assert!(
        matches!(
            cuda,
            HostError::NotCoResident {
                requested: 5000,
                fits: 4224,
                limit: Resource::BlocksPerSm,
                ..
            }
        ),
        "{cuda:?}"
    );
    let cuda = cuda.to_string();
    assert_eq!(shape(&cpu), shape(&cuda), "{cpu}\n{cuda}");
    assert!(
        cuda.starts_with(
            "world of 5000 ranks cannot be co-resident: 4224 fit (132 SMs x 32 blocks of 1 ranks, \
             kernel pi_reduce with 56 registers per thread and 0 B shared memory per block: \
             blocks per SM by registers 36, by threads 64, by block slots 32"
        ),
        "{cuda}"
    );

    // A register-limited refusal: same shape, limit "registers".
    let ring = KernelOccupancy::new("ring", &h100(), &kernel(214), 256, Some(1));
    let e = ring.check(40_000).unwrap_err().to_string();
    assert_eq!(
        shape(&e),
        (40_000, 33_792, 132, 1, 256, "registers".to_string()),
        "{e}"
    );
    assert!(ring.check(33_792).is_ok());
    // Too large a block: the emulator's wording for the thread limit.
    let e = occupancy(32, 2048).check(2048).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "world of 2048 ranks cannot be co-resident: 0 fit (blocks of 2048 ranks exceed the 1024 threads"
        ),
        "{e}"
    );
    assert!(e.ends_with("; limit: threads per block)"), "{e}");
}

// ---------------------------------------------------------------------------
// The driver calls, against a stand-in driver library (tests/fake_cuda):
// open, occupancy, buffers, a launch's parameters and world, the abort and
// watchdog paths. It needs a C compiler (`cc`); without one it is skipped.
// The library is found through LD_LIBRARY_PATH, which the dynamic loader
// reads at start-up, so the checks run in a child process: this test binary,
// running the ignored test `fake_driver_child`.
// ---------------------------------------------------------------------------

gpu_mpi_device::kernel! {
    /// A kernel the fake driver knows as 214 registers per thread.
    pub static HEAVY = fn heavy(_world: &World, _args: &[u32; 4]) -> Result<(), Error> { Ok(()) }
}

gpu_mpi_device::kernel! {
    /// A kernel the fake driver knows as 32 registers per thread.
    pub static LIGHT = fn light(_world: &World, _args: &[u32; 4]) -> Result<(), Error> { Ok(()) }
}

/// What the fake launch checks the arguments by.
const ARGS: [u32; 4] = [0xC0FFEE, 1, 2, 3];
const FAKE_PTX: &str = "//\n.version 7.8\n.target sm_90\n.address_size 64\n\n\
                        .visible .entry heavy(\n)\n{\n}\n.visible .entry light(\n)\n{\n}\n";
const FAKE_PTX70: &str = "//\n.version 7.0\n.target sm_70\n.address_size 64\n\n\
                          .visible .entry heavy(\n)\n{\n}\n.visible .entry light(\n)\n{\n}\n";
/// What a KernelBuilder build embeds, with stand-in cubins the fake driver
/// knows by the name after the ELF magic.
static SHIPPED: KernelImages = KernelImages::from_parts((
    &[("sm_70", FAKE_PTX70), ("sm_90", FAKE_PTX)],
    &[
        ("sm_70", b"\x7fELFfake sm_70 cubin\0" as &[u8]),
        ("sm_80", b"\x7fELFfake sm_80 cubin\0" as &[u8]),
        ("sm_90", b"\x7fELFfake sm_90 cubin\0" as &[u8]),
    ],
    "report",
    None,
));

fn build_fake_driver() -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cuda/libcuda.c");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake_cuda");
    std::fs::create_dir_all(&dir).ok()?;
    let lib = dir.join("libcuda.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    match built {
        Ok(s) if s.success() => Some(dir),
        Ok(s) => panic!("cc failed on {}: {s}", src.display()),
        Err(e) => {
            eprintln!("skipped: no C compiler ({e})");
            None
        }
    }
}

#[test]
fn the_driver_calls_against_a_fake_driver() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Some(dir) = build_fake_driver() else { return };
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "fake_driver_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

fn fake_options(watchdog: Duration) -> CudaOptions {
    CudaOptions {
        abort_grace: Duration::from_millis(100),
        watchdog: Some(watchdog),
        ..CudaOptions::default()
    }
}

#[test]
#[ignore = "run by the_driver_calls_against_a_fake_driver, with the fake driver on LD_LIBRARY_PATH"]
fn fake_driver_child() {
    let open = |watchdog| {
        Device::cuda_with(
            fake_options(watchdog),
            &[("sm_70", FAKE_PTX), ("sm_90", FAKE_PTX)],
        )
        .unwrap()
    };
    let d = open(Duration::from_secs(30));
    assert_eq!(d.backend_name(), "cuda");
    let cuda = d.as_cuda().unwrap();
    assert_eq!(cuda.info().name, "Fake H100");
    assert_eq!((cuda.info().compute_capability, cuda.info().ptx_sm), (90, 90));
    assert_eq!(cuda.kernels(), &["heavy", "light"]);
    let described = d.describe();
    assert_eq!(
        (described.backend, described.name.as_str(), described.sms),
        ("cuda", "Fake H100", 132)
    );
    assert_eq!(
        (described.compute_capability, described.cuda_version),
        (Some((9, 0)), Some((12, 8)))
    );
    assert_eq!(
        (described.sm_clock_mhz, described.memory_clock_mhz),
        (Some(1980), Some(2619))
    );
    assert!(cuda
        .info()
        .to_string()
        .starts_with("Fake H100 (device 0, compute capability 9.0, 132 SMs"));

    // Occupancy per kernel; the device-wide number is the smallest.
    assert_eq!(d.max_ranks_for(&HEAVY, 256).unwrap(), 33_792);
    assert_eq!(d.max_ranks_for(&LIGHT, 256).unwrap(), 270_336);
    assert_eq!(d.max_ranks(256), 33_792);
    assert_eq!(d.residency_for(&HEAVY, 256).unwrap().limit, Resource::Registers);
    let e = d
        .resolve_for(&HEAVY, &WorldSpec::ranks(40_192).block_dim(256))
        .unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotCoResident {
                requested: 40_192,
                fits: 33_792,
                limit: Resource::Registers,
                ..
            }
        ),
        "{e:?}"
    );
    let e = d
        .resolve_for(&HEAVY, &WorldSpec::ranks(512).block_dim(512))
        .unwrap_err();
    assert!(
        matches!(
            e,
            HostError::NotCoResident {
                fits: 0,
                limit: Resource::Registers,
                ..
            }
        ),
        "{e:?}"
    );
    let c = d.resolve_for(&HEAVY, &WorldSpec::max_ranks()).unwrap();
    assert_eq!((c.ranks, c.block_dim), (33_792, 256));
    assert_eq!(WorldSpec::max_ranks().ranks, RankCount::Max);

    // Buffers.
    let data: Vec<u64> = (0..1000).collect();
    let mut b = d.upload(&data).unwrap();
    assert_eq!(d.download(&b).unwrap(), data);
    d.write(&mut b, &vec![7; 1000]).unwrap();
    assert_eq!(d.download(&b).unwrap(), vec![7; 1000]);
    assert_eq!(d.alloc_zeroed::<u32>(100).unwrap().slice().len(), 100);
    assert!(d.download(&d.alloc_zeroed::<u8>(0).unwrap()).unwrap().is_empty());

    // A launch whose ranks all "return": the fake checks the world's header,
    // the grid and the arguments, and marks every wait record exited.
    let spec = WorldSpec::ranks(1024);
    let layout = d.resolve_for(&HEAVY, &spec).unwrap().layout().unwrap();
    std::env::set_var(
        "FAKE_CUDA_RECORDS",
        format!("{},{}", layout.records, layout.ranks),
    );
    let rep = d.launch(&HEAVY, &ARGS, &spec).unwrap();
    assert_eq!(
        (rep.ranks, rep.block_dim, rep.blocks, rep.backend),
        (1024, 256, 4, "cuda")
    );
    assert_eq!(rep.elapsed, Duration::from_micros(1500));
    // Shared window memory beyond 48 KiB: the kernel opts in before the
    // occupancy query and the launch, which passes it (the fake refuses
    // more dynamic shared memory than the kernel allows).
    let spec = WorldSpec::ranks(1024).windows(1).shared_window_bytes(100 << 10);
    let layout = d.resolve_for(&HEAVY, &spec).unwrap().layout().unwrap();
    std::env::set_var(
        "FAKE_CUDA_RECORDS",
        format!("{},{}", layout.records, layout.ranks),
    );
    let rep = d.launch(&HEAVY, &ARGS, &spec).unwrap();
    assert_eq!((rep.ranks, rep.blocks), (1024, 4));
    // The largest world counts it too: 2 blocks of 100 KiB per SM, where
    // the light kernel alone holds 8.
    let max = WorldSpec::max_ranks().block_dim(256).windows(1);
    assert_eq!(d.resolve_for(&LIGHT, &max).unwrap().ranks, 270_336);
    let c = d
        .resolve_for(&LIGHT, &max.shared_window_bytes(100 << 10))
        .unwrap();
    assert_eq!(c.ranks, 132 * 2 * 256);
    // The records say nothing ran: every rank failed to attach.
    std::env::remove_var("FAKE_CUDA_RECORDS");
    match d.launch(&LIGHT, &ARGS, &WorldSpec::ranks(64)) {
        Err(HostError::RankFailed { errors, ranks: 64 }) => assert_eq!(errors.len(), 64),
        other => panic!("{other:?}"),
    }
    // Wrong arguments: the fake refuses the launch, named in the error.
    match d.launch(&LIGHT, &[0u32; 4], &WorldSpec::ranks(64)) {
        Err(HostError::Cuda(m)) => assert!(
            m.to_string()
                .starts_with("cuLaunchCooperativeKernel(light, 1 blocks of 64) failed"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }

    // A kernel that never finishes after a wait timed out: the launch gives
    // up after the grace period, and the device is unusable afterwards.
    std::env::set_var("FAKE_CUDA_HANG", "1");
    let spec = WorldSpec::ranks(64).timeout(Duration::from_millis(10));
    match d.launch(&LIGHT, &ARGS, &spec) {
        Err(HostError::Cuda(m)) => {
            let m = m.to_string();
            assert!(
                m.starts_with("kernel light never finished: the world was aborted"),
                "{m}"
            );
            assert!(
                m.contains("its wait records: deadlock: ranks 0-63: running"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    match d.alloc_zeroed::<u32>(4) {
        Err(HostError::Cuda(m)) => assert!(
            m.to_string()
                .starts_with("the GPU context is unusable: kernel light never finished"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    drop(b);
    drop(d);

    // Without any timed-out wait: the watchdog.
    std::env::set_var("FAKE_CUDA_HANG", "2");
    let d = open(Duration::from_millis(500));
    match d.launch(&LIGHT, &ARGS, &WorldSpec::ranks(64)) {
        Err(HostError::Cuda(m)) => assert!(m.to_string().contains("ran past the 0.5 s watchdog"), "{m}"),
        other => panic!("{other:?}"),
    }
    std::env::remove_var("FAKE_CUDA_HANG");

    // A module without the constant-bank copy of the world's header is
    // refused at open, by name (the launches above found the header's copy
    // there: the fake checks it).
    std::env::set_var("FAKE_CUDA_NO_DESCRIPTORS", "1");
    match Device::cuda_with(fake_options(Duration::from_secs(30)), &[("sm_90", FAKE_PTX)]) {
        Err(HostError::Cuda(m)) => assert!(
            m.to_string().starts_with(
                "the loaded sm_90 PTX (JIT) has no gpu_mpi_descriptors of at least 512 bytes for the world's descriptors (found: cuModuleGetGlobal_v2"
            ),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    std::env::remove_var("FAKE_CUDA_NO_DESCRIPTORS");

    // Options from the environment: a bad one is no usable GPU.
    std::env::set_var("GPU_MPI_MAX_REGISTERS", "7");
    match Device::open_variants(BackendKind::Cuda, &[("sm_90", FAKE_PTX)]) {
        Err(HostError::NoGpu(m)) => assert!(m.to_string().contains("GPU_MPI_MAX_REGISTERS"), "{m}"),
        other => panic!("{other:?}"),
    }
    std::env::set_var("GPU_MPI_MAX_REGISTERS", "128");
    let d = Device::open_variants(BackendKind::Auto, &[("sm_90", FAKE_PTX)]).unwrap();
    assert_eq!(d.as_cuda().unwrap().info().max_registers, Some(128));
    std::env::remove_var("GPU_MPI_MAX_REGISTERS");
    // No PTX for compute capability 9.0.
    let sm100 = ".version 8.6\n.target sm_100\n";
    match Device::open_variants(BackendKind::Cuda, &[("sm_100", sm100)]) {
        Err(HostError::NoGpu(m)) => assert_eq!(
            m.to_string(),
            "no embedded PTX or SASS for compute capability 9.0 (have PTX sm_100)"
        ),
        other => panic!("{other:?}"),
    }

    // Shipped kernels: the image each device gets is the one the driver
    // loads (the fake logs each load).
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake_cuda/images.log");
    let _ = std::fs::remove_file(&log);
    std::env::set_var("FAKE_CUDA_IMAGE_LOG", &log);
    let last_load = || {
        let text = std::fs::read_to_string(&log).unwrap();
        text.lines().last().unwrap().to_string()
    };
    let open = |cc: &str| {
        std::env::set_var("FAKE_CUDA_CC", cc);
        Device::cuda_kernels_with(fake_options(Duration::from_secs(30)), &SHIPPED).unwrap()
    };
    // H100: the sm_90 cubin; the kernels are named by the PTX.
    let d = open("90");
    let info = d.as_cuda().unwrap().info().clone();
    assert_eq!((info.ptx_sm, info.image), (90, ImageKind::Sass));
    assert!(
        info.to_string().contains(", sm_90 SASS, registers uncapped"),
        "{info}"
    );
    assert_eq!(last_load(), "sass fake sm_90 cubin");
    assert_eq!(d.as_cuda().unwrap().kernels(), &["heavy", "light"]);
    assert_eq!(d.max_ranks_for(&HEAVY, 256).unwrap(), 33_792);
    // 8.6: the sm_80 cubin; 7.5: the sm_70 one.
    let d = open("86");
    assert_eq!(d.as_cuda().unwrap().info().image, ImageKind::Sass);
    assert_eq!(last_load(), "sass fake sm_80 cubin");
    drop(open("75"));
    assert_eq!(last_load(), "sass fake sm_70 cubin");
    // 12.0: no cubin of its major: the sm_90 PTX, JIT-compiled.
    let d = open("120");
    let info = d.as_cuda().unwrap().info().clone();
    assert_eq!((info.ptx_sm, info.image), (90, ImageKind::Ptx));
    assert!(info.to_string().contains(", sm_90 PTX (JIT), "), "{info}");
    assert_eq!(last_load(), "ptx sm_90");
    // A register cap is applied by the JIT only: PTX even on an H100.
    std::env::set_var("FAKE_CUDA_CC", "90");
    let capped = CudaOptions {
        max_registers: Some(128),
        ..fake_options(Duration::from_secs(30))
    };
    let d = Device::cuda_kernels_with(capped, &SHIPPED).unwrap();
    assert_eq!(d.as_cuda().unwrap().info().image, ImageKind::Ptx);
    assert_eq!(last_load(), "ptx sm_90");
    // Through open, options from the environment.
    let d = Device::open(BackendKind::Auto, &SHIPPED).unwrap();
    assert_eq!(d.backend_name(), "cuda");
    assert_eq!(last_load(), "sass fake sm_90 cubin");
    std::env::remove_var("FAKE_CUDA_CC");
    std::env::remove_var("FAKE_CUDA_IMAGE_LOG");
}
