//! Derived datatypes through point-to-point and collectives, the kernel
//! `gpu_mpi_check_kernels::views` on each backend (`testgen!`: the emulator
//! always, the GPU where one is present): `View`/`MutView` sends and
//! receives between ranks (blocking, immediate, send-receive, matched
//! probe), type matching, truncation, bad buffers, and a proptest of random
//! type trees against the host reference model.

use gpu_mpi::datatype::{reference, Primitive, UserDatatype};
use gpu_mpi::device::datatype::{ID_F64, SIGNATURE_BIT};
use gpu_mpi::device::ErrorClass;
use gpu_mpi::WorldSpec;
use gpu_mpi_check::testgen;
use gpu_mpi_check::testgen::Backend;
use gpu_mpi_check_kernels::views::*;
use proptest::prelude::*;

mod common;
use common::types::{arb_type, no_overlap};

/// What a run of [`V_P2P`] left: rank 1's buffer and words.
struct Outcome {
    dst: Vec<u8>,
    out: Vec<u32>,
}

impl Outcome {
    fn class(&self) -> u32 {
        self.out[0]
    }
    fn bytes(&self) -> u32 {
        self.out[1]
    }
    fn sender_class(&self) -> u32 {
        self.out[OUT_WORDS + 5]
    }
}

struct Run<'a> {
    send: &'a UserDatatype,
    send_count: usize,
    recv: &'a UserDatatype,
    recv_count: usize,
    src: Vec<u8>,
    send_origin: usize,
    dst_len: usize,
    recv_origin: usize,
    mode: u32,
    recv_bytes: bool,
    spec: WorldSpec,
}

impl<'a> Run<'a> {
    /// Both sides `count` instances of `ty`, buffers sized from the span.
    fn same(ty: &'a UserDatatype, count: usize) -> Run<'a> {
        let c = ty.commit().unwrap();
        let (lo, hi) = c.span(count).unwrap();
        let origin = (-lo).max(0) as usize;
        let len = origin + hi.max(0) as usize + 3;
        Run {
            send: ty,
            send_count: count,
            recv: ty,
            recv_count: count,
            src: pattern(len),
            send_origin: origin,
            dst_len: len,
            recv_origin: origin,
            mode: BLOCKING,
            recv_bytes: false,
            spec: WorldSpec::ranks(2),
        }
    }

    fn go(&self, backend: Backend) -> Outcome {
        let device = backend.device();
        let s = self.send.commit().unwrap();
        let r = self.recv.commit().unwrap();
        let send_ty = device.upload(s.words()).unwrap();
        let recv_ty = device.upload(r.words()).unwrap();
        let src = device.upload(&self.src).unwrap();
        let dst = device.alloc_zeroed::<u8>(self.dst_len.max(1)).unwrap();
        let out = device.upload(&[u32::MAX; 2 * OUT_WORDS]).unwrap();
        let args = ViewArgs {
            send_ty: send_ty.slice(),
            recv_ty: recv_ty.slice(),
            src: src.slice(),
            dst: dst.slice(),
            out: out.slice(),
            send_count: self.send_count as u32,
            recv_count: self.recv_count as u32,
            send_origin: self.send_origin as u32,
            recv_origin: self.recv_origin as u32,
            mode: self.mode,
            recv_bytes: self.recv_bytes as u32,
            program: V_P2P,
            reserved: 0,
        };
        device.launch(&SEMANTICS_VIEWS, &args, &self.spec).unwrap();
        let mut dst = device.download(&dst).unwrap();
        dst.truncate(self.dst_len);
        Outcome {
            dst,
            out: device.download(&out).unwrap(),
        }
    }

    /// What rank 1's buffer must hold: the reference unpack of the reference
    /// pack of rank 0's view (cut to `bytes`) into zeroes.
    fn expected(&self, bytes: usize) -> Vec<u8> {
        let mut packed = reference::pack(self.send, &self.src, self.send_origin, self.send_count).unwrap();
        packed.truncate(bytes);
        if self.recv_bytes {
            let mut d = vec![0u8; self.dst_len];
            d[..packed.len()].copy_from_slice(&packed);
            return d;
        }
        partial_unpack(self.recv, &packed, self.recv_origin, self.dst_len)
    }
}

/// The reference unpack of `packed` (possibly part of an instance): the
/// typemap's bytes in order until `packed` runs out.
fn partial_unpack(ty: &UserDatatype, packed: &[u8], origin: usize, len: usize) -> Vec<u8> {
    let map = reference::typemap(ty);
    let mut d = vec![0u8; len];
    let mut p = 0usize;
    let mut i = 0i64;
    while p < packed.len() {
        for &(disp, prim) in &map {
            for b in 0..prim.size() as i64 {
                if p == packed.len() {
                    return d;
                }
                d[(origin as i64 + i * ty.extent() + disp + b) as usize] = packed[p];
                p += 1;
            }
        }
        i += 1;
        if map.is_empty() {
            break;
        }
    }
    d
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 + 7) as u8 | 1).collect()
}

