/* Every public ka_status call's error paths: each failure's ka_last_error()
 * starts with "<the call's name>: ", whatever failed before it on the thread
 * (each case first makes another call fail, so a stale name shows), and
 * whatever public calls the call made inside itself (the primitives call
 * ka_buffer_size, ka_launch, ...). The calls are read from include/ka.h and
 * include/ka_prims.h: one declared there with no case here fails the test. */
#define _GNU_SOURCE
#include <ka.h>
#include <ka_prims.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KA_HEADERS_DIR
#error "KA_HEADERS_DIR: the folder of ka.h and ka_prims.h (tests/CMakeLists.txt)"
#endif

#define MAX_CALLS 256
static struct {
    char name[64];
    int checked; /* failures whose message was checked */
} calls[MAX_CALLS];
static int ncalls, bad;

static int find(const char *name) {
    for (int i = 0; i < ncalls; i++)
        if (!strcmp(calls[i].name, name)) return i;
    return -1;
}

/* The functions `KA_API ka_status name(` of one header. */
static void read_header(const char *file) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KA_HEADERS_DIR, file);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "KA_API ka_status ");
        if (!p) continue;
        p += strlen("KA_API ka_status ");
        size_t n = strcspn(p, "( ");
        if (n == 0 || n >= sizeof calls[0].name || ncalls == MAX_CALLS) continue;
        memcpy(calls[ncalls].name, p, n);
        calls[ncalls].name[n] = 0;
        if (find(calls[ncalls].name) < 0) ncalls++;
    }
    fclose(f);
}

/* A failure of another call, so that the call checked next must name itself. */
static void poison(const char *call) {
    if (strcmp(call, "ka_buffer_size")) ka_buffer_size((ka_buffer){0}, NULL);
    else ka_queue_flush((ka_queue){0});
}

static void expect(const char *call, ka_status st, const char *what, int line) {
    int i = find(call);
    if (i < 0) {
        fprintf(stderr, "line %d: %s is not declared in ka.h or ka_prims.h\n", line, call);
        bad++;
        return;
    }
    char want[80];
    snprintf(want, sizeof want, "%s: ", call);
    if (st == KA_OK) {
        fprintf(stderr, "line %d: %s succeeded; a failure was expected\n", line, what);
        bad++;
    } else if (strncmp(ka_last_error(), want, strlen(want)) != 0) {
        fprintf(stderr, "line %d: %s -> %s, detail \"%s\" (wanted \"%s...\")\n", line, what, ka_status_name(st),
                ka_last_error(), want);
        bad++;
    } else {
        calls[i].checked++;
    }
}

