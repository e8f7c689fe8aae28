//! Random derived datatypes, for the tests that check them against the
//! host's reference model (datatype.rs on the host, pack.rs, views.rs):
//! type trees of every constructor, and the helpers around them.

use gpu_mpi::datatype::{reference, Order, Primitive, UserDatatype};
use proptest::prelude::*;

/// `x` as a datatype.
pub fn p(x: Primitive) -> UserDatatype {
    x.into()
}

/// `n` bytes of a pattern that differs between neighbours.
pub fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

/// A count or block length: mostly 1..max, sometimes 0.
pub fn n(max: i64) -> BoxedStrategy<i64> {
    prop_oneof![1 => Just(0i64), 6 => 1..max].boxed()
}

/// A random type tree of nesting depth up to `depth`.
pub fn arb_type(depth: u32) -> BoxedStrategy<UserDatatype> {
    let leaf = prop::sample::select(Primitive::ALL.to_vec()).prop_map(UserDatatype::primitive);
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = arb_type(depth - 1);
    prop_oneof![
        2 => leaf,
        1 => (n(4), sub.clone()).prop_map(|(n, t)| UserDatatype::contiguous(n, &t).unwrap()),
        2 => (n(4), n(3), -4i64..5, sub.clone())
            .prop_map(|(n, b, s, t)| UserDatatype::vector(n, b, s, &t).unwrap()),
        1 => (n(4), n(3), -40i64..40, sub.clone())
            .prop_map(|(n, b, s, t)| UserDatatype::hvector(n, b, s, &t).unwrap()),
        1 => (prop::collection::vec((n(3), -5i64..8), 0..4), sub.clone()).prop_map(|(v, t)| {
            let (b, d): (Vec<i64>, Vec<i64>) = v.into_iter().unzip();
            UserDatatype::indexed(&b, &d, &t).unwrap()
        }),
        1 => (prop::collection::vec((n(3), -30i64..60), 0..4), sub.clone()).prop_map(|(v, t)| {
            let (b, d): (Vec<i64>, Vec<i64>) = v.into_iter().unzip();
            UserDatatype::hindexed(&b, &d, &t).unwrap()
        }),
        1 => (n(3), prop::collection::vec(-5i64..8, 0..4), sub.clone())
            .prop_map(|(b, d, t)| UserDatatype::indexed_block(b, &d, &t).unwrap()),
        1 => (n(3), prop::collection::vec(-30i64..60, 0..4), sub.clone())
            .prop_map(|(b, d, t)| UserDatatype::hindexed_block(b, &d, &t).unwrap()),
        1 => prop::collection::vec((n(3), -30i64..60, sub.clone()), 0..4).prop_map(|v| {
            let b: Vec<i64> = v.iter().map(|x| x.0).collect();
            let d: Vec<i64> = v.iter().map(|x| x.1).collect();
            let t: Vec<UserDatatype> = v.into_iter().map(|x| x.2).collect();
            UserDatatype::structured(&b, &d, &t).unwrap()
        }),
        1 => (prop::collection::vec((1i64..5, n(4), 0i64..4), 1..4), any::<bool>(), sub.clone()).prop_map(|(dims, c, t)| {
            let sizes: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<i64> = dims.iter().map(|d| d.1.min(d.0)).collect();
            let starts: Vec<i64> = dims.iter().map(|d| d.2.min(d.0 - d.1.min(d.0))).collect();
            let order = if c { Order::C } else { Order::Fortran };
            UserDatatype::subarray(&sizes, &subs, &starts, order, &t).unwrap()
        }),
        1 => (-16i64..16, 0i64..40, sub.clone()).prop_map(|(lb, e, t)| UserDatatype::resized(&t, lb, e).unwrap()),
        1 => sub.prop_map(|t| t.dup().unwrap()),
    ]
    .boxed()
}

/// Whether `count` instances of `ty` write no byte twice (MPI's condition
/// on a receive type; the cooperative unpack needs it).
pub fn no_overlap(ty: &UserDatatype, count: usize) -> bool {
    let map = reference::typemap(ty);
    let mut seen = std::collections::HashSet::new();
    (0..count as i64).all(|i| {
        map.iter()
            .all(|&(d, p)| (0..p.size() as i64).all(|b| seen.insert(i * ty.extent() + d + b)))
    })
}