fn f64s() -> UserDatatype {
    Primitive::F64.into()
}

fn check_same(backend: Backend, ty: &UserDatatype, count: usize, mode: u32) {
    let mut run = Run::same(ty, count);
    run.mode = mode;
    let o = run.go(backend);
    let packed = ty.size() as usize * count;
    assert_eq!((o.class(), o.bytes() as usize), (0, packed), "mode {mode}");
    assert_eq!(o.out[2], count as u32, "count_of");
    assert_eq!(o.out[3] as u64, ty.elements() * count as u64, "elements_of");
    assert_eq!(o.dst, run.expected(packed), "mode {mode}: received bytes");
    assert_eq!(o.sender_class(), 0);
}

fn vector_of_vectors_every_mode(backend: Backend) {
    // 4 planes of a 6 x 8 f64 grid, a 3 x 2 block of each.
    let row = UserDatatype::vector(3, 2, 8, &f64s()).unwrap();
    let ty = UserDatatype::hvector(4, 1, 6 * 8 * 8, &row).unwrap();
    for mode in [BLOCKING, IMMEDIATE, SEND_RECEIVE, MATCHED] {
        check_same(backend, &ty, 1, mode);
        check_same(backend, &ty, 2, mode);
    }
}
testgen!(vector_of_vectors_every_mode);

fn indexed_with_gaps_and_a_zero_block(backend: Backend) {
    let ty = UserDatatype::indexed(&[2, 0, 3, 1], &[1, 4, 6, 12], &Primitive::I32.into()).unwrap();
    for mode in [BLOCKING, IMMEDIATE, MATCHED] {
        check_same(backend, &ty, 3, mode);
    }
}
testgen!(indexed_with_gaps_and_a_zero_block);

fn transpose_from_an_hvector_of_vectors(backend: Backend) {
    // A 40 x 40 f64 matrix sent as its transpose (12 800 bytes: beyond a
    // slot, so it streams), received into a plain row-major matrix.
    let n = 40i64;
    let col = UserDatatype::vector(n, 1, n, &f64s()).unwrap();
    let tr = UserDatatype::hvector(n, 1, 8, &col).unwrap();
    let plain = UserDatatype::contiguous(n * n, &f64s()).unwrap();
    let m: Vec<f64> = (0..n * n).map(|i| i as f64).collect();
    for (mode, streaming) in [(BLOCKING, false), (IMMEDIATE, true), (MATCHED, false)] {
        let mut run = Run::same(&tr, 1);
        run.recv = &plain;
        run.src = bytemuck::cast_slice(&m).to_vec();
        run.send_origin = 0;
        run.recv_origin = 0;
        run.dst_len = run.src.len();
        run.mode = mode;
        run.spec = WorldSpec::ranks(2).force_streaming(streaming);
        let o = run.go(backend);
        assert_eq!(o.class(), 0);
        let got: &[f64] = bytemuck::cast_slice(&o.dst);
        for i in 0..n as usize {
            for j in 0..n as usize {
                assert_eq!(got[i * n as usize + j], m[j * n as usize + i], "({i}, {j})");
            }
        }
        // Same signature id on both sides: 1600 doubles.
        assert_eq!(o.out[4], ID_F64);
    }
}
testgen!(transpose_from_an_hvector_of_vectors);

