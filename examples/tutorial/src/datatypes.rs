//! Chapter 7: datatypes (MPI 4.1 chapter 5): a host-built vector type,
//! packed and unpacked inside the kernel.

use crate::{check, say, text, Chapter};
use gpu_mpi::device::ErrorClass;
use gpu_mpi::{UserDatatype, WorldSpec};
use gpu_mpi_example_tutorial_kernels::{TutorialArgs, DATATYPES, MATRIX_SIDE};

const COLUMN: u32 = 2;

pub(crate) fn run(c: &mut Chapter) -> Result<(), String> {
    let device = c.device()?;
    let n = MATRIX_SIDE as i64;
    let f64s = UserDatatype::of::<f64>().ok_or("f64 is no primitive")?;
    let column = UserDatatype::vector(n, 1, n, &f64s).map_err(text)?;
    let committed = column.commit().map_err(text)?;
    say!(
        c,
        "column = vector(count {n}, blocklength 1, stride {n}, f64): size {} bytes, extent {} bytes, {} encoding words",
        column.size(),
        column.extent(),
        committed.words().len()
    );
    let words = device.upload(committed.words()).map_err(text)?;
    let out = device.alloc_zeroed::<u32>(18).map_err(text)?;
    let args = TutorialArgs {
        mode: 0,
        count: COLUMN,
        words: 0,
        reserved: 0,
        out: out.slice(),
        datatype: words.slice(),
    };
    device
        .launch(&DATATYPES, &args, &WorldSpec::ranks(2))
        .map_err(text)?;
    let got = device.download(&out).map_err(text)?;
    say!(
        c,
        "rank 0 packed column {COLUMN} of its matrix (10 i + j) into 32 bytes; rank 1 unpacked them:"
    );
    for i in 0..MATRIX_SIDE {
        let row = &got[i * MATRIX_SIDE..][..MATRIX_SIDE];
        let expected: Vec<u32> = (0..MATRIX_SIDE as u32)
            .map(|j| if j == COLUMN { 10 * i as u32 + j } else { 0 })
            .collect();
        check(row == expected, || {
            format!("row {i}: {row:?}, expected {expected:?}")
        })?;
        let row: Vec<String> = row.iter().map(|v| format!("{v:>2}")).collect();
        say!(c, "  [{}]", row.join(" "));
    }
    check(got[16] == 1, || {
        "the kernel's vector::<f64>(4, 1, 4) differs from the host's commit".into()
    })?;
    say!(
        c,
        "derived::vector::<f64>(4, 1, 4) built in the kernel: the same words as the host's commit"
    );
    let class = ErrorClass::from_code(got[17]);
    check(class == Some(ErrorClass::Arg), || {
        format!("short pack buffer gave class {}", got[17])
    })?;
    say!(c, "pack into 31 bytes: {}", ErrorClass::Arg.mpi_name());
    Ok(())
}
