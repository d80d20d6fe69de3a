/* A 2-D heat equation over MPI ranks, each on its own libka device.
 *
 * The grid (ny rows of nx floats) is cut in row blocks, one per rank. A rank
 * holds its rows plus a halo row above and below; every step it sends its
 * first and last rows to its neighbours, receives their rows into its halos
 * and runs the 5-point stencil. The rows that need no halo (the interior)
 * are launched asynchronously (KA_LAUNCH_ASYNC) before the exchange is
 * waited for, so the kernel and MPI overlap; the two edge rows follow once
 * the halos are in.
 *
 * Device per rank: --device SEL if given, else $KA_DEVICE, else cuda:N where
 * N is the rank's index among the ranks of its node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED) modulo the node's GPUs, else PoCL.
 *
 * Exchange:
 *   host    halo rows read into host memory (ka_host_alloc: page-locked on
 *           CUDA) with events, MPI_Isend/Irecv, written back with events
 *           (any MPI, any device);
 *   device  MPI sends from and receives into the device buffers themselves
 *           (ka_buffer_get_native's address): CUDA devices, when the MPI
 *           library says it is CUDA-aware (MPIX_Query_cuda_support);
 *   auto    device where possible, else host (the default).
 *
 * Waits cooperate with MPI: while a kernel or transfer runs, the rank tests
 * its MPI requests between short timed waits on libka's events (a timed wait
 * sleeps: no core is kept busy), and backs off to sleeping when only MPI is
 * left to wait for.
 *
 * The stencil is a quarter of the four neighbours' sum: no multiply feeds an
 * add, so no device can contract it into an FMA, and every rank count, every
 * device and the serial C loop (--check) give the same bits.
 *
 *   mpirun -np 4 ./mpi_heat --nx 256 --ny 256 --steps 100 --check --out grid.bin
 *
 * Exit status 0 when the run (and its check) succeeded; a rank that fails
 * prints why and ends the whole job with MPI_Abort. */
#include <ka.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_Query_cuda_support */
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *heat_src =
    "KA_KERNEL(heat_rows, KA_GLOBAL const float *u, KA_GLOBAL float *v, uint nx, uint first, uint g0, uint ny) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint x = (uint)ka_global_id(0);\n"
    "    uint i = first + (uint)ka_global_id(1);  /* local row; 0 and count+1 are halos */\n"
    "    uint g = g0 + i - 1;                     /* global row */\n"
    "    size_t c = (size_t)i * nx + x;\n"
    "    if (g == 0 || g == ny - 1 || x == 0 || x == nx - 1) v[c] = u[c];  /* fixed boundary */\n"
    "    else v[c] = (((u[c - 1] + u[c + 1]) + u[c - nx]) + u[c + nx]) * 0.25f;\n"
    "}\n";

static int g_rank, g_size;

/* Any failure: say which rank and why, then end every rank. */
#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "mpi_heat: rank %d: ", g_rank);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        fflush(stderr);                                                                            \
        MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
    } while (0)
#define KA_CHECK(call)                                                                             \
    do {                                                                                           \
        ka_status s_ = (call);                                                                     \
        if (s_ != KA_OK) DIE("%s: %s\n%s", #call, ka_strerror(s_), ka_last_error());              \
    } while (0)
#define MPI_CHECK(call)                                                                            \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != MPI_SUCCESS) {                                                                   \
            char m_[MPI_MAX_ERROR_STRING];                                                         \
            int l_ = 0;                                                                            \
            MPI_Error_string(e_, m_, &l_);                                                         \
            DIE("%s: %s", #call, m_);                                                              \
        }                                                                                          \
    } while (0)

/* ---- the problem, shared by every rank and the serial reference -------- */
static float initial(uint32_t g, uint32_t x, uint32_t nx, uint32_t ny) {
    if (g == 0) return 1.0f; /* the hot top edge */
    if (g == ny - 1 || x == 0 || x == nx - 1) return 0.0f;
    return (float)((g * 7u + x * 13u) % 32u) / 32.0f;
}