fn struct_with_mixed_types_and_displacements(backend: Backend) {
    let ty = UserDatatype::structured(
        &[1, 2, 3],
        &[-16, 4, 24],
        &[Primitive::U8.into(), Primitive::F64.into(), Primitive::I16.into()],
    )
    .unwrap();
    for mode in [BLOCKING, IMMEDIATE, SEND_RECEIVE, MATCHED] {
        check_same(backend, &ty, 4, mode);
    }
    let o = Run::same(&ty, 1).go(backend);
    assert_ne!(o.out[4] & SIGNATURE_BIT, 0, "a heterogeneous signature id");
    // The same signature as one contiguous run of two: the same id.
    let two = UserDatatype::contiguous(2, &ty).unwrap();
    let mut run = Run::same(&ty, 4);
    run.recv = &two;
    run.recv_count = 2;
    let o = run.go(backend);
    assert_eq!((o.class(), o.out[2]), (0, 2));
}
testgen!(struct_with_mixed_types_and_displacements);

fn partial_elements_get_elements_versus_count(backend: Backend) {
    // 5 doubles into a view of 3 instances of contiguous(2, f64): the
    // message fills 2.5 instances.
    let pair = UserDatatype::contiguous(2, &f64s()).unwrap();
    let five = UserDatatype::contiguous(5, &f64s()).unwrap();
    let mut run = Run::same(&pair, 3);
    run.send = &five;
    run.send_count = 1;
    run.src = pattern(40);
    run.send_origin = 0;
    let o = run.go(backend);
    assert_eq!((o.class(), o.bytes()), (0, 40));
    assert_eq!(o.out[2], u32::MAX, "count: MPI_UNDEFINED");
    assert_eq!(o.out[3], 5, "elements");
    assert_eq!(o.dst, run.expected(40));
}
testgen!(partial_elements_get_elements_versus_count);

/// Rank 0 sends `send_count` of `send` (its buffer the pattern over the
/// span), rank 1 receives into `recv_count` of `recv` in `mode`.
fn prefix_run<'a>(
    send: &'a UserDatatype,
    send_count: usize,
    recv: &'a UserDatatype,
    recv_count: usize,
    mode: u32,
    spec: WorldSpec,
) -> Run<'a> {
    let mut run = Run::same(recv, recv_count);
    let (_, hi) = send.commit().unwrap().span(send_count).unwrap();
    run.send = send;
    run.send_count = send_count;
    run.src = pattern((hi.max(0) as usize).max(64));
    run.send_origin = 0;
    run.mode = mode;
    run.spec = spec;
    run
}

/// The cases of [`a_receive_whose_signature_extends_the_message_takes_it`]
/// and [`a_heterogeneous_message_into_a_longer_signature_is_taken`]:
/// `(send type, send count, receive type, receive count, bytes, elements)`
/// must succeed in every mode with `bytes` bytes, `get_count`
/// `MPI_UNDEFINED`, `elements` primitives and the reference model's
/// buffer.
fn prefix_cases(backend: Backend, cases: &[(&UserDatatype, usize, &UserDatatype, usize, u32, u32)]) {
    for (k, &(send, send_count, recv, recv_count, bytes, elements)) in cases.iter().enumerate() {
        for mode in [BLOCKING, IMMEDIATE, SEND_RECEIVE, MATCHED] {
            let run = prefix_run(send, send_count, recv, recv_count, mode, WorldSpec::ranks(2));
            let o = run.go(backend);
            let at = format!("case {k}, mode {mode}");
            assert_eq!((o.class(), o.bytes()), (0, bytes), "{at}: class and bytes");
            assert_eq!(o.out[2], u32::MAX, "{at}: count: MPI_UNDEFINED");
            assert_eq!(o.out[3], elements, "{at}: elements");
            assert_eq!(o.dst, run.expected(bytes as usize), "{at}: the buffer");
            assert_eq!(o.sender_class(), 0, "{at}: the sender");
        }
    }
}

