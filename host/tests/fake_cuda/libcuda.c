/*
 * A stand-in for the CUDA driver library (libcuda.so), for host/tests/cuda.rs
 * on machines without a GPU. It implements only the calls the cuda backend
 * makes, on host memory ("device" addresses are host pointers), and
 * describes an H100-like device. It runs no kernel: a launch checks its
 * parameters and, like a kernel whose ranks all returned, marks every rank's
 * wait record exited (at the offset the test gives in
 * FAKE_CUDA_RECORDS=<offset>,<ranks>). FAKE_CUDA_HANG=1 or 2: kernels never
 * finish (the host's abort and watchdog paths). FAKE_CUDA_CC=86: the compute
 * capability (default 90). FAKE_CUDA_IMAGE_LOG=<file>: every module load
 * appends a line naming its image (see cuModuleLoadDataEx).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    INVALID_VALUE = 1,
    INVALID_IMAGE = 200,
    NOT_FOUND = 500,
    NOT_READY = 600,
};

/* 0: kernels finish; 1: they never finish and the abort word is set (a
 * wait timed out); 2: they never finish and nothing is aborted. */
static int hang(void) {
    const char *h = getenv("FAKE_CUDA_HANG");
    return h ? atoi(h) : 0;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
    *s = e == NOT_READY ? "device not ready" : "fake driver error";
    return OK;
}
CUresult cuInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { *v = 12080; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? OK : INVALID_VALUE; }
CUresult cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    strncpy(name, "Fake H100", (size_t)len);
    return OK;
}

static int compute_capability(void) {
    const char *cc = getenv("FAKE_CUDA_CC");
    return cc ? atoi(cc) : 90;
}

CUresult cuDeviceGetAttribute(int *v, int attribute, int dev) {
    (void)dev;
    switch (attribute) {
    case 1: *v = 1024; break;          /* MAX_THREADS_PER_BLOCK */
    case 8: *v = 48 * 1024; break;     /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 10: *v = 32; break;           /* WARP_SIZE */
    case 12: *v = 65536; break;        /* MAX_REGISTERS_PER_BLOCK */
    case 13: *v = 1980000; break;      /* CLOCK_RATE (kHz) */
    case 16: *v = 132; break;          /* MULTIPROCESSOR_COUNT */
    case 17: *v = 0; break;            /* KERNEL_EXEC_TIMEOUT */
    case 36: *v = 2619000; break;      /* MEMORY_CLOCK_RATE (kHz) */
    case 39: *v = 2048; break;         /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 75: *v = compute_capability() / 10; break; /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = compute_capability() % 10; break; /* COMPUTE_CAPABILITY_MINOR */
    case 81: *v = 228 * 1024; break;   /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    case 82: *v = 65536; break;        /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 95: *v = 1; break;            /* COOPERATIVE_LAUNCH */
    case 97: *v = 227 * 1024; break;   /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 106: *v = 32; break;          /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    case 111: *v = 1024; break;        /* RESERVED_SHARED_MEMORY_PER_BLOCK */
    default: return INVALID_VALUE;
    }
    return OK;
}

static int context;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = &context; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &context ? OK : INVALID_VALUE; }

/* Appends one line to $FAKE_CUDA_IMAGE_LOG, if set. */
static void log_image(const char *kind, const char *what, size_t n) {
    const char *path = getenv("FAKE_CUDA_IMAGE_LOG");
    FILE *f = path ? fopen(path, "a") : 0;
    if (!f) return;
    fprintf(f, "%s %.*s\n", kind, (int)n, what);
    fclose(f);
}

/* The module: NUL-terminated PTX starting with a comment, or a "cubin": the
 * ELF magic, then (in the tests' stand-ins) a NUL-terminated name, at an
 * 8-byte-aligned address. The options must be the error log buffer and its
 * size, then optionally the register cap. The log gets "ptx sm_XX" (the
 * .target) or "sass <name>". */
static int module;
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *options, void **values) {
    const char *text = (const char *)image;
    if (n < 2 || options[0] != 5 || options[1] != 6 || values[0] == 0)
        return INVALID_VALUE;
    if (memcmp(text, "\x7f" "ELF", 4) == 0) {
        if ((uintptr_t)image % 8 != 0) return INVALID_IMAGE;
        log_image("sass", text + 4, strlen(text + 4));
    } else if (strncmp(text, "//", 2) == 0) {
        const char *target = strstr(text, ".target ");
        if (target) {
            target += strlen(".target ");
            log_image("ptx", target, strcspn(target, ",\n"));
        }
    } else {
        return INVALID_IMAGE;
    }
    *m = &module;
    return OK;
}
CUresult cuModuleUnload(void *m) { return m == &module ? OK : INVALID_VALUE; }

/* The constant-bank copy of the world's header that ptx-builder links into
 * every module: the launch checks the host filled it. FAKE_CUDA_NO_DESCRIPTORS=1:
 * the module has none (a module built by another builder). */