/* The same stencil, same operations in the same order, on the host. */
static void serial_heat(float *u, uint32_t nx, uint32_t ny, uint32_t steps) {
    float *v = malloc((size_t)nx * ny * sizeof *v);
    if (!v) DIE("out of host memory for the serial reference");
    for (uint32_t s = 0; s < steps; s++) {
        for (uint32_t g = 0; g < ny; g++)
            for (uint32_t x = 0; x < nx; x++) {
                size_t c = (size_t)g * nx + x;
                if (g == 0 || g == ny - 1 || x == 0 || x == nx - 1) v[c] = u[c];
                else v[c] = (((u[c - 1] + u[c + 1]) + u[c - nx]) + u[c + nx]) * 0.25f;
            }
        memcpy(u, v, (size_t)nx * ny * sizeof *u);
    }
    free(v);
}

/* ---- cooperative waits ------------------------------------------------- */
/* Waits for n libka events and nreq MPI requests together. While events are
 * pending, MPI is tested between 50 us timed waits (which sleep); once only
 * MPI is left, it is tested with a growing sleep between tests (1 to 50 us)
 * after a short burst, so a rank waiting on a slow neighbour keeps no core
 * busy. The events are released. */
static void coop_wait(ka_event *evs, uint32_t n, MPI_Request *reqs, int nreq) {
    int mpi_done = nreq == 0, ka_done = n == 0;
    unsigned idle = 0;
    while (!mpi_done || !ka_done) {
        if (!mpi_done) MPI_CHECK(MPI_Testall(nreq, reqs, &mpi_done, MPI_STATUSES_IGNORE));
        if (!ka_done) {
            ka_status st = ka_wait_all(evs, n, mpi_done ? KA_WAIT_FOREVER : 50000);
            if (st == KA_OK) ka_done = 1;
            else if (st != KA_ERR_TIMEOUT) DIE("ka_wait_all: %s\n%s", ka_strerror(st), ka_last_error());
        } else if (!mpi_done && ++idle > 32) {
            unsigned us = idle - 32 < 50 ? idle - 32 : 50;
            nanosleep(&(struct timespec){0, (long)us * 1000}, NULL);
        }
    }
    for (uint32_t i = 0; i < n; i++) KA_CHECK(ka_event_release(evs[i]));
}

/* ---- options ------------------------------------------------------------- */
typedef struct opts {
    uint32_t nx, ny, steps;
    const char *device;   /* NULL: by node-local rank */
    const char *exchange; /* "auto", "host", "device" */
    const char *out;      /* the final grid, raw floats, written by rank 0 */
    int check, quiet, no_overlap;
} opts;

static int usage(void) {
    if (g_rank == 0)
        fprintf(stderr, "usage: mpi_heat [--nx N] [--ny N] [--steps N] [--device SEL] [--exchange auto|host|device]\n"
                        "                [--out FILE] [--check] [--quiet] [--no-overlap]\n");
    return 2;
}

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.nx = 128, .ny = 128, .steps = 50, .exchange = "auto"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(a, "--check")) o->check = 1;
        else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "--no-overlap")) o->no_overlap = 1;
        else if (!v) return usage();
        else if (!strcmp(a, "--device")) o->device = v, i++;
        else if (!strcmp(a, "--exchange")) o->exchange = v, i++;
        else if (!strcmp(a, "--out")) o->out = v, i++;
        else if (!strcmp(a, "--nx") || !strcmp(a, "--ny") || !strcmp(a, "--steps")) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end || n == 0 || n > 65536) return usage();
            *(a[2] == 's' ? &o->steps : a[3] == 'x' ? &o->nx : &o->ny) = (uint32_t)n;
            i++;
        } else return usage();
    }
    if (strcmp(o->exchange, "auto") && strcmp(o->exchange, "host") && strcmp(o->exchange, "device")) return usage();
    if (o->nx < 3 || o->ny < (uint32_t)g_size) {
        if (g_rank == 0) fprintf(stderr, "mpi_heat: need nx >= 3 and at least one row per rank (ny >= %d)\n", g_size);
        return 2;
    }
    return 0;
}

