/* The core's build pipeline (src/core/build.c) driven through a fake
 * back-end's build hooks, linked against libka's objects: the source it
 * composes, the order of the hooks with the cache off and on (a compile that
 * gives the module is not loaded again; a hit skips the compile), a cached
 * binary the back-end refuses (logged, compiled, the error detail left
 * alone), a build that must not be cached, the retry without the appendix,
 * the lazy build for the alternate target, and a failing compile that leaves
 * the cache entry's lock free. */
#include "test_util.h"

#include "backend.h"

#include <stdlib.h>
#include <unistd.h>

static struct {
    int target, compile, load, release;
    bool compile_module;  /* compile hands back the module */
    bool refuse_cached;   /* load refuses a cached binary */
    bool uncacheable;     /* build_target: not cached */
    bool fail_append;     /* compile fails while the appendix is there */
    bool loaded_cached;   /* the last load's b->from_cache */
    uint32_t last_target;
    char source[512];     /* the last compiled source */
    int warns;            /* WARN messages logged */
} F;

static char module_token; /* what the fake's modules point at */

static ka_status f_target(ka__build *b) {
    F.target++;
    snprintf(b->target_name, sizeof b->target_name, "fake target %u", b->target);
    b->cache = !F.uncacheable;
    return KA_OK;
}

/* Each 'x' of the user's source as 'y'. */
static size_t f_rewrite(const ka__program *p, char *out) {
    size_t n = strlen(p->source);
    for (size_t i = 0; out && i < n; i++) out[i] = p->source[i] == 'x' ? 'y' : p->source[i];
    return n;
}

static size_t f_append(const ka__program *p, char *out) {
    (void)p;
    static const char text[] = "appendix";
    if (out) memcpy(out, text, sizeof text - 1);
    return sizeof text - 1;
}

static ka_status f_compile(ka__build *b, void **binary, size_t *size, void **module) {
    F.compile++;
    F.last_target = b->target;
    snprintf(F.source, sizeof F.source, "%s", b->source);
    if (F.fail_append && strstr(b->source, "appendix"))
        return ka__fail(KA_ERR_BUILD_FAILED, "fake: error in fake-appendix:1");
    if (strstr(b->source, "#error")) return ka__fail(KA_ERR_BUILD_FAILED, "fake: #error");
    if (b->want_binary) {
        size_t n = strlen(b->source) + 1;
        if (!(*binary = ka__alloc(n))) return ka__fail(KA_ERR_OUT_OF_MEMORY, "fake: out of memory");
        memcpy(*binary, b->source, n);
        *size = n;
    } else {
        /* Without the cache the binary is only what load needs. */
        if (!(*binary = ka__alloc(1))) return ka__fail(KA_ERR_OUT_OF_MEMORY, "fake: out of memory");
        *size = 1;
    }
    if (F.compile_module) *module = &module_token;
    return KA_OK;
}

static ka_status f_load(ka__build *b, void *binary, size_t size, void **module) {
    (void)binary;
    (void)size;
    F.load++;
    F.loaded_cached = b->from_cache;
    if (F.refuse_cached && b->from_cache) return ka__build_fail(b, KA_ERR_BUILD_FAILED, "fake: refused");
    *module = &module_token;
    return KA_OK;
}

static void f_release(ka__program *p, void *module, uint32_t target) {
    (void)p;
    (void)target;
    assert_ptr_equal(module, &module_token);
    F.release++;
}

static ka__backend fake;
static ka__device dev;
static char cache_dir[64];

static void logger(ka_log_level lvl, const char *msg, void *user) {
    (void)user;
    if (lvl == KA_LOG_WARN && strstr(msg, "fake: refused")) F.warns++;
}

