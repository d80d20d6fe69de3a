/* ka_sort, ka_sort_pairs and ka_argsort on the default device, checked
 * element by element against a host sort (qsort, stable by index): every key
 * type with keys only, 4- and 8-byte values and u32 and u64 indices, sizes
 * around the GPU layout's tiles, few distinct keys (stability) and random wide
 * keys (every digit); the GPU layout (onesweep) on this device; many groups;
 * bad input; no allocation in calls. */
#include "prims_util.h"

/* The GPU layout's tiles: 256 work-items of 15 keys (4-byte exchange) or 12. */
static size_t gpu_tile(ka_dtype t, int mode) {
    return esize(t) == 8 || mode == SORT_V8 || mode == SORT_ARG64 ? 256 * 12 : 256 * 15;
}

/* Two plans a type serve every mode: values and u32 indices, 8-byte values
 * and u64 indices (keys only on both). */
static void plans(ka_dtype t, size_t max_n, ka_prims_plan **a, ka_prims_plan **b) {
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, t, max_n, KA_PRIM_SORT_VALUES | KA_PRIM_ARGSORT, a));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, t, max_n, KA_PRIM_SORT_VALUES8 | KA_PRIM_ARGSORT64, b));
}

/* Every type x mode over the sizes; big: 1e5 too, with wide keys. */
static void all_modes(int big) {
    static const int modes[] = {SORT_KEYS, SORT_V4, SORT_ARG32, SORT_KEYS, SORT_V8, SORT_ARG64};
    for (ka_dtype t = KA_DTYPE_I32; t <= KA_DTYPE_F64; t++) {
        if (!type_ok(t)) continue;
        ka_prims_plan *pl[2];
        plans(t, 100000, &pl[0], &pl[1]);
        for (int mi = 0; mi < 6; mi++) {
            ka_prims_plan *p = pl[mi / 3];
            size_t tile = gpu_tile(t, modes[mi]);
            size_t ss[] = {0, 1, 2, 3, tile - 1, tile, tile + 1, 3 * tile + 7};
            for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++)
                check_sort_ex(p, t, ss[i], modes[mi], (uint32_t)(i + 10 * t + 100 * mi), (int)(i % 3 == 2), i % 4 == 1 ? 3 : 0);
            if (big) {
                check_sort_ex(p, t, 100000, modes[mi], (uint32_t)(7 + mi), 0, 0);
                check_sort_ex(p, t, 100000 - 5, modes[mi], (uint32_t)(9 + mi), 1, 5);
            }
        }
        ka_prims_plan_release(pl[0]), ka_prims_plan_release(pl[1]);
    }
}

static void sort_all_types(void **state) {
    (void)state;
    all_modes(1);
}

/* The GPU layout (onesweep, the portable ranking) on this device. */
static void sort_gpu_layout(void **state) {
    (void)state;
    setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    all_modes(1);
    unsetenv("KA_PRIMS_LAYOUT");
}

/* The GPU layout with CUDA's warp ranking, its warps emulated in local
 * memory (the same code as on CUDA but for the ballot and the warp barrier). */
static void sort_gpu_ballot_emulated(void **state) {
    (void)state;
    setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    setenv("KA_PRIMS_SORT_BALLOT", "emu", 1);
    ka_prims_plan *p;
    ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_F32, 100000, KA_PRIM_SORT_VALUES | KA_PRIM_ARGSORT, &p);
    unsetenv("KA_PRIMS_LAYOUT");
    unsetenv("KA_PRIMS_SORT_BALLOT");
    KA_OK_OR_FAIL(st);
    size_t ss[] = {1, 2, 3, 3839, 3840, 3841, 3 * 3840 + 7, 100000};
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
        check_sort_ex(p, KA_DTYPE_F32, ss[i], i & 1 ? SORT_V4 : SORT_ARG32, (uint32_t)i, (int)(i % 3 == 0), 0);
        check_sort_ex(p, KA_DTYPE_F32, ss[i], SORT_KEYS, (uint32_t)i + 50, 1, 1);
    }
    ka_prims_plan_release(p);
    /* The 8-byte layout (64-bit keys, 8-byte values: 12 keys a work-item, 3072 a tile). */
    setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    setenv("KA_PRIMS_SORT_BALLOT", "emu", 1);
    st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I64, 20000, KA_PRIM_SORT_VALUES8 | KA_PRIM_ARGSORT64, &p);
    unsetenv("KA_PRIMS_LAYOUT");
    unsetenv("KA_PRIMS_SORT_BALLOT");
    KA_OK_OR_FAIL(st);
    static const size_t s8[] = {3071, 3072, 3073, 20000};
    for (size_t i = 0; i < sizeof s8 / sizeof s8[0]; i++) {
        check_sort_ex(p, KA_DTYPE_I64, s8[i], i & 1 ? SORT_V8 : SORT_ARG64, (uint32_t)i + 7, (int)(i % 2 == 0), 1);
        check_sort_ex(p, KA_DTYPE_I64, s8[i], SORT_KEYS, (uint32_t)i + 70, 0, 0);
    }
    ka_prims_plan_release(p);
}