/* ---- device choice ------------------------------------------------------- */
static void pick_device(const opts *o, char *sel, size_t len) {
    if (o->device) {
        snprintf(sel, len, "%s", o->device);
        return;
    }
    const char *env = getenv("KA_DEVICE");
    if (env && *env) {
        snprintf(sel, len, "%s", env);
        return;
    }
    MPI_Comm node;
    int local = 0;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &local));
    MPI_CHECK(MPI_Comm_free(&node));
    uint32_t count = 0, gpus = 0;
    KA_CHECK(ka_device_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        ka_device_info info;
        if (ka_device_describe(i, &info) == KA_OK && info.backend == KA_BACKEND_CUDA) gpus++;
    }
    if (gpus) snprintf(sel, len, "cuda:%u", (unsigned)local % gpus);
    else snprintf(sel, len, "pocl");
}

static int mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0; /* not built CUDA-aware, or an MPI without the query */
#endif
}

/* ---- the run ------------------------------------------------------------- */
typedef struct rank_grid {
    ka_device dev;
    ka_queue q;
    ka_kernel k;
    ka_buffer u, v;       /* (rows + 2) x nx floats: halo, rows, halo */
    uint32_t nx, ny, rows, g0; /* g0: global row of local row 1 */
    int up, down;         /* neighbour ranks, MPI_PROC_NULL at the edges */
    uint32_t overlap;     /* the interior launch's flags: KA_LAUNCH_ASYNC with neighbours */
} rank_grid;

/* Launches the stencil on local rows first .. first + count - 1, u -> v.
 * flags: KA_LAUNCH_ASYNC for the interior, which must run while this thread
 * exchanges halos (on PoCL a small launch would otherwise run in this very
 * thread, before the exchange starts). */
static void stencil(rank_grid *r, uint32_t first, uint32_t count, uint32_t flags, ka_event *ev) {
    ka_arg args[] = {ka_arg_buffer(r->u), ka_arg_buffer(r->v), ka_arg_u32(r->nx), ka_arg_u32(first),
                     ka_arg_u32(r->g0), ka_arg_u32(r->ny)};
    ka_range rg = {.dims = 2, .size = {r->nx, count}, .flags = flags};
    KA_CHECK(ka_launch(r->q, r->k, &rg, args, 6, ev));
}

/* The edge rows (1 and rows), which read the halos. */
static void edges(rank_grid *r, ka_event *last) {
    if (r->rows == 1) {
        stencil(r, 1, 1, 0, last);
        return;
    }
    stencil(r, 1, 1, 0, NULL);
    stencil(r, r->rows, 1, 0, last);
}

static void swap(rank_grid *r) {
    ka_buffer t = r->u;
    r->u = r->v;
    r->v = t;
}

/* Seconds this rank spent exchanging halos (from posting the receives to the
 * last request done), summed over the timed steps: the interior's kernel runs
 * meanwhile, so it is the exchange's wall time, not what it adds to a step. */
static double g_exchange;

