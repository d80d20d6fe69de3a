/* CUB's device-wide primitives for `ka-bench primitives`: a shared object
 * (libka_cub_bench.so, built with nvcc where the CUDA toolkit is found) that
 * ka-bench loads with dlopen, so that CUB and libka run in one process on the
 * same device, interleaved call by call.
 *
 * Interface (plain C, ka-bench declares the same prototypes):
 *   kacub_setup(ordinal, what, n, aux, in0, in1): device buffers for the row
 *     `what`, filled from the host arrays in0/in1 (see below), and CUB's
 *     temporary storage, once; nothing of it is timed.
 *   kacub_run(what): one CUB call on the row's stream and a stream
 *     synchronize (the caller times it, as it times a libka call + its wait).
 *   kacub_result(what, out0, out1): the row's results copied to the host.
 *   kacub_release(): frees every row's buffers; kacub_error(): the last
 *     failure's text.
 * Each returns 0 on success, -1 for a row it does not know, else the CUDA
 * error code.
 *
 * Rows (in0, in1 -> out0, out1; n elements; int item counts, n < 2^31):
 *   copy                 u32 -> u32 (cudaMemcpyAsync device to device)
 *   reduce_u32, _f32     T -> 1 T (DeviceReduce::Sum)
 *   reduce_sumsq_f32     f32 -> 1 f32 (DeviceReduce::TransformReduce, x * x, +)
 *   scan_u32             u32 -> u32 (DeviceScan::InclusiveSum)
 *   sort_u32, sort_u64   keys -> sorted keys (DeviceRadixSort::SortKeys)
 *   sort_pairs_u32       keys, u32 values -> keys, values (SortPairs)
 *   argsort_u32          keys, u32 iota -> keys, permutation (SortPairs)
 *   select_flagged_u32   u32, u8 flags -> u32 kept, u64 count (DeviceSelect::Flagged)
 *   select_if_u32        u32 -> u32 kept, u64 count (DeviceSelect::If, x < 512)
 *   histogram_u32        u32 -> 256 u32 counts of [0, 1024) (DeviceHistogram::HistogramEven)
 *   histogram_f32        f32 -> 256 u32 counts of [0, 1)
 *   segreduce_u32        u32 (n), u64 offsets (aux + 1) -> aux u32 sums (DeviceSegmentedReduce::Sum)
 *   searchsorted_u32     aux ascending u32, n u32 needles -> n u64 lower bounds (thrust::lower_bound:
 *                        CUB has no device-wide search)
 */
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

struct Row {
    const char *what;
    uint64_t n = 0, aux = 0;
    void *in0 = nullptr, *in1 = nullptr, *out0 = nullptr, *out1 = nullptr, *temp = nullptr;
    size_t temp_bytes = 0;
    bool ready = false;
};

const char *const kWhat[] = {"copy", "reduce_u32", "reduce_f32", "reduce_sumsq_f32", "scan_u32", "sort_u32",
                             "sort_u64", "sort_pairs_u32", "argsort_u32", "select_flagged_u32", "select_if_u32",
                             "histogram_u32", "histogram_f32", "segreduce_u32", "searchsorted_u32"};
constexpr int kRows = sizeof kWhat / sizeof kWhat[0];
Row g_rows[kRows];
cudaStream_t g_stream = nullptr;
char g_err[512];

struct Square {
    __host__ __device__ float operator()(float x) const { return x * x; }
};
struct Below512 {
    __host__ __device__ bool operator()(uint32_t x) const { return x < 512u; }
};

int fail(cudaError_t e, const char *what, const char *call) {
    snprintf(g_err, sizeof g_err, "%s: %s: %s", what, call, cudaGetErrorString(e));
    return (int)e;
}
#define TRY(call)                                                                                                      \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return fail(e_, r.what, #call);                                                         \
    } while (0)

int row_of(const char *what) {
    for (int i = 0; i < kRows; i++)
        if (!strcmp(kWhat[i], what)) return i;
    snprintf(g_err, sizeof g_err, "no CUB row '%s'", what);
    return -1;
}

