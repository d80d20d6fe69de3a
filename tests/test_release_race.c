/* Releasing a queue, a program or a buffer while other threads use it: the
 * release waits for the calls in flight on that object, later calls get
 * KA_ERR_INVALID_HANDLE, and nothing is used after it is freed (the ASan and
 * TSan builds run this too). 8 threads: 7 use the objects, 1 releases them
 * at whatever moment it reaches that point; every interleaving is valid, so
 * the outcome does not depend on timing. */
#include "test_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define USERS 7
#define ROUNDS 12
#define CALLS 200

static const char *src =
    "KA_KERNEL(inc, KA_GLOBAL uint *p) { if (ka_in_range()) ka_atomic_add(&p[ka_global_id(0)], 1u); }\n";

typedef struct round_state {
    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    ka_buffer b;
    _Atomic int go;
    _Atomic int ok, stale, other;
    _Atomic ka_status first_other;
} round_state;

static void tally(round_state *r, ka_status st) {
    if (st == KA_OK) atomic_fetch_add(&r->ok, 1);
    else if (st == KA_ERR_INVALID_HANDLE) atomic_fetch_add(&r->stale, 1);
    else {
        ka_status none = KA_OK;
        atomic_compare_exchange_strong(&r->first_other, &none, st);
        atomic_fetch_add(&r->other, 1);
    }
}

static void *user(void *arg) {
    round_state *r = arg;
    while (!atomic_load(&r->go)) {
    }
    uint32_t v[4] = {0};
    for (int i = 0; i < CALLS; i++) {
        ka_arg a[] = {ka_arg_buffer(r->b)};
        ka_event ev;
        switch (i % 5) {
        case 0: tally(r, ka_launch(r->q, r->k, &(ka_range){.dims = 1, .size = {16}}, a, 1, NULL)); break;
        case 1: {
            ka_status st = ka_launch(r->q, r->k, &(ka_range){.dims = 1, .size = {16}}, a, 1, &ev);
            if (st == KA_OK) {
                tally(r, ka_event_wait(ev, KA_WAIT_FOREVER));
                tally(r, ka_event_release(ev));
            } else {
                tally(r, st);
            }
            break;
        }
        case 2: tally(r, ka_buffer_read(r->q, v, r->b, 0, sizeof v)); break;
        case 3: {
            ka_kernel k;
            tally(r, ka_kernel_get(r->prog, "inc", NULL, &k));
            break;
        }
        default: tally(r, ka_queue_finish(r->q)); break;
        }
    }
    return NULL;
}

static void *releaser(void *arg) {
    round_state *r = arg;
    while (!atomic_load(&r->go)) {
    }
    /* Each object goes while the users are (most likely) still calling. */
    tally(r, ka_program_release(r->prog));
    tally(r, ka_buffer_release(r->b));
    tally(r, ka_queue_release(r->q));
    return NULL;
}

static void release_while_in_use(void **state) {
    (void)state;
    int total_ok = 0, total_stale = 0;
    for (int round = 0; round < ROUNDS; round++) {
        round_state r;
        memset(&r, 0, sizeof r);
        /* Half the rounds on the null device (no driver: the core alone),
         * half on the default one (PoCL: inline and threaded launches). */
        const char *sel = round % 2 ? "null" : NULL;
        KA_OK_OR_FAIL(ka_device_open(sel, &r.dev));
        KA_OK_OR_FAIL(ka_queue_create(r.dev, NULL, &r.q));
        KA_OK_OR_FAIL(ka_program_build(r.dev, src, NULL, &r.prog));
        KA_OK_OR_FAIL(ka_kernel_get(r.prog, "inc", NULL, &r.k));
        KA_OK_OR_FAIL(ka_buffer_create(r.dev, 64, &r.b));
        pthread_t t[USERS + 1];
        for (int i = 0; i < USERS; i++) assert_int_equal(pthread_create(&t[i], NULL, user, &r), 0);
        assert_int_equal(pthread_create(&t[USERS], NULL, releaser, &r), 0);
        atomic_store(&r.go, 1);
        for (int i = 0; i <= USERS; i++) pthread_join(t[i], NULL);
        if (atomic_load(&r.other))
            fail_msg("round %d: %d calls failed with %s (only KA_OK or KA_ERR_INVALID_HANDLE may)\n%s", round,
                     atomic_load(&r.other), ka_status_name(atomic_load(&r.first_other)), ka_last_error());
        /* Released for good: every later call sees a stale handle. */
        ka_arg a[] = {ka_arg_buffer(r.b)};
        KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(r.q, r.k, &(ka_range){.dims = 1, .size = {16}}, a, 1, NULL));
        KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_release(r.q));
        KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_release(r.prog));
        KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(r.b));
        /* Nothing of the device is left alive. */
        KA_OK_OR_FAIL(ka_device_close(r.dev));
        total_ok += atomic_load(&r.ok);
        total_stale += atomic_load(&r.stale);
    }
    print_message("%d rounds: %d calls succeeded, %d saw a released handle\n", ROUNDS, total_ok, total_stale);
}

/* Two threads releasing the same handle: one succeeds, the other gets
 * KA_ERR_INVALID_HANDLE (it used to free the object twice). */
typedef struct twice {
    ka_queue q;
    ka_buffer b;
    ka_event ev;
    _Atomic int go;
    ka_status st[2][3];
} twice;

static void *release_both(void *arg) {
    twice *w = arg;
    int me = atomic_fetch_add(&w->go, 1);
    while (atomic_load(&w->go) < 2) {
    }
    w->st[me][2] = ka_event_release(w->ev); /* both pin it; one renews its id, the other must not drop it again */
    w->st[me][0] = ka_queue_release(w->q);
    w->st[me][1] = ka_buffer_release(w->b);
    return NULL;
}

static void double_release(void **state) {
    (void)state;
    ka_device dev;
    KA_OK_OR_FAIL(ka_device_open("null", &dev));
    for (int round = 0; round < 200; round++) {
        twice w;
        memset(&w, 0, sizeof w);
        KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &w.q));
        KA_OK_OR_FAIL(ka_buffer_create(dev, 64, &w.b));
        const uint32_t zero = 0;
        KA_OK_OR_FAIL(ka_buffer_fill(w.q, w.b, 0, &zero, sizeof zero, 64, &w.ev));
        pthread_t t[2];
        for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, release_both, &w), 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        for (int j = 0; j < 3; j++) {
            int ok = (w.st[0][j] == KA_OK) + (w.st[1][j] == KA_OK);
            int stale = (w.st[0][j] == KA_ERR_INVALID_HANDLE) + (w.st[1][j] == KA_ERR_INVALID_HANDLE);
            assert_int_equal(ok, 1);
            assert_int_equal(stale, 1);
        }
    }
    KA_OK_OR_FAIL(ka_device_close(dev));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(release_while_in_use),
        cmocka_unit_test(double_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
