# Sourced by gpu-check.sh and device-run.sh: the steps both take on a GPU
# machine with the binaries `gpu-check.sh --build` made.

# unpack_bins DIR BIN NAME...: each NAME from DIR into the folder BIN,
# unpacked from NAME.gz (how --build packs them) or copied as it is.
# Prints each NAME that DIR lacks on stderr; its status is the count of
# them (0: all there).
unpack_bins() {
    local dir=$1 bin=$2 missing=0 b
    shift 2
    for b in "$@"; do
        if [[ -f $dir/$b.gz ]]; then
            gzip -dc "$dir/$b.gz" >"$bin/$b" && chmod +x "$bin/$b"
        elif [[ -x $dir/$b ]]; then
            cp "$dir/$b" "$bin/$b"
        fi
        if [[ ! -x $bin/$b ]]; then
            echo "$dir/$b(.gz) is missing (build with scripts/gpu-check.sh --build)" >&2
            missing=$((missing + 1))
        fi
    done
    return "$missing"
}

# PI_CAPS, PI_EXAMPLES: the pi examples' runs at the largest world (`--ranks
# max` on cuda), once with no register cap (0) and once capped at 128, the
# ceiling every MPI kernel is held to (GPU_MPI_MAX_REGISTERS).
PI_CAPS=(0 128)
PI_EXAMPLES=(pi_p2p pi_reduce)
