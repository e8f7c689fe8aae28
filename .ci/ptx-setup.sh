#!/usr/bin/env bash
# Installs what the PTX build and checks need, on a fresh machine or again
# (idempotent; nothing is reinstalled that is already there):
#  - the nightly Rust toolchain (GPU_MPI_PTX_TOOLCHAIN, default `nightly`)
#    with the rust-src component (for -Zbuild-std=core) and llvm-tools
#    (llvm-link, opt, llc: our nvptx64 link step);
#  - ptxas, from NVIDIA's PyPI wheel nvidia-cuda-nvcc-cu12 (CUDA 12.9; no GPU
#    and no CUDA install needed), linked as
#    ${XDG_CACHE_HOME:-$HOME/.cache}/gpu-mpi/bin/ptxas, where the builder looks.
# Prints the ptxas path; with GITHUB_ENV set, also exports PTXAS there.
set -euo pipefail

toolchain="${GPU_MPI_PTX_TOOLCHAIN:-nightly}"
wheel_spec="${GPU_MPI_PTXAS_WHEEL:-nvidia-cuda-nvcc-cu12==12.9.*}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpu-mpi"
mkdir -p "$cache/bin"

# --- Rust -------------------------------------------------------------------
if ! command -v rustup >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/rustup" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "ptx-setup: installing rustup"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain stable
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
if ! RUSTUP_AUTO_INSTALL=0 rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
    echo "ptx-setup: installing the $toolchain toolchain"
    rustup toolchain install "$toolchain" --profile minimal --component rust-src,llvm-tools --allow-downgrade
fi
# A no-op when already installed.
rustup component add --toolchain "$toolchain" rust-src llvm-tools
sysroot="$(rustup run "$toolchain" rustc --print sysroot)"
host="$(rustup run "$toolchain" rustc -vV | sed -n 's/^host: //p')"
for tool in llvm-link opt llc; do
    test -x "$sysroot/lib/rustlib/$host/bin/$tool" || { echo "ptx-setup: $tool missing from llvm-tools" >&2; exit 1; }
done
test -f "$sysroot/lib/rustlib/src/rust/library/core/Cargo.toml" || { echo "ptx-setup: rust-src missing" >&2; exit 1; }
echo "ptx-setup: $(rustup run "$toolchain" rustc --version) with rust-src and llvm-tools"

# --- ptxas ------------------------------------------------------------------
python="$(command -v python3 || command -v python || true)"
wheel_ptxas() {
    # The wheel's packages are namespace packages: __path__, not __file__.
    "$1" -c 'import nvidia.cuda_nvcc as m, os; p = os.path.join(list(m.__path__)[0], "bin", "ptxas"); print(p if os.path.isfile(p) else "")' 2>/dev/null || true
}
ptxas=""
if [ -n "$python" ]; then
    ptxas="$(wheel_ptxas "$python")"
fi
if [ -z "$ptxas" ] && [ -x "$cache/venv/bin/python" ]; then
    ptxas="$(wheel_ptxas "$cache/venv/bin/python")"
fi
if [ -z "$ptxas" ]; then
    [ -n "$python" ] || { echo "ptx-setup: python3 is needed to install ptxas from PyPI" >&2; exit 1; }
    echo "ptx-setup: installing $wheel_spec"
    # User site first; where pip refuses (externally managed Python), a venv.
    if "$python" -m pip install --disable-pip-version-check --quiet --user "$wheel_spec" 2>/dev/null \
        || "$python" -m pip install --disable-pip-version-check --quiet "$wheel_spec" 2>/dev/null; then
        ptxas="$(wheel_ptxas "$python")"
    fi
    if [ -z "$ptxas" ]; then
        "$python" -m venv "$cache/venv"
        "$cache/venv/bin/python" -m pip install --disable-pip-version-check --quiet "$wheel_spec"
        ptxas="$(wheel_ptxas "$cache/venv/bin/python")"
    fi
fi
[ -n "$ptxas" ] && [ -x "$ptxas" ] || { echo "ptx-setup: could not install ptxas" >&2; exit 1; }
ln -sf "$ptxas" "$cache/bin/ptxas"
"$cache/bin/ptxas" --version | tail -n 2
echo "ptx-setup: ptxas at $cache/bin/ptxas -> $ptxas"
if [ -n "${GITHUB_ENV:-}" ]; then
    echo "PTXAS=$cache/bin/ptxas" >> "$GITHUB_ENV"
fi
