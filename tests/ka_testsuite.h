/* Shared fixture of the ported KernelAbstractions test suite (ka_testsuite*.c).
 * One device and one queue for the whole run; each test file builds its
 * programs once in its group setup and fetches kernels from them. */
#ifndef KA_TESTSUITE_H
#define KA_TESTSUITE_H
#include "test_util.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct ts_env {
    ka_device dev;
    ka_queue q;
    const ka_device_info *info;
} ts_env;
extern ts_env ts;

/* Builds a program for the suite's device; fails the current test (or group
 * setup) with the build log on error. */
ka_program ts_build(const char *src);
/* Kernel lookup that must succeed. */
ka_kernel ts_kernel(ka_program p, const char *name, const ka_kernel_config *cfg);
/* A device buffer of `bytes`, filled from init (NULL: zeros). Buffers made by
 * a test are released by ts_teardown, also when the test fails. */
ka_buffer ts_buffer(size_t bytes, const void *init);
/* A buffer filled with a repeated pattern of psize bytes. */
ka_buffer ts_buffer_fill(size_t bytes, const void *pattern, size_t psize);
void ts_read(ka_buffer b, void *dst, size_t bytes);
/* Launches and waits for completion; asserts KA_OK. */
void ts_run(ka_kernel k, const ka_range *r, const ka_arg *args, uint32_t nargs);
/* Host memory released by ts_teardown. */
void *ts_alloc(size_t bytes);
int ts_setup(void **state);
int ts_teardown(void **state);

static inline ka_range ts_range(uint32_t dims, uint64_t n0, uint64_t n1, uint64_t n2, uint32_t w0, uint32_t w1,
                                uint32_t w2) {
    ka_range r = {dims, {n0, n1, n2}, {w0, w1, w2}, 0};
    return r;
}
static inline uint64_t ts_cld(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

#define TS_TEST(f) cmocka_unit_test_setup_teardown(f, ts_setup, ts_teardown)
#define TS_NARGS(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* Skips the current test with a reason on stdout (cmocka prints SKIPPED). */
#define TS_SKIP(...)                                                                                  \
    do {                                                                                              \
        print_message("[   INFO   ] skipped: ");                                                      \
        print_message(__VA_ARGS__);                                                                   \
        print_message("\n");                                                                          \
        skip();                                                                                       \
    } while (0)

/* PoCL's major version (the device's driver version) when the device is a
 * PoCL one, else 0: for known device bugs, reported rather than hidden. */
int ts_pocl_major(void);

/* Checks a kernel's reported static local memory against what it declares.
 * PoCL 5 reports 0 for local arrays declared in the kernel (its driver's
 * CL_KERNEL_LOCAL_MEM_SIZE): said, not failed, there. */
void ts_check_local_mem(ka_kernel k, uint64_t declared, const char *what);

/* One group per file; each returns cmocka's count of failed tests. */
int ts_group_index(void);
int ts_group_memory(void);
int ts_group_atomics(void);
int ts_group_misc(void);
#endif