/* One step, halos through host memory. */
static void step_host(rank_grid *r, float *send[2], float *recv[2][2], int parity) {
    size_t row = (size_t)r->nx * sizeof(float);
    MPI_Request req[4];
    int nreq = 0;
    ka_event rd[2];
    uint32_t nrd = 0;
    /* A step's receive buffers were last written from two steps ago: that
     * write came before the last step's reads, which were waited for. */
    float **in = recv[parity];
    double t0 = MPI_Wtime();
    if (r->up != MPI_PROC_NULL) MPI_CHECK(MPI_Irecv(in[0], (int)r->nx, MPI_FLOAT, r->up, 1, MPI_COMM_WORLD, &req[nreq++]));
    if (r->down != MPI_PROC_NULL) MPI_CHECK(MPI_Irecv(in[1], (int)r->nx, MPI_FLOAT, r->down, 0, MPI_COMM_WORLD, &req[nreq++]));
    if (r->up != MPI_PROC_NULL) KA_CHECK(ka_buffer_read_async(r->q, send[0], r->u, row, row, &rd[nrd++]));
    if (r->down != MPI_PROC_NULL) KA_CHECK(ka_buffer_read_async(r->q, send[1], r->u, row * r->rows, row, &rd[nrd++]));
    if (r->rows > 2) stencil(r, 2, r->rows - 2, r->overlap, NULL); /* the interior: no halo needed */
    coop_wait(rd, nrd, NULL, 0); /* the rows to send (the interior may still run) */
    if (r->up != MPI_PROC_NULL) MPI_CHECK(MPI_Isend(send[0], (int)r->nx, MPI_FLOAT, r->up, 0, MPI_COMM_WORLD, &req[nreq++]));
    if (r->down != MPI_PROC_NULL) MPI_CHECK(MPI_Isend(send[1], (int)r->nx, MPI_FLOAT, r->down, 1, MPI_COMM_WORLD, &req[nreq++]));
    coop_wait(NULL, 0, req, nreq);
    g_exchange += MPI_Wtime() - t0;
    /* No events: the writes complete before the edges, in queue order. */
    if (r->up != MPI_PROC_NULL) KA_CHECK(ka_buffer_write_async(r->q, r->u, 0, in[0], row, NULL));
    if (r->down != MPI_PROC_NULL) KA_CHECK(ka_buffer_write_async(r->q, r->u, row * (r->rows + 1), in[1], row, NULL));
    edges(r, NULL);
    swap(r);
}