/* FAILS(call, args): call(args) must fail, its detail starting "call: ". */
#define FAILS(call, ...)                                                                                             \
    do {                                                                                                             \
        poison(#call);                                                                                               \
        ka_status st_ = call(__VA_ARGS__);                                                                           \
        expect(#call, st_, #call "(" #__VA_ARGS__ ")", __LINE__);                                                     \
    } while (0)

#define OK(x)                                                                                                        \
    do {                                                                                                             \
        ka_status st_ = (x);                                                                                         \
        if (st_ != KA_OK) {                                                                                          \
            fprintf(stderr, "line %d: %s: %s\n", __LINE__, #x, ka_last_error());                                      \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)

static const char *src = "KA_KERNEL(fill, KA_GLOBAL float *y, float s) {\n"
                         "    if (!ka_in_range()) return;\n"
                         "    y[ka_global_id(0)] = s;\n"
                         "}\n";

static void on_done(ka_status s, void *u) {
    (void)s;
    (void)u;
}

int main(void) {
    read_header("ka.h");
    read_header("ka_prims.h");
    if (ncalls < 60) {
        fprintf(stderr, "only %d calls read from the headers\n", ncalls);
        return 1;
    }

    ka_device d;
    if (ka_device_open(NULL, &d) != KA_OK) {
        fprintf(stderr, "no device: %s\n", ka_last_error());
        return 77;
    }
    const ka_device_info *info;
    ka_queue q;
    ka_buffer b;
    ka_program p;
    ka_kernel k;
    OK(ka_device_get_info(d, &info));
    OK(ka_queue_create(d, NULL, &q));
    OK(ka_buffer_create(d, 4096, &b));
    OK(ka_program_build(d, src, NULL, &p));
    OK(ka_kernel_get(p, "fill", NULL, &k));
    /* Handles of released objects. */
    ka_queue q_gone;
    ka_buffer b_gone;
    ka_program p_gone;
    ka_kernel k_gone;
    ka_event e_gone;
    ka_graph g_gone;
    OK(ka_queue_create(d, NULL, &q_gone));
    OK(ka_buffer_create(d, 64, &b_gone));
    OK(ka_program_build(d, src, NULL, &p_gone));
    OK(ka_kernel_get(p_gone, "fill", NULL, &k_gone));
    ka_range r1 = {.dims = 1, .size = {16}};
    ka_arg args[2] = {ka_arg_buffer(b), ka_arg_f32(1.0f)};
    OK(ka_launch(q, k, &r1, args, 2, &e_gone));
    OK(ka_event_wait(e_gone, KA_WAIT_FOREVER));
    OK(ka_event_release(e_gone));
    OK(ka_graph_begin(q));
    OK(ka_launch(q, k, &r1, args, 2, NULL));
    OK(ka_graph_end(q, &g_gone));
    OK(ka_graph_release(g_gone));
    OK(ka_program_release(p_gone));
    OK(ka_buffer_release(b_gone));
    OK(ka_queue_release(q_gone));
    ka_device d_gone;
    OK(ka_device_open(NULL, &d_gone));
    OK(ka_device_close(d_gone));

    /* Devices. */
    FAILS(ka_device_count, NULL);
    ka_device_info di;
    FAILS(ka_device_describe, 1u << 30, &di);
    FAILS(ka_device_describe, 0, NULL);
    ka_device d2;
    FAILS(ka_device_open, NULL, NULL);
    FAILS(ka_device_open, "no-such-device-anywhere", &d2);
    FAILS(ka_device_close, d_gone);
    FAILS(ka_device_get_info, d_gone, &info);
    FAILS(ka_device_get_info, d, NULL);
    FAILS(ka_device_get_native, d, NULL);
    ka_native_device nd;
    FAILS(ka_device_get_native, d_gone, &nd);

    /* Queues. */
    ka_queue q2;
    FAILS(ka_queue_create, d, NULL, NULL);
    FAILS(ka_queue_create, d_gone, NULL, &q2);
    FAILS(ka_queue_create, d, &(ka_queue_config){.event_capacity = 1u << 30}, &q2);
    FAILS(ka_queue_release, q_gone);
    FAILS(ka_queue_get_native, q, NULL);
    ka_native_queue nq;
    FAILS(ka_queue_get_native, q_gone, &nq);
    FAILS(ka_queue_finish, q_gone);
    FAILS(ka_queue_flush, q_gone);
    FAILS(ka_queue_fd, q, NULL);
    int fd;
    FAILS(ka_queue_fd, q_gone, &fd);
    FAILS(ka_queue_get_stats, q, NULL);
    ka_queue_stats qs;
    FAILS(ka_queue_get_stats, q_gone, &qs);
    FAILS(ka_queue_wait_event, q_gone, e_gone);
    FAILS(ka_queue_wait_event, q, e_gone);

    /* Buffers. */
    char host[256] = {0};
    ka_buffer b2;
    FAILS(ka_buffer_create, d, 0, &b2);
    FAILS(ka_buffer_create, d, 64, NULL);
    FAILS(ka_buffer_create, d_gone, 64, &b2);
    FAILS(ka_buffer_create_zeroed, d, 0, &b2);
    FAILS(ka_buffer_create_with, d, 64, NULL, &b2);
    FAILS(ka_buffer_wrap, d, NULL, 64, &b2);
    FAILS(ka_buffer_release, b_gone);
    FAILS(ka_buffer_size, b, NULL);
    size_t bytes;
    FAILS(ka_buffer_size, b_gone, &bytes);
    FAILS(ka_buffer_get_native, b, NULL);
    ka_native_buffer nb;
    FAILS(ka_buffer_get_native, b_gone, &nb);
    FAILS(ka_buffer_write, q, b, 4000, host, 200);
    FAILS(ka_buffer_write, q, b, 0, NULL, 16);
    FAILS(ka_buffer_write, q_gone, b, 0, host, 16);
    FAILS(ka_buffer_read, q, host, b, 4000, 200);
    FAILS(ka_buffer_read, q, host, b_gone, 0, 16);
    ka_event ev;
    FAILS(ka_buffer_write_async, q, b, 4000, host, 200, &ev);
    FAILS(ka_buffer_read_async, q, NULL, b, 0, 16, &ev);
    FAILS(ka_buffer_copy, q, b, 0, b, 8, 64, NULL);
    FAILS(ka_buffer_copy, q, b, 0, b_gone, 0, 16, NULL);
    FAILS(ka_buffer_fill, q, b, 0, NULL, 4, 64, NULL);
    FAILS(ka_buffer_fill, q, b, 0, host, 3, 63, NULL);
    void *mp;
    FAILS(ka_buffer_map, q, b, 0, 0, KA_MAP_READ, &mp);
    FAILS(ka_buffer_map, q, b, 0, 64, KA_MAP_READ, NULL);
    FAILS(ka_buffer_unmap, q, b, host);
    FAILS(ka_buffer_unmap, q_gone, b, host);

    /* Host memory. */
    FAILS(ka_host_alloc, d, 64, NULL);
    FAILS(ka_host_free, d, host);
    FAILS(ka_host_register, d, NULL, 64);
    FAILS(ka_host_register, d_gone, host, 64);
    FAILS(ka_host_unregister, d, host);

    /* Programs and kernels. */
    ka_program p2;
    FAILS(ka_program_build, d, NULL, NULL, &p2);
    FAILS(ka_program_build, d, src, NULL, NULL);
    bool compiles = info->backend != KA_BACKEND_NULL; /* null: no compiler, no argument types */
    if (compiles)
        FAILS(ka_program_build, d, "KA_KERNEL(broken, KA_GLOBAL float *y) { y[0] = undeclared_name; }\n", NULL, &p2);
    FAILS(ka_program_build_file, d, "/nonexistent/kernels.c", NULL, &p2);
    FAILS(ka_program_release, p_gone);
    const char *log;
    uint32_t count;
    FAILS(ka_program_build_log, p, NULL);
    FAILS(ka_program_build_log, p_gone, &log);
    FAILS(ka_program_build_count, p, NULL);
    FAILS(ka_program_cache_hits, p, NULL);
    FAILS(ka_program_cache_hits, p_gone, &count);
    ka_kernel k2;
    FAILS(ka_kernel_get, p, "no_such_kernel", NULL, &k2);
    FAILS(ka_kernel_get, p, NULL, NULL, &k2);
    FAILS(ka_kernel_get, p_gone, "fill", NULL, &k2);
    FAILS(ka_kernel_get, p, "fill", &(ka_kernel_config){.workgroup = {1u << 30}}, &k2);
    FAILS(ka_kernel_get_info, k, NULL);
    ka_kernel_info ki;
    FAILS(ka_kernel_get_info, k_gone, &ki);

    /* The kernel cache: a cache folder that cannot be used. */
    FAILS(ka_cache_get_info, NULL);
    {
        char dir[] = "/tmp/ka_error_calls_XXXXXX";
        if (mkdtemp(dir)) {
            chmod(dir, 0777); /* writable by all: libka refuses it */
            char *old = getenv("KA_CACHE_DIR") ? strdup(getenv("KA_CACHE_DIR")) : NULL;
            setenv("KA_CACHE_DIR", dir, 1);
            uint64_t removed;
            FAILS(ka_cache_clear, &removed);
            if (old) setenv("KA_CACHE_DIR", old, 1);
            else unsetenv("KA_CACHE_DIR");
            free(old);
            rmdir(dir);
        }
    }

    /* Launches. */
    ka_range r0 = {.dims = 0, .size = {16}};
    ka_arg wrong[2] = {ka_arg_f32(1.0f), ka_arg_f32(1.0f)};
    ka_arg gone[2] = {ka_arg_buffer(b_gone), ka_arg_f32(1.0f)};
    FAILS(ka_launch, q_gone, k, &r1, args, 2, NULL);
    FAILS(ka_launch, q, k_gone, &r1, args, 2, NULL);
    FAILS(ka_launch, q, k, NULL, args, 2, &ev);
    FAILS(ka_launch, q, k, &r0, args, 2, NULL);
    FAILS(ka_launch, q, k, &r1, args, 1, NULL);
    if (compiles) FAILS(ka_launch, q, k, &r1, wrong, 2, NULL);
    FAILS(ka_launch, q, k, &r1, gone, 2, NULL);
    FAILS(ka_launch, q, k, &r1, NULL, 2, NULL);

    /* Events and waits. */
    FAILS(ka_event_wait, e_gone, KA_WAIT_FOREVER);
    FAILS(ka_event_release, e_gone);
    FAILS(ka_wait_all, NULL, 2, KA_WAIT_FOREVER);
    FAILS(ka_wait_all, &e_gone, 1, KA_WAIT_FOREVER);
    uint32_t index;
    FAILS(ka_wait_any, NULL, 2, KA_WAIT_FOREVER, &index);
    FAILS(ka_wait_any, &e_gone, 1, KA_WAIT_FOREVER, &index);
    FAILS(ka_event_on_complete, e_gone, on_done, NULL);
    FAILS(ka_event_notify, e_gone);
    uint64_t ns;
    FAILS(ka_event_elapsed_ns, e_gone, &ns);
    {
        ka_event e;
        OK(ka_launch(q, k, &r1, args, 2, &e));
        FAILS(ka_event_elapsed_ns, e, NULL);
        OK(ka_event_wait(e, KA_WAIT_FOREVER));
        FAILS(ka_event_elapsed_ns, e, &ns); /* the queue does not profile */
        OK(ka_event_release(e));
    }

    /* Graphs. */
    ka_graph g;
    ka_graph_node node;
    ka_graph_info gi;
    FAILS(ka_graph_begin, q_gone);
    FAILS(ka_graph_end, q, &g); /* not recording */
    FAILS(ka_graph_last_node, q, &node);
    OK(ka_graph_begin(q));
    FAILS(ka_graph_begin, q);
    FAILS(ka_queue_finish, q); /* recording */
    FAILS(ka_queue_flush, q);
    FAILS(ka_buffer_write, q, b, 0, host, 16);
    FAILS(ka_graph_last_node, q, NULL);
    OK(ka_launch(q, k, &r1, args, 2, NULL));
    OK(ka_graph_last_node(q, &node));
    FAILS(ka_graph_end, q, NULL); /* discards the recording */
    OK(ka_graph_begin(q));
    OK(ka_launch(q, k, &r1, args, 2, NULL));
    OK(ka_graph_last_node(q, &node));
    OK(ka_graph_end(q, &g));
    FAILS(ka_graph_set_arg, g, node, 7, ka_arg_f32(1.0f));
    if (compiles) FAILS(ka_graph_set_arg, g, node, 0, ka_arg_f32(1.0f));
    FAILS(ka_graph_set_arg, g_gone, node, 1, ka_arg_f32(1.0f));
    FAILS(ka_graph_launch, q_gone, g, NULL);
    FAILS(ka_graph_launch, q, g_gone, NULL);
    FAILS(ka_graph_get_info, g, NULL);
    FAILS(ka_graph_get_info, g_gone, &gi);
    FAILS(ka_graph_release, g_gone);
    OK(ka_graph_release(g));

    /* A command that failed on the device, reported through the waits'
     * failure branches (KA__FAILED), not only their handle checks: the null
     * device fails kernels named ka_null_fail*. */
    {
        ka_device zd;
        ka_queue zq;
        ka_program zp;
        ka_kernel zk;
        ka_buffer zb;
        ka_event ze;
        uint32_t zi;
        OK(ka_device_open("null", &zd));
        OK(ka_queue_create(zd, NULL, &zq));
        OK(ka_buffer_create(zd, 64, &zb));
        OK(ka_program_build(zd, "KA_KERNEL(ka_null_fail_k, KA_GLOBAL int *p) {}\n", NULL, &zp));
        OK(ka_kernel_get(zp, "ka_null_fail_k", NULL, &zk));
        ka_arg za[1] = {ka_arg_buffer(zb)};
        OK(ka_launch(zq, zk, &r1, za, 1, &ze));
        FAILS(ka_event_wait, ze, KA_WAIT_FOREVER);
        FAILS(ka_wait_all, &ze, 1, KA_WAIT_FOREVER);
        FAILS(ka_wait_any, &ze, 1, KA_WAIT_FOREVER, &zi);
        OK(ka_event_release(ze));
        OK(ka_program_release(zp));
        OK(ka_buffer_release(zb));
        OK(ka_queue_release(zq));
        OK(ka_device_close(zd));
    }

    /* Primitives: the checks, and failures after a nested public call
     * (ka_buffer_size, ka_device_get_info) succeeded inside the call. */
    ka_prims_plan *plan = NULL, *junk;
    uint64_t not_a_plan[64] = {0};
    ka_prims_plan *fake = (ka_prims_plan *)not_a_plan;
    FAILS(ka_prims_plan_create_desc, d, NULL, &junk);
    FAILS(ka_prims_plan_create_desc, d, &(ka_prims_desc){.kind = KA_PRIM_REDUCE, .dtype = KA_DTYPE_I32}, &junk);
    FAILS(ka_prims_plan_create_desc, d, &(ka_prims_desc){.kind = KA_PRIM_REDUCE, .dtype = KA_DTYPE_I64, .max_n = SIZE_MAX / 2},
          &junk); /* after ka_device_get_info */
    FAILS(ka_prims_plan_create, d, KA_PRIM_REDUCE, KA_DTYPE_I32, 0, 0, &junk);
    FAILS(ka_prims_plan_create, d_gone, KA_PRIM_REDUCE, KA_DTYPE_I32, 16, 0, &junk); /* in ka_device_get_info */
    FAILS(ka_prims_plan_create, d, KA_PRIM_SORT, KA_DTYPE_I32, 16, 0x40000000u, &junk);
    FAILS(ka_prims_plan_release, fake);
    OK(ka_prims_plan_create(d, KA_PRIM_REDUCE, KA_DTYPE_I32, 256, 0, &plan));
    FAILS(ka_reduce, q, NULL, b, 0, b, 0, 16, KA_REDUCE_SUM, NULL);
    FAILS(ka_reduce, q, plan, b, 0, b, 0, 1024, KA_REDUCE_SUM, NULL);
    FAILS(ka_reduce, q, plan, b, 0, b_gone, 0, 16, KA_REDUCE_SUM, NULL);      /* in ka_buffer_size */
    FAILS(ka_reduce, q, plan, b, 4096, b, 0, 16, KA_REDUCE_SUM, NULL);       /* after two succeeded */
    FAILS(ka_reduce, q, plan, b, 0, b, 0, 16, (ka_reduce_op)99, NULL);
    FAILS(ka_scan, q, plan, b, 0, b, 0, 16, 0, NULL);
    FAILS(ka_scan, q, NULL, b, 0, b, 0, 16, 0, NULL);
    FAILS(ka_sort, q, plan, b, 0, (ka_buffer){0}, 0, 16, NULL);
    FAILS(ka_sort_pairs, q, plan, b, 0, (ka_buffer){0}, 0, 16, NULL);
    FAILS(ka_sort_pairs, q, plan, b, 0, b, 0, 16, NULL);
    FAILS(ka_argsort, q, plan, b, 0, b, 0, 16, NULL);
    FAILS(ka_select, q, plan, b, 0, b, 0, b, 0, (ka_buffer){0}, 0, 16, NULL);
    FAILS(ka_histogram, q, plan, b, 0, b, 0, 16, 0.0, 1.0, NULL);
    FAILS(ka_searchsorted, q, plan, b, 0, b, 0, 16, b, 0, 16, 0, NULL);
    FAILS(ka_segmented_reduce, q, plan, b, 0, b, 0, b, 0, 4, KA_REDUCE_SUM, NULL);
    FAILS(ka_segmented_reduce, q, fake, b, 0, b, 0, b, 0, 4, KA_REDUCE_SUM, NULL);
    OK(ka_prims_plan_release(plan));

    /* The names stay right on a thread that has called nothing yet, and the
     * detail of a failure is never an older one's. */
    FAILS(ka_buffer_release, (ka_buffer){0});

    OK(ka_kernel_get_info(k, &ki)); /* keep k used past the graph cases */
    ka_program_release(p);
    ka_buffer_release(b);
    ka_queue_release(q);
    ka_device_close(d);

    for (int i = 0; i < ncalls; i++)
        if (!calls[i].checked) {
            fprintf(stderr, "%s: no error path checked (add a case)\n", calls[i].name);
            bad++;
        }
    printf("%d calls, %d problems\n", ncalls, bad);
    return bad ? 1 : 0;
}