/// A message that must fail with `MPI_ERR_TYPE` on the receiver, its
/// status intact, the buffer untouched, the sender done.
fn check_type_error(backend: Backend, run: &Run<'_>, bytes: u32, what: &str) {
    let o = run.go(backend);
    assert_eq!((o.class(), o.bytes()), (ErrorClass::Type as u32, bytes), "{what}");
    assert!(o.dst.iter().all(|&x| x == 0), "{what}: buffer untouched");
    assert_eq!(o.sender_class(), 0, "{what}: the sender");
}

/// MPI 4.1 §3.3.1: a receive matches a message whose type signature is a
/// prefix of the receive's (`count` instances of its type); `get_count`
/// is then `MPI_UNDEFINED` where the message is not whole instances and
/// `get_elements` counts its primitives (§5.1.11). Issue 27, item 8a,
/// first part: a message of one primitive's id into a view of a
/// heterogeneous type, contiguous or not (docs/datatypes.md, "Type
/// matching").
fn a_receive_whose_signature_extends_the_message_takes_it(backend: Backend) {
    let i32s: UserDatatype = Primitive::I32.into();
    let pair = UserDatatype::structured(&[1, 1], &[0, 8], &[Primitive::I32.into(), f64s()]).unwrap();
    let tail = UserDatatype::structured(&[3, 1], &[0, 16], &[Primitive::I32.into(), f64s()]).unwrap();
    // {i32, f64} without a gap: one run of 12 bytes, a contiguous view.
    let packed = UserDatatype::structured(&[1, 1], &[0, 4], &[Primitive::I32.into(), f64s()]).unwrap();
    prefix_cases(
        backend,
        &[
            // One i32 (a primitive's id) into {i32, f64}.
            (&i32s, 1, &pair, 1, 4, 1),
            // Two i32 into {3 × i32, f64} × 2: the first run, in part.
            (&i32s, 2, &tail, 2, 8, 2),
            // One i32 into a contiguous {i32, f64}.
            (&i32s, 1, &packed, 1, 4, 1),
        ],
    );
    // Not a prefix: two i32 against {i32, f64} still fails.
    let run = prefix_run(&i32s, 2, &pair, 2, BLOCKING, WorldSpec::ranks(2));
    check_type_error(backend, &run, 8, "not a prefix");
    let run = prefix_run(&i32s, 2, &packed, 1, BLOCKING, WorldSpec::ranks(2));
    check_type_error(backend, &run, 8, "not a prefix of a contiguous view");
    // Another primitive than the signature's first: fails.
    let f64 = f64s();
    let run = prefix_run(&f64, 1, &pair, 1, BLOCKING, WorldSpec::ranks(2));
    check_type_error(backend, &run, 8, "f64 is not i32");
}
testgen!(a_receive_whose_signature_extends_the_message_takes_it);

fn i32s() -> UserDatatype {
    Primitive::I32.into()
}

/// A struct of one of each of `types` at `displacements`.
fn record(displacements: &[i64], types: &[UserDatatype]) -> UserDatatype {
    UserDatatype::structured(&vec![1; types.len()], displacements, types).unwrap()
}