/* One call of the row: with temp NULL it only sizes CUB's temporary storage. */
cudaError_t call(Row &r, void *temp, size_t &bytes) {
    const int n = (int)r.n;
    const char *w = r.what;
    cudaStream_t s = g_stream;
    if (!strcmp(w, "copy")) {
        if (!temp) return bytes = 0, cudaSuccess;
        return cudaMemcpyAsync(r.out0, r.in0, r.n * 4, cudaMemcpyDeviceToDevice, s);
    }
    if (!strcmp(w, "reduce_u32"))
        return cub::DeviceReduce::Sum(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0, n, s);
    if (!strcmp(w, "reduce_f32"))
        return cub::DeviceReduce::Sum(temp, bytes, (const float *)r.in0, (float *)r.out0, n, s);
    if (!strcmp(w, "reduce_sumsq_f32"))
        return cub::DeviceReduce::TransformReduce(temp, bytes, (const float *)r.in0, (float *)r.out0, n,
                                                  cuda::std::plus<>{}, Square{}, 0.0f, s);
    if (!strcmp(w, "scan_u32"))
        return cub::DeviceScan::InclusiveSum(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0, n, s);
    if (!strcmp(w, "sort_u32"))
        return cub::DeviceRadixSort::SortKeys(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0, n, 0, 32, s);
    if (!strcmp(w, "sort_u64"))
        return cub::DeviceRadixSort::SortKeys(temp, bytes, (const uint64_t *)r.in0, (uint64_t *)r.out0, n, 0, 64, s);
    if (!strcmp(w, "sort_pairs_u32") || !strcmp(w, "argsort_u32"))
        return cub::DeviceRadixSort::SortPairs(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0,
                                               (const uint32_t *)r.in1, (uint32_t *)r.out1, n, 0, 32, s);
    if (!strcmp(w, "select_flagged_u32"))
        return cub::DeviceSelect::Flagged(temp, bytes, (const uint32_t *)r.in0, (const uint8_t *)r.in1,
                                          (uint32_t *)r.out0, (unsigned long long *)r.out1, n, s);
    if (!strcmp(w, "select_if_u32"))
        return cub::DeviceSelect::If(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0,
                                     (unsigned long long *)r.out1, n, Below512{}, s);
    if (!strcmp(w, "histogram_u32"))
        return cub::DeviceHistogram::HistogramEven(temp, bytes, (const uint32_t *)r.in0, (unsigned int *)r.out0, 257,
                                                   0u, 1024u, n, s);
    if (!strcmp(w, "histogram_f32"))
        return cub::DeviceHistogram::HistogramEven(temp, bytes, (const float *)r.in0, (unsigned int *)r.out0, 257,
                                                   0.0f, 1.0f, n, s);
    if (!strcmp(w, "segreduce_u32")) {
        const uint64_t *off = (const uint64_t *)r.in1;
        return cub::DeviceSegmentedReduce::Sum(temp, bytes, (const uint32_t *)r.in0, (uint32_t *)r.out0, (int)r.aux,
                                               off, off + 1, s);
    }
    if (!strcmp(w, "searchsorted_u32")) {
        if (!temp) return bytes = 0, cudaSuccess;
        const uint32_t *sorted = (const uint32_t *)r.in0, *needles = (const uint32_t *)r.in1;
        try { /* thrust reports failures by exceptions: they must not reach the C caller */
            thrust::lower_bound(thrust::cuda::par_nosync.on(s), sorted, sorted + r.aux, needles, needles + r.n,
                                (uint64_t *)r.out0);
        } catch (const std::exception &) {
            cudaError_t e = cudaGetLastError();
            return e != cudaSuccess ? e : cudaErrorUnknown;
        }
        return cudaGetLastError();
    }
    return cudaErrorInvalidValue;
}