/* One step, halos straight between device buffers (CUDA-aware MPI). */
static void step_device(rank_grid *r, ka_event *last) {
    ka_native_buffer nb;
    KA_CHECK(ka_buffer_get_native(r->u, &nb));
    float *u = nb.address;
    MPI_Request req[4];
    int nreq = 0;
    /* The rows sent were written by the last step's kernels. */
    if (last->id) coop_wait(last, 1, NULL, 0);
    *last = KA_NULL_EVENT;
    double t0 = MPI_Wtime();
    if (r->up != MPI_PROC_NULL) {
        MPI_CHECK(MPI_Irecv(u, (int)r->nx, MPI_FLOAT, r->up, 1, MPI_COMM_WORLD, &req[nreq++]));
        MPI_CHECK(MPI_Isend(u + r->nx, (int)r->nx, MPI_FLOAT, r->up, 0, MPI_COMM_WORLD, &req[nreq++]));
    }
    if (r->down != MPI_PROC_NULL) {
        MPI_CHECK(MPI_Irecv(u + (size_t)r->nx * (r->rows + 1), (int)r->nx, MPI_FLOAT, r->down, 0, MPI_COMM_WORLD, &req[nreq++]));
        MPI_CHECK(MPI_Isend(u + (size_t)r->nx * r->rows, (int)r->nx, MPI_FLOAT, r->down, 1, MPI_COMM_WORLD, &req[nreq++]));
    }
    if (r->rows > 2) stencil(r, 2, r->rows - 2, r->overlap, NULL);
    coop_wait(NULL, 0, req, nreq);
    g_exchange += MPI_Wtime() - t0;
    edges(r, last);
    swap(r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* Errors come back as codes (MPI_CHECK), not through the default abort. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) {
        MPI_Finalize();
        return rc;
    }

    rank_grid r = {.nx = o.nx, .ny = o.ny};
    r.rows = o.ny / (uint32_t)g_size + ((uint32_t)g_rank < o.ny % (uint32_t)g_size);
    r.g0 = (uint32_t)g_rank * (o.ny / (uint32_t)g_size) +
           ((uint32_t)g_rank < o.ny % (uint32_t)g_size ? (uint32_t)g_rank : o.ny % (uint32_t)g_size);
    r.up = g_rank > 0 ? g_rank - 1 : MPI_PROC_NULL;
    r.down = g_rank < g_size - 1 ? g_rank + 1 : MPI_PROC_NULL;
    /* Alone, a rank has nothing to overlap the interior with; --no-overlap
     * leaves the choice to the queue (on PoCL: routing). */
    r.overlap = g_size > 1 && !o.no_overlap ? KA_LAUNCH_ASYNC : 0;

    char sel[64];
    pick_device(&o, sel, sizeof sel);
    if (ka_device_open(sel, &r.dev) != KA_OK) DIE("cannot open device '%s': %s", sel, ka_last_error());
    const ka_device_info *info;
    KA_CHECK(ka_device_get_info(r.dev, &info));
    KA_CHECK(ka_queue_create(r.dev, NULL, &r.q));
    ka_program prog;
    if (ka_program_build(r.dev, heat_src, NULL, &prog) != KA_OK) DIE("ka_program_build: %s", ka_last_error());
    uint32_t hits = 0, all_hits = 0;
    KA_CHECK(ka_program_cache_hits(prog, &hits));
    KA_CHECK(ka_kernel_get(prog, "heat_rows", NULL, &r.k));

    size_t row = (size_t)o.nx * sizeof(float), bytes = row * (r.rows + 2);
    KA_CHECK(ka_buffer_create(r.dev, bytes, &r.u));
    KA_CHECK(ka_buffer_create(r.dev, bytes, &r.v));
    float *h = calloc(1, bytes);
    if (!h) DIE("out of host memory");
    /* The halo rows' host side: 2 send rows, 2 x 2 receive rows, page-locked
     * on CUDA (transfers at full bus speed), plain aligned memory elsewhere. */
    void *io_mem;
    KA_CHECK(ka_host_alloc(r.dev, row * 6, &io_mem));
    float *io = io_mem;
    for (uint32_t i = 1; i <= r.rows; i++)
        for (uint32_t x = 0; x < o.nx; x++) h[(size_t)i * o.nx + x] = initial(r.g0 + i - 1, x, o.nx, o.ny);
    KA_CHECK(ka_buffer_write(r.q, r.u, 0, h, bytes));
    KA_CHECK(ka_buffer_write(r.q, r.v, 0, h, bytes));

    ka_native_buffer nb;
    KA_CHECK(ka_buffer_get_native(r.u, &nb));
    int aware = info->backend == KA_BACKEND_CUDA && nb.address && mpi_cuda_aware();
    int device_path = !strcmp(o.exchange, "device") || (!strcmp(o.exchange, "auto") && aware);
    if (device_path && !aware)
        DIE("--exchange device needs a CUDA device and a CUDA-aware MPI (device %s; MPI %s CUDA-aware)", sel,
            mpi_cuda_aware() ? "is" : "is not");
    /* Every rank must take the same path: a mix would exchange garbage. */
    int path_min = device_path, path_max = device_path;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &path_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &path_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (path_min != path_max) device_path = 0;
    if (!o.quiet)
        printf("mpi_heat: rank %d of %d: rows %u-%u on %s (%s), %s exchange\n", g_rank, g_size, r.g0,
               r.g0 + r.rows - 1, info->name, info->selector, device_path ? "device" : "host");

    float *send[2] = {io, io + o.nx};
    float *recv[2][2] = {{io + 2 * o.nx, io + 3 * o.nx}, {io + 4 * o.nx, io + 5 * o.nx}};
    ka_event last = KA_NULL_EVENT;
    /* The first two steps build each launch size's work-group function
     * (PoCL compiles them at first use): timed from the third. */
    double t0 = 0;
    uint32_t warm = o.steps > 4 ? 2 : 0;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (uint32_t s = 0; s < o.steps; s++) {
        if (s == warm) {
            KA_CHECK(ka_queue_finish(r.q));
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            t0 = MPI_Wtime();
            g_exchange = 0;
        }
        if (device_path) step_device(&r, &last);
        else step_host(&r, send, recv, (int)(s & 1));
    }
    if (last.id) coop_wait(&last, 1, NULL, 0);
    KA_CHECK(ka_queue_finish(r.q));
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_CHECK(MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    double xmax = 0;
    MPI_CHECK(MPI_Reduce(&g_exchange, &xmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&hits, &all_hits, 1, MPI_UINT32_T, MPI_SUM, 0, MPI_COMM_WORLD));

    /* The grid on rank 0: each rank's own rows. */
    KA_CHECK(ka_buffer_read(r.q, h, r.u, row, row * r.rows));
    float *grid = NULL;
    int *counts = NULL, *displs = NULL;
    if (g_rank == 0) {
        grid = malloc(row * o.ny);
        counts = malloc(sizeof(int) * (size_t)g_size);
        displs = malloc(sizeof(int) * (size_t)g_size);
        if (!grid || !counts || !displs) DIE("out of host memory for the grid");
        for (int i = 0, at = 0; i < g_size; i++) {
            counts[i] = (int)((o.ny / (uint32_t)g_size + ((uint32_t)i < o.ny % (uint32_t)g_size)) * o.nx);
            displs[i] = at;
            at += counts[i];
        }
    }
    MPI_CHECK(MPI_Gatherv(h, (int)(r.rows * o.nx), MPI_FLOAT, grid, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD));

    rc = 0;
    if (g_rank == 0) {
        uint32_t timed = o.steps - warm;
        printf("mpi_heat: %d ranks, %ux%u grid, %u steps, %s exchange: %.2f us per step (%u timed)\n", g_size, o.nx,
               o.ny, o.steps, device_path ? "device" : "host", timed ? t * 1e6 / timed : 0.0, timed);
        if (g_size > 1 && timed && tmax > 0)
            printf("mpi_heat: exchange: %.2f us per step, %.1f%% of the step (the slowest rank; the interior runs "
                   "meanwhile)\n", xmax * 1e6 / timed, 100.0 * xmax / tmax);
        printf("mpi_heat: kernel cache: %u of %d builds loaded from the cache\n", all_hits, g_size);
        if (o.out) {
            FILE *f = fopen(o.out, "wb");
            if (!f || fwrite(grid, row, o.ny, f) != o.ny || fclose(f) != 0) DIE("cannot write %s", o.out);
        }
        if (o.check) {
            float *ref = malloc(row * o.ny);
            if (!ref) DIE("out of host memory for the reference");
            for (uint32_t g = 0; g < o.ny; g++)
                for (uint32_t x = 0; x < o.nx; x++) ref[(size_t)g * o.nx + x] = initial(g, x, o.nx, o.ny);
            serial_heat(ref, o.nx, o.ny, o.steps);
            size_t bad = 0, first = 0;
            for (size_t i = (size_t)o.nx * o.ny; i-- > 0;)
                if (memcmp(&ref[i], &grid[i], sizeof(float)) != 0) bad++, first = i;
            if (bad) {
                printf("mpi_heat: check: %zu of %zu values differ from the serial C loop; first at row %zu column %zu: "
                       "%.9g, expected %.9g\n", bad, (size_t)o.nx * o.ny, first / o.nx, first % o.nx,
                       (double)grid[first], (double)ref[first]);
                rc = 1;
            } else {
                printf("mpi_heat: check: bit for bit equal to the serial C loop\n");
            }
            free(ref);
        }
    }
    free(grid);
    free(counts);
    free(displs);
    free(h);
    KA_CHECK(ka_host_free(r.dev, io));
    KA_CHECK(ka_buffer_release(r.u));
    KA_CHECK(ka_buffer_release(r.v));
    KA_CHECK(ka_program_release(prog));
    KA_CHECK(ka_queue_release(r.q));
    KA_CHECK(ka_device_close(r.dev));
    MPI_CHECK(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_Finalize();
    return rc;
}