/// Issue 27, item 8a, second part: a heterogeneous message whose signature
/// is a prefix of a receive's of another period is taken (MPI 4.1
/// §3.3.1): the sender's slot carries a hash of its primitive sequence,
/// which the receive compares with the hash of its own signature cut to
/// the message's length (docs/datatypes.md, "Signature prefixes"). Every
/// mode, contiguous and non-contiguous views on either side, a message
/// across the receive's instances, a sender of several instances, a
/// struct against its doubled form, and a streamed message.
fn a_heterogeneous_message_into_a_longer_signature_is_taken(backend: Backend) {
    // {f64, i32} and {f64, i32, i32}: contiguous (one instance).
    let di = record(&[0, 8], &[f64s(), i32s()]);
    let dii = record(&[0, 8, 12], &[f64s(), i32s(), i32s()]);
    // The same signatures with gaps: non-contiguous.
    let di_gap = record(&[0, 12], &[f64s(), i32s()]);
    let dii_gap = record(&[0, 12, 20], &[f64s(), i32s(), i32s()]);
    // {f64, i32, i32, f64}: across two instances of {f64, i32, i32}.
    let diid = record(&[0, 8, 12, 16], &[f64s(), i32s(), i32s(), f64s()]);
    // {i32, f64} (extent 16: non-contiguous in twos) twice, into
    // {i32, f64, i32, f64, i32}.
    let id = record(&[0, 4], &[i32s(), f64s()]);
    let ididi = record(&[0, 4, 12, 16, 24], &[i32s(), f64s(), i32s(), f64s(), i32s()]);
    // {i32, f64, i32} (first and last primitive equal: its id hashes the
    // whole signature) into its doubled form.
    let idi = record(&[0, 4, 12], &[i32s(), f64s(), i32s()]);
    let idi2 = UserDatatype::contiguous(2, &idi).unwrap();
    prefix_cases(
        backend,
        &[
            // The case: {f64, i32} into {f64, i32, i32}.
            (&di, 1, &dii, 1, 12, 2),
            (&di_gap, 1, &dii_gap, 1, 12, 2),
            (&di, 1, &dii_gap, 2, 12, 2),
            (&di_gap, 1, &dii, 3, 12, 2),
            (&diid, 1, &dii, 3, 24, 4),
            (&id, 2, &ididi, 1, 24, 4),
            (&idi, 1, &idi2, 1, 16, 3),
        ],
    );
    // Whole instances of the receive: get_count is defined.
    for mode in [BLOCKING, MATCHED] {
        let run = prefix_run(&idi, 2, &idi2, 2, mode, WorldSpec::ranks(2));
        let o = run.go(backend);
        assert_eq!(
            (o.class(), o.bytes(), o.out[2], o.out[3]),
            (0, 32, 1, 6),
            "mode {mode}"
        );
        assert_eq!(o.dst, run.expected(32), "mode {mode}: the buffer");
    }
    // 200 × {i32, f64} (2400 bytes) into {200 × {i32, f64}, i32}: larger
    // than a slot, streamed through 64-byte slots and through the default
    // ones; packed (`resized` to 12 bytes: the sender and the receiver
    // contiguous) and with gaps.
    let id12 = UserDatatype::resized(&id, 0, 12).unwrap();
    let long = UserDatatype::structured(&[200, 1], &[0, 3200], &[id.clone(), i32s()]).unwrap();
    let long12 = UserDatatype::structured(&[200, 1], &[0, 2400], &[id12.clone(), i32s()]).unwrap();
    for (send, recv) in [(&id, &long), (&id12, &long12), (&id12, &long)] {
        for spec in [WorldSpec::ranks(2), WorldSpec::ranks(2).slot_bytes(64)] {
            for mode in [BLOCKING, IMMEDIATE, SEND_RECEIVE] {
                let run = prefix_run(send, 200, recv, 1, mode, spec);
                let o = run.go(backend);
                assert_eq!((o.class(), o.bytes()), (0, 2400), "mode {mode}");
                assert_eq!((o.out[2], o.out[3]), (u32::MAX, 400), "mode {mode}");
                assert_eq!(o.dst, run.expected(2400), "mode {mode}: the buffer");
            }
        }
    }
}
testgen!(a_heterogeneous_message_into_a_longer_signature_is_taken);