/* The GPU layout's look-back stamps wrap (KA_PRIMS_SORT_STAMP starts them
 * 6 short of their end): the status words are cleared, and calls after it
 * sort right, over words an earlier, larger call left. */
static void sort_gpu_stamps(void **state) {
    (void)state;
    setenv("KA_PRIMS_LAYOUT", "gpu", 1);
    setenv("KA_PRIMS_SORT_STAMP", "4194297", 1);
    ka_prims_plan *p;
    ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 30000, KA_PRIM_SORT_VALUES, &p);
    unsetenv("KA_PRIMS_LAYOUT");
    unsetenv("KA_PRIMS_SORT_STAMP");
    KA_OK_OR_FAIL(st);
    static const size_t ss[] = {30000, 9001, 30000, 17, 29999};
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) check_sort_ex(p, KA_DTYPE_U32, ss[i], SORT_V4, (uint32_t)i, 1, 0);
    ka_prims_plan_release(p);
}

/* The onesweep look-back under an adversarial schedule (KA_PRIMS_ADVERSARY=1:
 * groups wait pseudo-random whiles after taking a tile, after publishing its
 * counts and before publishing a digit's prefix; one key a work-item, so a
 * pass has hundreds of tiles; the stamps wrap every few calls), the portable
 * and the emulated warp ranking, 4- and 8-byte keys, keys only, values and
 * argsort, calls in a row over the same status words. Must not hang. */
static void sort_adversary(void **state) {
    (void)state;
    static const size_t ss[] = {1, 255, 256, 257, 5003, 200000, 777, 65536};
    for (int emu = 0; emu < 2; emu++)
        for (int w8 = 0; w8 < 2; w8++) {
            ka_dtype t = w8 ? KA_DTYPE_I64 : KA_DTYPE_U32;
            setenv("KA_PRIMS_ADVERSARY", "1", 1);
            setenv("KA_PRIMS_LAYOUT", "gpu", 1);
            if (emu) setenv("KA_PRIMS_SORT_BALLOT", "emu", 1);
            ka_prims_plan *p;
            ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, t, 200000,
                                                w8 ? KA_PRIM_SORT_VALUES8 | KA_PRIM_ARGSORT64
                                                   : KA_PRIM_SORT_VALUES | KA_PRIM_ARGSORT, &p);
            unsetenv("KA_PRIMS_ADVERSARY"), unsetenv("KA_PRIMS_LAYOUT"), unsetenv("KA_PRIMS_SORT_BALLOT");
            KA_OK_OR_FAIL(st);
            static const int m4[] = {SORT_KEYS, SORT_V4, SORT_ARG32}, m8[] = {SORT_KEYS, SORT_V8, SORT_ARG64};
            for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
                if (ss[i] > 100000 && (emu + w8) % 2) continue; /* the largest size for two of the four plans */
                int mode = (w8 ? m8 : m4)[(i + (size_t)emu) % 3];
                check_sort_ex(p, t, ss[i], mode, (uint32_t)(i * 13 + 2u * (uint32_t)w8 + (uint32_t)emu), (int)(i % 2), i == 4 ? 3 : 0);
            }
            KA_OK_OR_FAIL(ka_prims_plan_release(p));
        }
}

/* A sort recorded in a graph and replayed on new keys, both layouts (the GPU
 * sort's look-back stamps advance on the device, replay after replay). */
