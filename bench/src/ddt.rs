//! The `ddt` suite: the whole-GPU pack engine (`Device::pack`,
//! `Device::unpack`) on ddtbench's communication patterns and two of
//! seed 001's, against copy kernels moving the same bytes in the same run:
//! `native_copy` (8-byte words, grid-stride) and `ddt_copy16` (16 bytes per
//! rank and step, the engine's own access pattern on a contiguous type).
//! Every packed buffer and every unpacked one is checked against the
//! reference model (`gpu_mpi::datatype::reference`). Also reported: the
//! encoding's bytes and work units, and the host walk (the device walker's
//! code, one thread) in GB/s.
//!
//! Two more tables: the tiled path against the direct one
//! (`PackStrategy::Tiled` and `Direct`) on transpose-like patterns, each as
//! a fraction of the 8-byte copy in the same run; and send/receive of a
//! derived type between two ranks (`View`/`MutView`) against manual pack +
//! byte send + unpack in the same kernel ([`DDT_P2P`]). Ratios only; nothing
//! is asserted about them.

use super::{median, ratio, Ctx, Row, Section, Target, VIEWS_KERNELS};
use gpu_mpi::datatype::{reference, CommittedType, Order, PackStrategy, Primitive, UserDatatype};
use gpu_mpi::device::derived::PackPath;
use gpu_mpi::{BackendKind, Device};
use gpu_mpi_bench_kernels::ddt::{Copy16Args, DDT_COPY16};
use gpu_mpi_bench_kernels::native::{CopyArgs, NATIVE_COPY};
use gpu_mpi_bench_views_kernels::{TypedP2pArgs, DDT_P2P, P2P_MANUAL, P2P_TYPED};
use std::time::Instant;

/// One pattern: a name, the type, and the bytes of the typed buffer.
struct Shape {
    name: &'static str,
    what: &'static str,
    ty: UserDatatype,
}

fn e(r: Result<UserDatatype, gpu_mpi::DatatypeError>) -> Result<UserDatatype, String> {
    r.map_err(|e| e.to_string())
}