/// The other side of [`a_heterogeneous_message_into_a_longer_signature_is_taken`]:
/// a heterogeneous message of another id that is no prefix of the
/// receive's signature is `MPI_ERR_TYPE`, the buffer untouched: a
/// different order, a different primitive of the same size (the same
/// length), a message ending inside a primitive of the receive; and, a
/// limit (docs/limits.md), one longer than the receive whose signature
/// starts with the receive's.
fn a_heterogeneous_message_that_is_no_prefix_is_a_type_error(backend: Backend) {
    let di = record(&[0, 8], &[f64s(), i32s()]);
    let dii = record(&[0, 8, 12], &[f64s(), i32s(), i32s()]);
    let dii_gap = record(&[0, 12, 20], &[f64s(), i32s(), i32s()]);
    let id = record(&[0, 4], &[i32s(), f64s()]);
    let dfi = record(&[0, 8, 12], &[f64s(), Primitive::F32.into(), i32s()]);
    let dli = record(&[0, 8, 16], &[f64s(), Primitive::I64.into(), i32s()]);
    let diid = record(&[0, 8, 12, 16], &[f64s(), i32s(), i32s(), f64s()]);
    let spec = || WorldSpec::ranks(2);
    for mode in [BLOCKING, IMMEDIATE, SEND_RECEIVE, MATCHED] {
        let at = |what: &str| format!("{what}, mode {mode}");
        // f64 i32 f64 i32 against f64 i32 i32 f64.
        let run = prefix_run(&di, 2, &dii, 2, mode, spec());
        check_type_error(backend, &run, 24, &at("{f64, i32} x 2"));
        let run = prefix_run(&di, 2, &dii_gap, 2, mode, spec());
        check_type_error(backend, &run, 24, &at("{f64, i32} x 2, gaps"));
        // i32 f64 against f64 i32: the same primitives and length.
        let run = prefix_run(&id, 1, &dii, 1, mode, spec());
        check_type_error(backend, &run, 12, &at("another order"));
        // f64 i32 i32 against f64 f32 i32: the same length, whole.
        let run = prefix_run(&dii, 1, &dfi, 1, mode, spec());
        check_type_error(backend, &run, 16, &at("f32 for i32"));
        // 12 bytes end inside the i64 of {f64, i64, i32}.
        let run = prefix_run(&di, 1, &dli, 1, mode, spec());
        check_type_error(backend, &run, 12, &at("inside a primitive"));
        // Longer than the receive: MPI_ERR_TYPE, not MPI_ERR_TRUNCATE.
        let run = prefix_run(&diid, 1, &dii, 1, mode, spec());
        check_type_error(backend, &run, 24, &at("longer than the receive"));
    }
}
testgen!(a_heterogeneous_message_that_is_no_prefix_is_a_type_error);

fn signature_mismatch_is_a_type_error_on_the_receiver(backend: Backend) {
    let a = UserDatatype::vector(4, 1, 2, &f64s()).unwrap();
    let b = UserDatatype::vector(4, 1, 2, &Primitive::I64.into()).unwrap();
    let mut run = Run::same(&a, 1);
    run.recv = &b;
    let o = run.go(backend);
    assert_eq!(o.class(), ErrorClass::Type as u32);
    assert_eq!(o.sender_class(), 0);
    assert!(o.dst.iter().all(|&x| x == 0), "buffer untouched");
    // Bytes stay the escape: the packed form, as it is.
    let mut run = Run::same(&a, 1);
    run.recv_bytes = true;
    let o = run.go(backend);
    assert_eq!((o.class(), o.bytes()), (0, 32));
    assert_eq!(o.dst, run.expected(32));
    // A struct against another struct of the same size.
    let s1 = UserDatatype::structured(&[1, 1], &[0, 8], &[f64s(), Primitive::I32.into()]).unwrap();
    let s2 = UserDatatype::structured(&[1, 1], &[0, 8], &[f64s(), Primitive::F32.into()]).unwrap();
    let mut run = Run::same(&s1, 2);
    run.recv = &s2;
    assert_eq!(run.go(backend).class(), ErrorClass::Type as u32);
}
testgen!(signature_mismatch_is_a_type_error_on_the_receiver);

