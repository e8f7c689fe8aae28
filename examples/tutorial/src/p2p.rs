//! Chapter 2: point-to-point and non-overtaking (MPI 4.1 sections 3.2-3.5).

use crate::{args, check, say, text, Chapter};
use gpu_mpi::device::ErrorClass;
use gpu_mpi::WorldSpec;
use gpu_mpi_example_tutorial_kernels::{ORDERED, ORDER_WORDS};

const RANKS: u32 = 64;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let half = RANKS / 2;
    let out = device
        .alloc_zeroed::<u32>(half as usize * ORDER_WORDS)
        .map_err(text)?;
    let none = device.alloc_zeroed::<u64>(0).map_err(text)?;
    let spec = WorldSpec::ranks(RANKS).block_dim(32);
    device
        .launch(&ORDERED, &args(0, 0, &out, &none), &spec)
        .map_err(text)?;
    let words = device.download(&out).map_err(text)?;
    for s in 0..half {
        let w = &words[s as usize * ORDER_WORDS..][..ORDER_WORDS];
        let v = 1000 * s;
        let expected = [v + 1, v, v + 2, v + 3, 2, 1, 1, 2, ErrorClass::Truncate as u32, 7];
        check(w == expected, || {
            format!("rank {} recorded {w:?}, expected {expected:?}", s + half)
        })?;
        if s == 0 {
            say!(
                c,
                "rank 0 sent rank {half}: 0 (tag 1), 1 (tag 2), 2 (tag 1), 3 (tag 2), then [7, 8, 9] (tag 3)"
            );
            let asked = ["tag 2  ", "any tag", "any tag", "tag 2  "];
            for (i, a) in asked.iter().enumerate() {
                say!(c, "receive({a}) got {} with tag {}", w[i], w[4 + i]);
            }
            let class = ErrorClass::from_code(w[8]).map_or("?", |k| k.mpi_name());
            say!(
                c,
                "receive of [7, 8, 9] into 2 words: {class}, buffer starts with {}",
                w[9]
            );
        }
    }
    say!(
        c,
        "all {half} pairs (rank r sends rank r + {half}, in another block): the same"
    );
    Ok(())
}