static void sort_graph_replay(void **state) {
    (void)state;
    enum { N = 20011 };
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        ka_prims_plan *p;
        ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, N, KA_PRIM_SORT_VALUES, &p);
        unsetenv("KA_PRIMS_LAYOUT");
        KA_OK_OR_FAIL(st);
        ka_buffer kb = make_buffer(dev, N * 4), vb = make_buffer(dev, N * 4);
        ka_graph g;
        KA_OK_OR_FAIL(ka_graph_begin(q));
        KA_OK_OR_FAIL(ka_sort(q, p, kb, 0, vb, 0, N, NULL));
        KA_OK_OR_FAIL(ka_graph_end(q, &g));
        static uint32_t k[N], v[N], rec[2 * N], gk[N], gv[N];
        for (uint32_t rep = 0; rep < 3; rep++) {
            uint32_t seed = 77 + rep;
            for (uint32_t i = 0; i < N; i++) {
                seed = seed * 1103515245u + 12345u;
                k[i] = rep == 1 ? (seed >> 8) % 13 * 0x01010101u : seed ^ (seed << 7);
                v[i] = i, rec[2 * i] = k[i], rec[2 * i + 1] = i;
            }
            g_sort_t = KA_DTYPE_U32;
            qsort(rec, N, 8, cmp_rec);
            KA_OK_OR_FAIL(ka_buffer_write(q, kb, 0, k, sizeof k));
            KA_OK_OR_FAIL(ka_buffer_write(q, vb, 0, v, sizeof v));
            KA_OK_OR_FAIL(ka_graph_launch(q, g, NULL));
            KA_OK_OR_FAIL(ka_buffer_read(q, gk, kb, 0, sizeof gk));
            KA_OK_OR_FAIL(ka_buffer_read(q, gv, vb, 0, sizeof gv));
            for (uint32_t i = 0; i < N; i++)
                if (gk[i] != rec[2 * i] || gv[i] != rec[2 * i + 1])
                    fail_msg("graph replay %u (gpu layout %d): element %u is (%u, %u), want (%u, %u)", rep, gpu, i, gk[i],
                             gv[i], rec[2 * i], rec[2 * i + 1]);
        }
        ka_graph_release(g);
        ka_buffer_release(kb), ka_buffer_release(vb);
        ka_prims_plan_release(p);
    }
}

/* 2^20 - 3 keys in both layouts, keys only and pairs. */
static void sort_large(void **state) {
    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        ka_prims_plan *p, *d;
        ka_status s1 = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 1 << 20, KA_PRIM_SORT_VALUES, &p);
        ka_status s2 = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_F64, 1 << 20, KA_PRIM_ARGSORT, &d);
        unsetenv("KA_PRIMS_LAYOUT");
        KA_OK_OR_FAIL(s1);
        KA_OK_OR_FAIL(s2);
        check_sort_ex(p, KA_DTYPE_U32, (1 << 20) - 3, SORT_KEYS, 5, 1, 0);
        check_sort_ex(p, KA_DTYPE_U32, (1 << 20) - 3, SORT_V4, 6, 1, 0);
        check_sort_ex(d, KA_DTYPE_F64, (1 << 20) - 3, SORT_ARG32, 7, 0, 0);
        ka_prims_plan_release(p), ka_prims_plan_release(d);
    }
}

/* Many work-groups over small inputs, both layouts: CPUs' per-work-item
 * counts over many groups, GPUs' upsweep over many chunks. */
static void sort_many_groups(void **state) {
    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        setenv("KA_PRIMS_GROUPS", "301", 1);
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        ka_prims_plan *p;
        ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I64, 300007, KA_PRIM_SORT_VALUES8, &p);
        unsetenv("KA_PRIMS_GROUPS");
        unsetenv("KA_PRIMS_LAYOUT");
        KA_OK_OR_FAIL(st);
        check_sort_ex(p, KA_DTYPE_I64, 300007, SORT_V8, 5, 0, 0);
        check_sort_ex(p, KA_DTYPE_I64, 1000, SORT_V8, 6, 1, 0);
        ka_prims_plan_release(p);
    }
}