fn a_receive_holding_fewer_elements_is_truncated(backend: Backend) {
    let ty = UserDatatype::vector(3, 2, 3, &Primitive::I32.into()).unwrap();
    for mode in [BLOCKING, IMMEDIATE, MATCHED] {
        let mut run = Run::same(&ty, 4);
        run.recv_count = 2;
        run.mode = mode;
        run.spec = WorldSpec::ranks(2).slot_bytes(64);
        let o = run.go(backend);
        assert_eq!(o.class(), ErrorClass::Truncate as u32, "mode {mode}");
        assert_eq!(o.bytes(), 96, "the status has the whole length");
        // The first two instances arrived, the rest of the buffer is zero.
        assert_eq!(o.dst, run.expected(48));
    }
    // Fewer bytes than the receive holds: fine.
    let mut run = Run::same(&ty, 2);
    run.recv_count = 4;
    run.dst_len = 200;
    let o = run.go(backend);
    assert_eq!((o.class(), o.out[2]), (0, 2));
}
testgen!(a_receive_holding_fewer_elements_is_truncated);

fn buffers_too_small_for_count_times_extent_are_argument_errors(backend: Backend) {
    let ty = UserDatatype::vector(3, 2, 3, &Primitive::I32.into()).unwrap();
    let mut run = Run::same(&ty, 2);
    run.dst_len = 40; // 2 instances need 8 + 32 + 24 = 56 bytes
    let o = run.go(backend);
    assert_eq!(o.class(), ErrorClass::Arg as u32);
    let neg = UserDatatype::hvector(2, 1, -16, &f64s()).unwrap();
    let mut run = Run::same(&neg, 1);
    run.recv_origin = 8; // the second block lies at -16
    let o = run.go(backend);
    assert_eq!(o.class(), ErrorClass::Arg as u32);
}
testgen!(buffers_too_small_for_count_times_extent_are_argument_errors);

fn broadcast_and_gather_take_views(backend: Backend) {
    let ty = UserDatatype::vector(5, 1, 3, &Primitive::U16.into()).unwrap();
    let c = ty.commit().unwrap();
    let span = c.span(1).unwrap().1 as usize; // 26 bytes
    let ranks = 6usize;
    let device = backend.device();
    let mut init = vec![0u8; ranks * span];
    init[..span].copy_from_slice(&pattern(span));
    let words = device.upload(c.words()).unwrap();
    let dst = device.upload(&init).unwrap();
    let src = device.alloc_zeroed::<u8>(ranks * span).unwrap();
    let out = device.upload(&vec![u32::MAX; ranks * 4]).unwrap();
    let args = ViewArgs {
        send_ty: words.slice(),
        recv_ty: words.slice(),
        src: src.slice(),
        dst: dst.slice(),
        out: out.slice(),
        send_count: 1,
        recv_count: 1,
        send_origin: span as u32,
        recv_origin: 0,
        mode: 0,
        recv_bytes: 0,
        program: V_COLLECTIVES,
        reserved: 0,
    };
    device
        .launch(
            &SEMANTICS_VIEWS,
            &args,
            &WorldSpec::ranks(ranks as u32).collective_bytes(64),
        )
        .unwrap();
    let out = device.download(&out).unwrap();
    for r in 0..ranks {
        assert_eq!((out[r * 4], out[r * 4 + 1]), (0, 0), "rank {r}");
    }
    let dst = device.download(&dst).unwrap();
    let root = &init[..span];
    let packed = reference::pack(&ty, root, 0, 1).unwrap();
    let want = partial_unpack(&ty, &packed, 0, span);
    for r in 1..ranks {
        assert_eq!(&dst[r * span..(r + 1) * span], &want[..], "broadcast to rank {r}");
    }
    // The gather at rank 0: every rank's part, each the broadcast value, in
    // `ranks` instances of the type back to back.
    let all = reference::pack(&ty, &dst, 0, 1).unwrap().repeat(ranks);
    let gathered = device.download(&src).unwrap();
    let extent = ty.extent() as usize;
    let want = partial_unpack(&ty, &all, 0, ranks * span);
    assert_eq!(
        gathered[..extent * (ranks - 1) + span],
        want[..extent * (ranks - 1) + span]
    );
}
testgen!(broadcast_and_gather_take_views);