fn shapes(quick: bool) -> Result<Vec<Shape>, String> {
    let f32t: UserDatatype = Primitive::F32.into();
    let f64t: UserDatatype = Primitive::F64.into();
    let q = |full: i64, small: i64| if quick { small } else { full };
    let mut v = Vec::new();
    // WRF: halos of a (z, y, x) f32 field, 3 cells wide.
    let (nz, ny, nx) = (q(32, 4), q(256, 16), q(256, 16));
    v.push(Shape {
        name: "wrf_x_halo",
        what: "subarray 3-D, 3 x-columns",
        ty: e(UserDatatype::subarray(
            &[nz, ny, nx],
            &[nz, ny, 3],
            &[0, 0, 3],
            Order::C,
            &f32t,
        ))?,
    });
    v.push(Shape {
        name: "wrf_y_halo",
        what: "subarray 3-D, 3 y-rows",
        ty: e(UserDatatype::subarray(
            &[nz, ny, nx],
            &[nz, 3, nx],
            &[0, 3, 0],
            Order::C,
            &f32t,
        ))?,
    });
    // NAS MG: a y-face of an n^3 f64 grid.
    let n = q(128, 8);
    v.push(Shape {
        name: "nas_mg_face",
        what: "vector(n, n, n*n) f64",
        ty: e(UserDatatype::vector(n, n, n * n, &f64t))?,
    });
    // FFT 2-D: the transpose of an n x n complex matrix.
    let n = q(256, 8);
    let cplx = e(UserDatatype::contiguous(2, &f64t))?;
    let col = e(UserDatatype::vector(n, 1, n, &cplx))?;
    v.push(Shape {
        name: "fft2d_transpose",
        what: "hvector(n, 1, 16 B) of vector(n, 1, n) complex",
        ty: e(UserDatatype::hvector(n, 1, 16, &col))?,
    });
    // LAMMPS: the particles that leave, 3 f64 each, by an index list.
    let particles = q(100_000, 64);
    // About 2 in 5, chosen by a hash of the index (no period to fold).
    let leaves = |i: &i64| ((*i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % 5 < 2;
    let idx: Vec<i64> = (0..particles).filter(leaves).map(|i| i * 3).collect();
    v.push(Shape {
        name: "lammps_indexed",
        what: "indexed_block(3, 2/5 of the particles) f64",
        ty: e(UserDatatype::indexed_block(3, &idx, &f64t))?,
    });
    // MILC: su3 matrices (18 f32) of the even sites of a z-face, by t.
    let l = q(16, 4);
    let site = e(UserDatatype::contiguous(18, &f32t))?;
    let row = e(UserDatatype::vector(l * l / 2, 1, 2, &site))?;
    v.push(Shape {
        name: "milc_su3_zdown",
        what: "hvector(L, 1, L^3 sites) of vector(L^2/2, 1, 2) su3",
        ty: e(UserDatatype::hvector(l, 1, l * l * l * 72, &row))?,
    });
    // Seed 001: the left half of an n x n f64 matrix, and its lower triangle.
    let n = q(1024, 16);
    v.push(Shape {
        name: "submatrix_vector",
        what: "vector(n, n/2, n) f64",
        ty: e(UserDatatype::vector(n, n / 2, n, &f64t))?,
    });
    let n = q(512, 8);
    let lens: Vec<i64> = (1..=n).collect();
    let disps: Vec<i64> = (0..n).map(|i| i * n).collect();
    v.push(Shape {
        name: "lower_triangular",
        what: "indexed(i + 1 at i*n) f64",
        ty: e(UserDatatype::indexed(&lens, &disps, &f64t))?,
    });
    Ok(v)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(ctx: &mut Ctx, s: &Shape) -> Result<Row, String> {
    let dev = ctx.device;
    let c: CommittedType = s.ty.commit().map_err(|e| format!("{}: {e}", s.name))?;
    let (_, hi) = c.span(1).map_err(|e| e.to_string())?;
    let typed_len = hi.max(1) as usize;
    let src: Vec<u8> = (0..typed_len).map(|i| (i * 131 + 7) as u8).collect();
    let bytes = c.pack_size(1).map_err(|e| e.to_string())?;
    let want = reference::pack(&s.ty, &src, 0, 1).map_err(|e| e.to_string())?;
    let mut model = vec![0u8; typed_len];
    reference::unpack(&s.ty, &want, 1, &mut model, 0).map_err(|e| e.to_string())?;

    // The host walk: the device walker's code on one host thread.
    let t = Instant::now();
    let host = c.pack(&src, 0, 1).map_err(|e| e.to_string())?;
    let host_ns = t.elapsed().as_nanos() as f64;
    if host != want {
        return Err(format!("{}: the host walk packed wrong bytes", s.name));
    }

    let dsrc = dev.upload(&src).map_err(|e| e.to_string())?;
    let packed = ctx.alloc::<u8>(bytes)?;
    let mut dst = ctx.alloc::<u8>(typed_len)?;
    let spec = dev.pack_world(&c, 1).map_err(|e| e.to_string())?;
    let (mut pack_t, mut unpack_t, mut copy_t, mut copy16_t) = (vec![], vec![], vec![], vec![]);
    let words = bytes.div_ceil(8);
    let (w_src, w_dst) = (ctx.alloc::<u64>(words)?, ctx.alloc::<u64>(words)?);
    let (b_src, b_dst) = (ctx.alloc::<u8>(bytes)?, ctx.alloc::<u8>(bytes)?);
    for _ in 0..ctx.preset.reps {
        let r = dev
            .pack_into(&c, &dsrc, 0, 1, &packed)
            .map_err(|e| format!("{} pack: {e}", s.name))?;
        pack_t.push(r.map_or(0.0, |r| ms(r.kernel_time())));
        ctx.zero(&mut dst)?;
        let r = dev
            .unpack(&c, &packed, 1, &dst, 0)
            .map_err(|e| format!("{} unpack: {e}", s.name))?;
        unpack_t.push(r.map_or(0.0, |r| ms(r.kernel_time())));
        let r = ctx.launch(
            &NATIVE_COPY,
            &CopyArgs {
                src: w_src.slice(),
                dst: w_dst.slice(),
            },
            &spec,
        )?;
        copy_t.push(ms(r.report.kernel_time()));
        let r = ctx.launch(
            &DDT_COPY16,
            &Copy16Args {
                src: b_src.slice(),
                dst: b_dst.slice(),
            },
            &spec,
        )?;
        copy16_t.push(ms(r.report.kernel_time()));
    }
    if ctx.download(&packed)? != want {
        return Err(format!("{}: Device::pack packed wrong bytes", s.name));
    }
    if ctx.download(&dst)? != model {
        return Err(format!("{}: Device::unpack wrote wrong bytes", s.name));
    }
    ctx.checked();
    ctx.checked();
    let gbps = |t_ms: f64| ratio(bytes as f64, t_ms * 1e6);
    let (p, u, c8, c16) = (
        median(&pack_t),
        median(&unpack_t),
        median(&copy_t),
        median(&copy16_t),
    );
    Ok(vec![
        ("pattern", s.name.into()),
        ("type", s.what.into()),
        ("bytes", bytes.into()),
        ("encoding_bytes", c.encoding_bytes().into()),
        ("units", c.units().into()),
        ("ranks", spec_ranks(&spec).into()),
        ("pack_gbps", gbps(p).into()),
        ("unpack_gbps", gbps(u).into()),
        ("copy_gbps", gbps(c8).into()),
        ("copy16_gbps", gbps(c16).into()),
        ("pack_of_copy", ratio(c8, p).into()),
        ("unpack_of_copy", ratio(c8, u).into()),
        ("pack_of_copy16", ratio(c16, p).into()),
        ("host_walk_gbps", ratio(bytes as f64, host_ns).into()),
        ("pack_ms", p.into()),
        ("copy_ms", c8.into()),
    ])
}

fn spec_ranks(spec: &gpu_mpi::WorldSpec) -> u32 {
    match spec.ranks {
        gpu_mpi::RankCount::Exact(n) => n,
        gpu_mpi::RankCount::Max => 0,
    }
}

/// The transpose-like patterns of the tiled-path table: one type and the
/// instances packed at once.
fn tile_shapes(quick: bool) -> Result<Vec<(Shape, usize)>, String> {
    let q = |full: i64, small: i64| if quick { small } else { full };
    let f32t: UserDatatype = Primitive::F32.into();
    let f64t: UserDatatype = Primitive::F64.into();
    let cplx = e(UserDatatype::contiguous(2, &f64t))?;
    let transpose = |n: i64, elem: &UserDatatype| -> Result<UserDatatype, String> {
        let col = e(UserDatatype::vector(n, 1, n, elem))?;
        e(UserDatatype::hvector(n, 1, elem.extent(), &col))
    };
    let n = q(1024, 40);
    let col = e(UserDatatype::vector(n, 1, n, &f32t))?;
    Ok(vec![
        (
            Shape {
                name: "fft2d_transpose",
                what: "hvector(n, 1, 16 B) of vector(n, 1, n) complex",
                ty: transpose(q(512, 24), &cplx)?,
            },
            1,
        ),
        (
            Shape {
                name: "transpose_f64",
                what: "hvector(n, 1, 8 B) of vector(n, 1, n) f64",
                ty: transpose(q(1024, 33), &f64t)?,
            },
            1,
        ),
        (
            Shape {
                name: "transpose_f32",
                what: "hvector(n, 1, 4 B) of vector(n, 1, n) f32",
                ty: transpose(q(1024, 40), &f32t)?,
            },
            1,
        ),
        (
            Shape {
                name: "matrix_columns",
                what: "n x resized(vector(n, 1, n) f32, extent 4 B)",
                ty: e(UserDatatype::resized(&col, 0, 4))?,
            },
            n as usize,
        ),
    ])
}

/// Pack and unpack of `count` instances of `s` by the tiled and the direct
/// path, both checked against the reference model, and the copy of the
/// packed bytes in the same run.
fn measure_tiles(ctx: &mut Ctx, s: &Shape, count: usize) -> Result<Row, String> {
    let dev: &Device = ctx.device;
    let c: CommittedType = s.ty.commit().map_err(|e| format!("{}: {e}", s.name))?;
    let (_, hi) = c.span(count).map_err(|e| e.to_string())?;
    let typed_len = hi.max(1) as usize;
    let src: Vec<u8> = (0..typed_len).map(|i| (i * 131 + 7) as u8).collect();
    let bytes = c.pack_size(count).map_err(|e| e.to_string())?;
    let want = reference::pack(&s.ty, &src, 0, count).map_err(|e| e.to_string())?;
    let mut model = vec![0u8; typed_len];
    reference::unpack(&s.ty, &want, count, &mut model, 0).map_err(|e| e.to_string())?;
    let auto = Device::pack_path(&c, count, PackStrategy::Auto).map_err(|e| e.to_string())?;
    let dsrc = dev.upload(&src).map_err(|e| e.to_string())?;
    let spec = dev.pack_world(&c, count).map_err(|e| e.to_string())?;
    let words = bytes.div_ceil(8);
    let (w_src, w_dst) = (ctx.alloc::<u64>(words)?, ctx.alloc::<u64>(words)?);
    let mut t = [vec![], vec![], vec![], vec![]];
    let strategies = [PackStrategy::Tiled, PackStrategy::Direct];
    let mut copy_t = vec![];
    for _ in 0..ctx.preset.reps {
        for (k, strategy) in strategies.into_iter().enumerate() {
            let packed = ctx.alloc::<u8>(bytes)?;
            let r = dev
                .pack_into_using(&c, &dsrc, 0, count, &packed, strategy)
                .map_err(|e| format!("{} pack {strategy:?}: {e}", s.name))?;
            t[2 * k].push(r.map_or(0.0, |r| ms(r.kernel_time())));
            let dst = ctx.alloc::<u8>(typed_len)?;
            let r = dev
                .unpack_using(&c, &packed, count, &dst, 0, strategy)
                .map_err(|e| format!("{} unpack {strategy:?}: {e}", s.name))?;
            t[2 * k + 1].push(r.map_or(0.0, |r| ms(r.kernel_time())));
            if ctx.download(&packed)? != want {
                return Err(format!("{}: the {strategy:?} pack packed wrong bytes", s.name));
            }
            if ctx.download(&dst)? != model {
                return Err(format!("{}: the {strategy:?} unpack wrote wrong bytes", s.name));
            }
            ctx.checked();
            ctx.checked();
        }
        let r = ctx.launch(
            &NATIVE_COPY,
            &CopyArgs {
                src: w_src.slice(),
                dst: w_dst.slice(),
            },
            &spec,
        )?;
        copy_t.push(ms(r.report.kernel_time()));
    }
    let [tp, tu, dp, du] = t.map(|v| median(&v));
    let c8 = median(&copy_t);
    let gbps = |t_ms: f64| ratio(bytes as f64, t_ms * 1e6);
    Ok(vec![
        ("pattern", s.name.into()),
        ("type", s.what.into()),
        ("count", count.into()),
        ("bytes", bytes.into()),
        (
            "auto",
            (if auto == PackPath::Tiled {
                "tiled"
            } else {
                "direct"
            })
            .into(),
        ),
        ("tiled_pack_gbps", gbps(tp).into()),
        ("direct_pack_gbps", gbps(dp).into()),
        ("tiled_unpack_gbps", gbps(tu).into()),
        ("direct_unpack_gbps", gbps(du).into()),
        ("copy_gbps", gbps(c8).into()),
        ("tiled_pack_of_copy", ratio(c8, tp).into()),
        ("direct_pack_of_copy", ratio(c8, dp).into()),
        ("tiled_unpack_of_copy", ratio(c8, tu).into()),
        ("direct_unpack_of_copy", ratio(c8, du).into()),
        ("pack_tiled_over_direct", ratio(dp, tp).into()),
        ("unpack_tiled_over_direct", ratio(du, tu).into()),
    ])
}

/// Send/receive of one instance of `s` from rank 0 to rank 1, typed
/// (`View` to `MutView`) against manual pack + byte send + unpack, `msgs`
/// messages per launch; rank 1's buffer checked against the reference
/// model after each.
fn measure_p2p(ctx: &mut Ctx, s: &Shape, msgs: u32) -> Result<Row, String> {
    let dev: &Device = ctx.device;
    let c: CommittedType = s.ty.commit().map_err(|e| format!("{}: {e}", s.name))?;
    let (_, hi) = c.span(1).map_err(|e| e.to_string())?;
    let typed_len = hi.max(1) as usize;
    let src: Vec<u8> = (0..typed_len).map(|i| (i * 29 + 11) as u8).collect();
    let bytes = c.pack_size(1).map_err(|e| e.to_string())?;
    let want = reference::pack(&s.ty, &src, 0, 1).map_err(|e| e.to_string())?;
    let mut model = vec![0u8; typed_len];
    reference::unpack(&s.ty, &want, 1, &mut model, 0).map_err(|e| e.to_string())?;
    let enc = dev.upload(c.words()).map_err(|e| e.to_string())?;
    let dsrc = dev.upload(&src).map_err(|e| e.to_string())?;
    let (ss, rs) = (ctx.alloc::<u8>(bytes)?, ctx.alloc::<u8>(bytes)?);
    let max = u32::try_from(bytes.max(64))
        .map_err(|_| format!("{}: {bytes} bytes is too large a message", s.name))?;
    let spec = ctx.world(2, None).max_message_bytes(max);
    let mut t = [vec![], vec![]];
    for _ in 0..ctx.preset.reps {
        for (k, mode) in [P2P_TYPED, P2P_MANUAL].into_iter().enumerate() {
            let dst = ctx.alloc::<u8>(typed_len)?;
            let args = TypedP2pArgs {
                ty: enc.slice(),
                src: dsrc.slice(),
                dst: dst.slice(),
                send_staging: ss.slice(),
                recv_staging: rs.slice(),
                count: 1,
                origin: 0,
                mode,
                reps: msgs,
            };
            let r = ctx
                .launch(&DDT_P2P, &args, &spec)
                .map_err(|e| format!("{} send/receive (mode {mode}): {e}", s.name))?;
            t[k].push(ms(r.report.kernel_time()));
            if ctx.download(&dst)? != model {
                return Err(format!(
                    "{}: send/receive (mode {mode}) received wrong bytes",
                    s.name
                ));
            }
            ctx.checked();
        }
    }
    let [typed, manual] = t.map(|v| median(&v));
    let gbps = |t_ms: f64| ratio(bytes as f64 * msgs as f64, t_ms * 1e6);
    Ok(vec![
        ("pattern", s.name.into()),
        ("bytes", bytes.into()),
        ("messages", msgs.into()),
        ("typed_gbps", gbps(typed).into()),
        ("manual_gbps", gbps(manual).into()),
        ("typed_over_manual", ratio(manual, typed).into()),
        ("typed_ms", typed.into()),
        ("manual_ms", manual.into()),
    ])
}

/// Runs the suite: a table with a row per pattern, the tiled-path table and
/// the send/receive table.
pub(crate) fn run(ctx: &mut Ctx) -> Result<(Vec<Section>, Vec<Target>), String> {
    let mut rows = Vec::new();
    let all = shapes(ctx.preset.quick)?;
    for s in &all {
        rows.push(measure(ctx, s)?);
    }
    let mut tile_rows = Vec::new();
    for (s, count) in tile_shapes(ctx.preset.quick)? {
        tile_rows.push(measure_tiles(ctx, &s, count)?);
    }
    let msgs = if ctx.preset.quick { 2 } else { 20 };
    let mut p2p_rows = Vec::new();
    // On a GPU the send/receive kernel comes from the second image (built
    // with `views`), loaded as a device of its own; the emulator runs any
    // kernel.
    let views = if ctx.is_gpu() {
        Some(
            Device::open(BackendKind::Cuda, &VIEWS_KERNELS)
                .map_err(|e| format!("opening the views kernels: {e}"))?,
        )
    } else {
        None
    };
    let mut vctx = Ctx {
        device: views.as_ref().unwrap_or(ctx.device),
        preset: ctx.preset,
        ranks: ctx.ranks,
        limits: ctx.limits.clone(),
        options: ctx.options,
        checked: 0,
        progress: ctx.progress.clone(),
    };
    for s in &all {
        p2p_rows.push(measure_p2p(&mut vctx, s, msgs)?);
    }
    ctx.checked += vctx.checked;
    let section = Section {
        suite: "ddt",
        title: "ddt: whole-GPU pack/unpack of derived datatypes vs copy kernels (GB/s of packed bytes)".into(),
        columns: vec![
            ("pattern", "pattern"),
            ("bytes", "bytes"),
            ("encoding_bytes", "enc B"),
            ("units", "units"),
            ("pack_gbps", "pack"),
            ("unpack_gbps", "unpack"),
            ("copy_gbps", "copy8"),
            ("copy16_gbps", "copy16"),
            ("pack_of_copy", "pack/copy8"),
            ("unpack_of_copy", "unpack/copy8"),
            ("host_walk_gbps", "host walk"),
        ],
        rows,
        notes: vec![
            "pack/copy8: the engine's bandwidth as a fraction of the 8-byte-word copy of the same bytes in the same world; host walk: the walker on one host thread".into(),
        ],
    };
    let tiles = Section {
        suite: "ddt",
        title: "ddt tiles: tiled vs direct whole-GPU pack/unpack of transpose-like types (fractions of copy8 in the same run)".into(),
        columns: vec![
            ("pattern", "pattern"),
            ("bytes", "bytes"),
            ("auto", "auto"),
            ("tiled_pack_of_copy", "tiled pack"),
            ("direct_pack_of_copy", "direct pack"),
            ("tiled_unpack_of_copy", "tiled unpack"),
            ("direct_unpack_of_copy", "direct unpack"),
            ("pack_tiled_over_direct", "pack tiled/direct"),
            ("unpack_tiled_over_direct", "unpack tiled/direct"),
        ],
        rows: tile_rows,
        notes: vec![
            "tiled/direct > 1: the shared-memory tiles are faster; auto: the path PackStrategy::Auto picks; every packed and unpacked buffer checked against the reference model".into(),
        ],
    };
    let p2p = Section {
        suite: "ddt",
        title: "ddt p2p: send/receive with the type (View/MutView) vs manual pack + byte send + unpack, two ranks".into(),
        columns: vec![
            ("pattern", "pattern"),
            ("bytes", "bytes"),
            ("messages", "msgs"),
            ("typed_gbps", "typed GB/s"),
            ("manual_gbps", "manual GB/s"),
            ("typed_over_manual", "typed/manual"),
        ],
        rows: p2p_rows,
        notes: vec![
            "typed/manual > 1: the typed send is faster; times are whole launches of `msgs` messages; rank 1's buffer checked against the reference model after every launch".into(),
            "on a GPU the kernel comes from the second image (gpu-mpi-bench-views-kernels, built with the device crate's `views` feature)".into(),
        ],
    };
    Ok((vec![section, tiles, p2p], Vec::new()))
}