/* Bytes of the row's inputs and outputs. */
void sizes(const Row &r, size_t &in0, size_t &in1, size_t &out0, size_t &out1) {
    const char *w = r.what;
    size_t n = r.n;
    in0 = in1 = out0 = out1 = 0;
    size_t es = !strcmp(w, "sort_u64") ? 8 : 4;
    in0 = n * es;
    if (!strcmp(w, "searchsorted_u32")) {
        in0 = r.aux * 4, in1 = n * 4, out0 = n * 8;
        return;
    }
    if (!strncmp(w, "reduce", 6)) out0 = 4;
    else if (!strncmp(w, "histogram", 9)) out0 = 256 * 4;
    else if (!strcmp(w, "segreduce_u32")) out0 = r.aux * 4, in1 = (r.aux + 1) * 8;
    else out0 = n * es;
    if (!strcmp(w, "sort_pairs_u32") || !strcmp(w, "argsort_u32")) in1 = n * 4, out1 = n * 4;
    if (!strcmp(w, "select_flagged_u32")) in1 = n;
    if (!strncmp(w, "select", 6)) out1 = 8;
}

void free_row(Row &r) {
    void **p[] = {&r.in0, &r.in1, &r.out0, &r.out1, &r.temp};
    for (void **x : p) {
        if (*x) cudaFree(*x);
        *x = nullptr;
    }
    r.ready = false;
}

} // namespace

extern "C" {

const char *kacub_error(void) { return g_err; }

int kacub_version(void) { return CUB_VERSION; }

int kacub_setup(int ordinal, const char *what, uint64_t n, uint64_t aux, const void *in0, const void *in1) {
    int i = row_of(what);
    if (i < 0) return -1;
    Row &r = g_rows[i];
    r.what = kWhat[i];
    if (n == 0 || n > INT_MAX || aux > INT_MAX) {
        snprintf(g_err, sizeof g_err, "%s: n = %llu: CUB's calls here take int counts (1 to 2^31 - 1)", what,
                 (unsigned long long)n);
        return (int)cudaErrorInvalidValue;
    }
    free_row(r);
    TRY(cudaSetDevice(ordinal));
    if (!g_stream) TRY(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    r.n = n, r.aux = aux;
    size_t b0, b1, o0, o1;
    sizes(r, b0, b1, o0, o1);
    if (b0) TRY(cudaMalloc(&r.in0, b0));
    if (b1) TRY(cudaMalloc(&r.in1, b1));
    if (o0) TRY(cudaMalloc(&r.out0, o0));
    if (o1) TRY(cudaMalloc(&r.out1, o1));
    if (b0) TRY(cudaMemcpy(r.in0, in0, b0, cudaMemcpyHostToDevice));
    if (b1) TRY(cudaMemcpy(r.in1, in1, b1, cudaMemcpyHostToDevice));
    r.temp_bytes = 0;
    TRY(call(r, nullptr, r.temp_bytes));
    TRY(cudaMalloc(&r.temp, r.temp_bytes ? r.temp_bytes : 8));
    TRY(cudaDeviceSynchronize());
    r.ready = true;
    return 0;
}

int kacub_run(const char *what) {
    int i = row_of(what);
    if (i < 0) return -1;
    Row &r = g_rows[i];
    if (!r.ready) {
        snprintf(g_err, sizeof g_err, "%s: not set up", what);
        return (int)cudaErrorNotReady;
    }
    TRY(call(r, r.temp, r.temp_bytes));
    TRY(cudaStreamSynchronize(g_stream));
    return 0;
}

int kacub_result(const char *what, void *out0, void *out1) {
    int i = row_of(what);
    if (i < 0) return -1;
    Row &r = g_rows[i];
    size_t b0, b1, o0, o1;
    sizes(r, b0, b1, o0, o1);
    if (o0 && out0) TRY(cudaMemcpy(out0, r.out0, o0, cudaMemcpyDeviceToHost));
    if (o1 && out1) TRY(cudaMemcpy(out1, r.out1, o1, cudaMemcpyDeviceToHost));
    return 0;
}

void kacub_release(void) {
    for (Row &r : g_rows) free_row(r);
    if (g_stream) cudaStreamDestroy(g_stream);
    g_stream = nullptr;
}

} // extern "C"