static int setup(void **state) {
    (void)state;
    fake = ka__null_backend;
    fake.name = "fake";
    fake.prelude = "PRELUDE";
    fake.source_file = "user.k";
    fake.source_rewrite = f_rewrite;
    fake.source_append = f_append;
    fake.append_file = "fake-appendix";
    fake.build_target = f_target;
    fake.compile = f_compile;
    fake.load = f_load;
    fake.module_release = f_release;
    if (ka__backend_check(&fake) != KA_OK) return -1;
    dev.ops = &fake;
    snprintf(dev.info.name, sizeof dev.info.name, "fake device");
    snprintf(cache_dir, sizeof cache_dir, "/tmp/ka_test_build.XXXXXX");
    if (!mkdtemp(cache_dir)) return -1;
    setenv("KA_CACHE_DIR", cache_dir, 1);
    ka_set_logger(logger, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_set_logger(NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A program and one variant of it, with options; fresh state per case. */
typedef struct fixture {
    ka__program p;
    ka__variant v;
} fixture;

static void make(fixture *f, const char *source, const char *options) {
    memset(f, 0, sizeof *f);
    memset(&F, 0, sizeof F);
    f->p.dev = &dev;
    f->p.source = (char *)source;
    f->v.options = (char *)options;
    pthread_mutex_init(&f->v.alt_lock, NULL);
}

static void unmake(fixture *f) {
    ka__build_release(&f->p, &f->v);
    pthread_mutex_destroy(&f->v.alt_lock);
}

static void composed_source(void **state) {
    (void)state;
    setenv("KA_CACHE", "0", 1);
    fixture f;
    make(&f, "kernel x", "-DA");
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_string_equal(F.source, "PRELUDE\n#line 1 \"user.k\"\nkernel y\n#line 1 \"fake-appendix\"\nappendix");
    /* Without a file name, a bare #line; without the hooks, the source as it is. */
    fake.source_file = NULL;
    fake.source_rewrite = NULL;
    fake.source_append = NULL;
    KA_OK_OR_FAIL(ka__build_alt(&f.p, &f.v, &(void *){NULL}));
    fake.source_file = "user.k";
    fake.source_rewrite = f_rewrite;
    fake.source_append = f_append;
    assert_string_equal(F.source, "PRELUDE\n#line 1\nkernel x");
    assert_int_equal(F.last_target, KA__TARGET_ALT);
    unmake(&f);
    assert_int_equal(F.release, 2);
    /* The variant's defines come first, as -D options would, and leave the
     * user's lines as they are. */
    make(&f, "kernel x", "-DA");
    f.v.head = "#define A 1 + 2\n";
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_string_equal(F.source,
                        "#define A 1 + 2\nPRELUDE\n#line 1 \"user.k\"\nkernel y\n#line 1 \"fake-appendix\"\nappendix");
    unmake(&f);
    unsetenv("KA_CACHE");
}

/* Cache off: compile, then load (compile gave no module); or compile alone. */
static void cache_off(void **state) {
    (void)state;
    setenv("KA_CACHE", "0", 1);
    fixture f;
    make(&f, "kernel off", "-DB");
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.target, 1);
    assert_int_equal(F.compile, 1);
    assert_int_equal(F.load, 1);
    assert_false(F.loaded_cached);
    assert_ptr_equal(f.v.native, &module_token);
    unmake(&f);
    make(&f, "kernel off", "-DB");
    F.compile_module = true;
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.compile, 1);
    assert_int_equal(F.load, 0);
    unmake(&f);
    unsetenv("KA_CACHE");
}

/* Cache on: a miss compiles once (the module from compile, no load) and
 * stores; the next build of the same source and options loads the entry. */
static void cache_miss_then_hit(void **state) {
    (void)state;
    fixture f;
    make(&f, "kernel cached", "-DC");
    F.compile_module = true;
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.compile, 1);
    assert_int_equal(F.load, 0);
    assert_int_equal(atomic_load(&f.p.cache_hits), 0);
    unmake(&f);
    make(&f, "kernel cached", "-DC");
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.compile, 0);
    assert_int_equal(F.load, 1);
    assert_true(F.loaded_cached);
    assert_int_equal(atomic_load(&f.p.cache_hits), 1);
    unmake(&f);
    /* Other options: another entry. */
    make(&f, "kernel cached", "-DC2");
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.compile, 1);
    unmake(&f);
}

/* A cached binary the back-end refuses: a WARN, a compile, the detail as it was. */
static void cached_binary_refused(void **state) {
    (void)state;
    fixture f;
    make(&f, "kernel refused", "-DD");
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    unmake(&f);
    make(&f, "kernel refused", "-DD");
    F.refuse_cached = true;
    ka__fail(KA_ERR_INVALID_ARGUMENT, "the detail before");
    char before[128];
    snprintf(before, sizeof before, "%s", ka_last_error());
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.load, 2); /* the cached one (refused), then the compiled one */
    assert_int_equal(F.compile, 1);
    assert_int_equal(F.warns, 1);
    assert_int_equal(atomic_load(&f.p.cache_hits), 0);
    assert_string_equal(ka_last_error(), before);
    assert_non_null(strstr(before, "the detail before"));
    unmake(&f);
}

/* build_target says not cached: compiled every time. */
static void uncacheable_build(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {
        fixture f;
        make(&f, "kernel uncached", "-DE");
        F.uncacheable = true;
        KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
        assert_int_equal(F.compile, 1);
        unmake(&f);
    }
}

/* The appendix fails to build: the variant is built again without it, and
 * so is its build for the alternate target (once, then kept). */
static void appendix_retry_and_alt(void **state) {
    (void)state;
    setenv("KA_CACHE", "0", 1);
    fixture f;
    make(&f, "kernel retry", "-DF");
    F.fail_append = true;
    KA_OK_OR_FAIL(ka__build_variant(&f.p, &f.v));
    assert_int_equal(F.compile, 2);
    assert_true(f.v.plain);
    assert_null(strstr(F.source, "appendix"));
    void *alt = NULL;
    KA_OK_OR_FAIL(ka__build_alt(&f.p, &f.v, &alt));
    assert_ptr_equal(alt, &module_token);
    assert_int_equal(F.compile, 3);
    assert_int_equal(F.last_target, KA__TARGET_ALT);
    assert_null(strstr(F.source, "appendix"));
    KA_OK_OR_FAIL(ka__build_alt(&f.p, &f.v, &alt));
    assert_int_equal(F.compile, 3);
    unmake(&f);
    assert_int_equal(F.release, 2);
    unsetenv("KA_CACHE");
}

/* A compile that fails: its status and detail, no module, and the entry's
 * lock released (the next build of the same entry does not wait forever:
 * the test's watchdog is ctest's timeout). */
static void failing_compile(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {
        fixture f;
        make(&f, "kernel #error", "-DG");
        KA_EXPECT(KA_ERR_BUILD_FAILED, ka__build_variant(&f.p, &f.v));
        EXPECT_DETAIL("fake: #error");
        assert_null(f.v.native);
        assert_false(f.v.plain); /* the detail does not name the appendix */
        unmake(&f);
        assert_int_equal(F.release, 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(composed_source),
        cmocka_unit_test(cache_off),
        cmocka_unit_test(cache_miss_then_hit),
        cmocka_unit_test(cached_binary_refused),
        cmocka_unit_test(uncacheable_build),
        cmocka_unit_test(appendix_retry_and_alt),
        cmocka_unit_test(failing_compile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