/// A random type tree (depth up to 4, negative displacements, resized
/// extents) sent between two ranks, received into the same type (and, when
/// its blocks overlap, into bytes), against the reference model; small
/// slots so that larger types stream.
fn random_types_travel_between_ranks(backend: Backend) {
    let strategy = (arb_type(4), 1usize..3, 0u32..4, any::<bool>());
    proptest!(ProptestConfig::with_cases(48), |((ty, count, mode, small_slots) in strategy)| {
        prop_assume!(ty.size() > 0 && reference::typemap(&ty).len() < 3000);
        let mut run = Run::same(&ty, count);
        run.mode = mode;
        run.recv_bytes = !no_overlap(&ty, count);
        if small_slots {
            run.spec = WorldSpec::ranks(2).slot_bytes(64);
        }
        let packed = ty.size() as usize * count;
        if run.recv_bytes {
            run.dst_len = run.dst_len.max(packed);
        }
        let o = run.go(backend);
        prop_assert_eq!(o.class(), 0);
        prop_assert_eq!(o.bytes() as usize, packed);
        prop_assert_eq!(o.dst, run.expected(packed));
    });
}
testgen!(random_types_travel_between_ranks);

fn all_gather_takes_views_and_an_all_to_all_mismatch_fails_on_every_rank(backend: Backend) {
    let ranks = 5usize;
    let device = backend.device();
    let dst = device.alloc_zeroed::<u8>(ranks * 2048).unwrap();
    let out = device.upload(&vec![u32::MAX; ranks * 4]).unwrap();
    let column = UserDatatype::vector(8, 1, 64, &Primitive::U32.into()).unwrap();
    let column = UserDatatype::resized(&column, 0, 4).unwrap();
    let words = device.upload(column.commit().unwrap().words()).unwrap();
    let byte = device.alloc_zeroed::<u8>(1).unwrap();
    let args = ViewArgs {
        send_ty: words.slice(),
        recv_ty: words.slice(),
        src: byte.slice(),
        dst: dst.slice(),
        out: out.slice(),
        send_count: 0,
        recv_count: 0,
        send_origin: 0,
        recv_origin: 0,
        mode: 0,
        recv_bytes: 0,
        program: V_MISMATCH,
        reserved: 0,
    };
    device
        .launch(
            &SEMANTICS_VIEWS,
            &args,
            &WorldSpec::ranks(ranks as u32).collective_bytes(64),
        )
        .unwrap();
    let out = device.download(&out).unwrap();
    for r in 0..ranks {
        assert_eq!(out[r * 4], 0, "rank {r}: all-gather of views");
        let c2 = out[r * 4 + 1];
        if r == 0 {
            assert_eq!(c2, ErrorClass::Count as u32, "rank 0 passed 8 elements");
        } else {
            assert_ne!(c2, 0, "rank {r}: the agreement fails everywhere");
        }
        assert_eq!(out[r * 4 + 2], 0, "rank {r}: barrier after");
    }
    let dst = device.download(&dst).unwrap();
    let words: &[u32] = bytemuck::cast_slice(&dst);
    for r in 0..ranks {
        for q in 0..ranks {
            for i in 0..8 {
                // Column q of rank r's result is column 1 of rank q's matrix.
                assert_eq!(
                    words[r * 512 + 64 * i + q],
                    (1000 * q + 8 * i + 1) as u32,
                    "rank {r}, column {q}, row {i}"
                );
            }
        }
    }
}
testgen!(all_gather_takes_views_and_an_all_to_all_mismatch_fails_on_every_rank);