static void sort_bad_input(void **state) {
    (void)state;
    ka_prims_plan *p = (ka_prims_plan *)1, *k, *v, *a;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT,
              ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 10, KA_PRIM_SORT_VALUES | KA_PRIM_SORT_VALUES8, &p));
    EXPECT_DETAIL("exclude each other");
    assert_null(p);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT,
              ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 10, KA_PRIM_ARGSORT | KA_PRIM_ARGSORT64, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 10, 16, &p));
    EXPECT_DETAIL("flags 0x10");
    if (sizeof(size_t) > 4) {
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT,
                  ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, (size_t)UINT32_MAX + 1, KA_PRIM_ARGSORT, &p));
        EXPECT_DETAIL("KA_PRIM_ARGSORT64");
    }
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 100, 0, &k));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 100, KA_PRIM_SORT_VALUES8, &v));
    KA_OK_OR_FAIL(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U32, 100, KA_PRIM_ARGSORT64, &a));
    ka_buffer b = make_buffer(dev, 800), c = make_buffer(dev, 800), small = make_buffer(dev, 40);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort(q, k, b, 0, c, 0, 10, NULL)); /* values, keys-only plan */
    EXPECT_DETAIL("without KA_PRIM_SORT_VALUES");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort_pairs(q, k, b, 0, c, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort_pairs(q, v, b, 0, (ka_buffer){0}, 0, 10, NULL)); /* values missing */
    EXPECT_DETAIL("values is not a buffer");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort_pairs(q, v, b, 0, small, 0, 10, NULL)); /* 10 x 8 bytes */
    EXPECT_DETAIL("values holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort_pairs(q, v, b, 0, c, 4, 10, NULL)); /* not a multiple of 8 */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_sort_pairs(q, v, b, 0, b, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_argsort(q, v, c, 0, b, 0, 10, NULL)); /* no argsort flag */
    EXPECT_DETAIL("without KA_PRIM_ARGSORT");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_argsort(q, a, small, 0, b, 0, 10, NULL)); /* perm too small */
    EXPECT_DETAIL("perm holds 40 bytes");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_argsort(q, a, c, 0, small, 0, 11, NULL)); /* keys too small */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_argsort(q, a, c, 0, b, 0, 101, NULL));
    EXPECT_DETAIL("max_n 100");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_argsort(q, a, b, 0, b, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_argsort(q, NULL, c, 0, b, 0, 10, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_sort_pairs(q, NULL, b, 0, c, 0, 10, NULL));
    ka_prims_plan_release(k), ka_prims_plan_release(v), ka_prims_plan_release(a);
    ka_buffer_release(b), ka_buffer_release(c), ka_buffer_release(small);
}

/* After a warm-up call, sort, sort_pairs and argsort allocate nothing in
 * libka (the default queue), in both layouts. */
static void sort_zero_alloc(void **state) {
    (void)state;
    for (int gpu = 0; gpu < 2; gpu++) {
        if (gpu) setenv("KA_PRIMS_LAYOUT", "gpu", 1);
        ka_prims_plan *p;
        ka_status st = ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_U64, 5000, KA_PRIM_SORT_VALUES8 | KA_PRIM_ARGSORT, &p);
        unsetenv("KA_PRIMS_LAYOUT");
        KA_OK_OR_FAIL(st);
        ka_buffer a = make_buffer(dev, 5000 * 8), c = make_buffer(dev, 5000 * 8);
        int zero = 0;
        KA_OK_OR_FAIL(ka_buffer_fill(qr, a, 0, &zero, 4, 5000 * 8, NULL));
        for (int it = -1; it < 50; it++) {
            if (it == 0) heap_start();
            ka_event ev;
            size_t n = it < 0 ? 5000 : (size_t)(4000 + it * 17);
            if (ka_sort(qr, p, a, 0, (ka_buffer){0}, 0, n, NULL) || ka_sort_pairs(qr, p, a, 0, c, 0, n, NULL) ||
                ka_argsort(qr, p, c, 0, a, 0, n, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
                fail_msg("iteration %d: %s", it, ka_last_error());
        }
        uint64_t calls = heap_stop();
        if (calls) fail_msg("%llu allocations and frees in libka over 50 sort calls", (unsigned long long)calls);
        ka_buffer_release(a), ka_buffer_release(c);
        ka_prims_plan_release(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sort_bad_input),   cmocka_unit_test(sort_all_types), cmocka_unit_test(sort_gpu_layout),
        cmocka_unit_test(sort_gpu_ballot_emulated), cmocka_unit_test(sort_gpu_stamps),
        cmocka_unit_test(sort_adversary),
        cmocka_unit_test(sort_graph_replay),
        cmocka_unit_test(sort_large),       cmocka_unit_test(sort_many_groups), cmocka_unit_test(sort_zero_alloc),
    };
    const char *f = getenv("KA_TEST_FILTER"); /* one test by name (cmocka's pattern) */
    if (f) cmocka_set_test_filter(f);
    return cmocka_run_group_tests(tests, setup, teardown);
}