static unsigned char descriptors[512];
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, void *m, const char *name) {
    if (m != &module) return INVALID_VALUE;
    if (strcmp(name, "gpu_mpi_descriptors") != 0 || getenv("FAKE_CUDA_NO_DESCRIPTORS")) return NOT_FOUND;
    *p = (CUdeviceptr)(uintptr_t)descriptors;
    *bytes = sizeof descriptors;
    return OK;
}

/* Two kernels: "heavy" with 214 registers, "light" with 32. */
static int heavy, light;
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    if (m != &module) return INVALID_VALUE;
    if (strcmp(name, "heavy") == 0) *f = &heavy;
    else if (strcmp(name, "light") == 0) *f = &light;
    else if (getenv("FAKE_CUDA_ANY_KERNEL")) *f = &heavy; /* for trying binaries out */
    else return NOT_FOUND;
    return OK;
}
CUresult cuFuncGetAttribute(int *v, int attribute, void *f) {
    int is_heavy = f == &heavy;
    switch (attribute) {
    case 0: *v = is_heavy ? 256 : 1024; break; /* MAX_THREADS_PER_BLOCK */
    case 1: *v = 0; break;                     /* SHARED_SIZE_BYTES */
    case 3: *v = 304; break;                   /* LOCAL_SIZE_BYTES */
    case 4: *v = is_heavy ? 214 : 32; break;   /* NUM_REGS */
    default: return INVALID_VALUE;
    }
    return OK;
}
static int max_dynamic_shared = 48 * 1024;
CUresult cuFuncSetAttribute(void *f, int attribute, int value) {
    (void)f;
    /* MAX_DYNAMIC_SHARED_SIZE_BYTES, up to the opt-in limit */
    if (attribute != 8 || value < 0 || value > 227 * 1024) return INVALID_VALUE;
    max_dynamic_shared = value;
    return OK;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block, size_t smem) {
    if (smem > (size_t)max_dynamic_shared || block <= 0) return INVALID_VALUE;
    int warps = (block + 31) / 32;
    if (f == &heavy) *n = 8 / warps; /* 2 warps of 6912 registers per sub-partition */
    else *n = 64 / warps < 32 ? 64 / warps : 32;
    if (smem > 0 && *n > (int)(228 * 1024 / (smem + 1024))) *n = (int)(228 * 1024 / (smem + 1024));
    return OK;
}

static int streams, events;
CUresult cuStreamCreate(void **s, unsigned flags) { *s = &streams; return flags == 1 ? OK : INVALID_VALUE; }
CUresult cuStreamDestroy_v2(void *s) { (void)s; return OK; }
CUresult cuStreamSynchronize(void *s) { (void)s; return OK; }
CUresult cuStreamQuery(void *s) { (void)s; return OK; }
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = &events; return OK; }
CUresult cuEventDestroy_v2(void *e) { (void)e; return OK; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return OK; }
CUresult cuEventQuery(void *e) { (void)e; return hang() ? NOT_READY : OK; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1.5f; return OK; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) return 2; /* OUT_OF_MEMORY */
    *p = (CUdeviceptr)(uintptr_t)m;
    return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return OK; }
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n); return *p ? OK : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return OK; }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char c, size_t n, void *s) {
    (void)s;
    memset((void *)(uintptr_t)p, c, n);
    return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    (void)s;
    memcpy((void *)(uintptr_t)dst, src, n);
    return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    (void)s;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    if (hang() == 1 && n == 4) *(uint32_t *)dst = 1; /* the abort word: set */
    return OK;
}

/* Checks the world (magic, ranks = grid x block), its header's copy in the
 * module's descriptors, the dynamic shared memory (at most what
 * cuFuncSetAttribute allowed) and the arguments, then marks every rank
 * exited. */
CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned smem, void *s, void **params) {
    (void)s;
    if ((f != &heavy && f != &light) || gy != 1 || gz != 1 || by != 1 || bz != 1 || (int)smem > max_dynamic_shared
        || !params)
        return INVALID_VALUE;
    unsigned char *world = (unsigned char *)(uintptr_t)*(uint64_t *)params[0];
    const uint32_t *args = (const uint32_t *)(uintptr_t)*(uint64_t *)params[1];
    uint32_t magic, ranks, block_dim;
    memcpy(&magic, world, 4);
    memcpy(&ranks, world + 16, 4);
    memcpy(&block_dim, world + 20, 4);
    if (magic != 0x494d5047u || ranks != gx * bx || block_dim != bx || args[0] != 0xC0FFEEu
        || memcmp(descriptors, world, sizeof descriptors) != 0)
        return INVALID_VALUE;
    const char *r = getenv("FAKE_CUDA_RECORDS");
    if (r && !hang()) {
        char *end;
        unsigned long offset = strtoul(r, &end, 10);
        unsigned long n = *end == ',' ? strtoul(end + 1, 0, 10) : 0;
        if (n != ranks) return INVALID_VALUE;
        for (unsigned long i = 0; i < n; i++) {
            uint32_t exited = 2;
            memcpy(world + offset + 16 * i, &exited, 4);
        }
    }
    return OK;
}
