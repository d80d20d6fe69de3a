/* The OpenCL back-end: queues, buffers, programs, kernels, launches, events. */
#include "cl_internal.h"
#include "kdecl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_CHECK(call, expr)                                 \
    do {                                                     \
        cl_int err_ = (expr);                                \
        if (KA_UNLIKELY(err_ != CL_SUCCESS)) return ka__cl_fail(call, err_); \
    } while (0)

static cl_dev *dev_of(const ka__device *d) { return d->native; }

/* ---- queues ------------------------------------------------------------ */
/* Work-items up to which a PoCL launch runs on `basic`, in the calling thread,
 * unless $KA_INLINE_MAX_ITEMS or the queue says otherwise. Measured with
 * `ka bench route` (docs/BENCHMARKS.md): below this, `basic`'s launch + wait
 * beats the threaded device's. */
#define KA__INLINE_DEFAULT 262144
/* An inline launch slower than this would have been faster on the threaded
 * device (its launch + wait costs 20-60 us on PoCL, the work then splits over
 * the cores). */
#define KA__INLINE_SLOW_NS 100000

/* A non-negative decimal from the environment, else dflt (a sign, other
 * characters or an overflow also give dflt). */
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *e = getenv(name);
    if (!e || *e < '0' || *e > '9') return dflt;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    return *end || errno ? dflt : (uint64_t)v;
}

static uint64_t inline_limit(const ka__queue *q) {
    if (q->inline_max > 0) return (uint64_t)q->inline_max;
    if (q->inline_max < 0) return 0;
    return env_u64("KA_INLINE_MAX_ITEMS", KA__INLINE_DEFAULT);
}

static ka_status cl_queue_create(ka__queue *q) {
    cl_dev *cd = dev_of(q->dev);
    cl_queue *cq = ka__calloc(1, sizeof *cq);
    if (!cq) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_queue_create: out of memory");
    cl_int err;
    cq->main = clCreateCommandQueue(cd->context, cd->device, 0, &err);
    if (err != CL_SUCCESS) {
        ka__free(cq, sizeof *cq);
        return ka__cl_fail("clCreateCommandQueue", err);
    }
    cq->inline_max = inline_limit(q);
    /* Past 1000 s is as good as never timed out; clamped, not wrapped. */
    uint64_t slow_us = env_u64("KA_INLINE_SLOW_US", KA__INLINE_SLOW_NS / 1000);
    cq->inline_slow_ns = (int64_t)(slow_us > 1000000000u ? 1000000000u : slow_us) * 1000;
    if (cd->inline_device && cq->inline_max) {
        cq->inl = clCreateCommandQueue(cd->context, cd->inline_device, 0, &err);
        if (err != CL_SUCCESS) {
            clReleaseCommandQueue(cq->main);
            ka__free(cq, sizeof *cq);
            return ka__cl_fail("clCreateCommandQueue(basic)", err);
        }
    }
    q->native = cq;
    return KA_OK;
}

static void cl_queue_release(ka__queue *q) {
    cl_queue *cq = q->native;
    clReleaseCommandQueue(cq->main);
    if (cq->inl) clReleaseCommandQueue(cq->inl);
    ka__free(cq, sizeof *cq);
}

/* Finishes main and records that every command counted before covered it. */
static ka_status finish_main(cl_queue *cq) {
    uint64_t n = atomic_load(&cq->main_enqueued);
    CL_CHECK("clFinish", clFinish(cq->main));
    uint64_t done = atomic_load(&cq->main_finished);
    while (done < n && !atomic_compare_exchange_weak(&cq->main_finished, &done, n)) {}
    return KA_OK;
}

static ka_status cl_queue_finish(ka__queue *q) {
    cl_queue *cq = q->native;
    ka_status st = finish_main(cq);
    if (st != KA_OK) return st;
    if (cq->inl) CL_CHECK("clFinish(basic)", clFinish(cq->inl));
    return KA_OK;
}

static ka_status cl_queue_flush(ka__queue *q) {
    CL_CHECK("clFlush", clFlush(((cl_queue *)q->native)->main));
    return KA_OK;
}

/* Commands on the main queue are counted once enqueued (counted(q, async,
 * clEnqueue...(main_q(q), ...))); an inline launch finishes main first when
 * the count is ahead of what a clFinish covered. Counting after the enqueue returns matters:
 * counted before, another thread's finish_main could take the count, finish
 * before the command is in the queue, and mark it finished. */
static cl_command_queue main_q(ka__queue *q) { return ((cl_queue *)q->native)->main; }

static cl_int counted(ka__queue *q, bool async, cl_int err) {
    /* A blocking command is complete on return, and so is all before it (an
     * in-order queue): only commands that may still run count. */
    if (KA_LIKELY(err == CL_SUCCESS) && async)
        atomic_fetch_add_explicit(&((cl_queue *)q->native)->main_enqueued, 1, memory_order_release);
    return err;
}

/* ---- buffers ----------------------------------------------------------- */
static ka_status cl_buffer_create(ka__buffer *b) {
    cl_int err;
    cl_mem m = clCreateBuffer(dev_of(b->dev)->context, CL_MEM_READ_WRITE, b->bytes, NULL, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateBuffer", err);
    b->native = m;
    return KA_OK;
}

static void cl_buffer_release(ka__buffer *b) { clReleaseMemObject(b->native); }

static ka_status cl_buffer_write(ka__queue *q, ka__buffer *b, size_t off, size_t n, const void *src, void **ev) {
    CL_CHECK("clEnqueueWriteBuffer",
             counted(q, ev != NULL,
                     clEnqueueWriteBuffer(main_q(q), b->native, ev ? CL_FALSE : CL_TRUE, off, n, src, 0, NULL,
                                          (cl_event *)ev)));
    return KA_OK;
}

static ka_status cl_buffer_read(ka__queue *q, ka__buffer *b, size_t off, size_t n, void *dst, void **ev) {
    CL_CHECK("clEnqueueReadBuffer",
             counted(q, ev != NULL,
                     clEnqueueReadBuffer(main_q(q), b->native, ev ? CL_FALSE : CL_TRUE, off, n, dst, 0, NULL,
                                         (cl_event *)ev)));
    return KA_OK;
}

static ka_status cl_buffer_copy(ka__queue *q, ka__buffer *s, size_t so, ka__buffer *d, size_t dof, size_t n, void **ev) {
    cl_event e;
    CL_CHECK("clEnqueueCopyBuffer",
             counted(q, ev != NULL, clEnqueueCopyBuffer(main_q(q), s->native, d->native, so, dof, n, 0, NULL, &e)));
    if (ev) {
        *ev = e;
        return KA_OK;
    }
    cl_int err = clWaitForEvents(1, &e);
    clReleaseEvent(e);
    CL_CHECK("clWaitForEvents", err);
    return KA_OK;
}

static ka_status cl_buffer_fill(ka__queue *q, ka__buffer *b, const void *pat, size_t psz, size_t off, size_t n,
                                void **ev) {
    cl_event e;
    CL_CHECK("clEnqueueFillBuffer",
             counted(q, ev != NULL, clEnqueueFillBuffer(main_q(q), b->native, pat, psz, off, n, 0, NULL, &e)));
    if (ev) {
        *ev = e;
        return KA_OK;
    }
    cl_int err = clWaitForEvents(1, &e);
    clReleaseEvent(e);
    CL_CHECK("clWaitForEvents", err);
    return KA_OK;
}

/* ---- programs ---------------------------------------------------------- */
static ka_status build_for(ka__program *p, cl_device_id dev, const char *src, const char *opts, cl_program *out) {
    cl_dev *cd = dev_of(p->dev);
    /* The persistent kernel cache first (cl_kcache.c); any trouble there
     * just means compiling. */
    ka__kcache_key key;
    bool cache = ka__kcache_enabled();
    if (cache) {
        ka__cl_cache_key(p->dev, dev, src, opts, &key);
        if (ka__cl_cache_load(cd, dev, &key, opts, out)) {
            atomic_fetch_add_explicit(&p->cache_hits, 1, memory_order_relaxed);
            return KA_OK;
        }
    }
    cl_int err;
    cl_program prog = clCreateProgramWithSource(cd->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateProgramWithSource", err);
    err = clBuildProgram(prog, 1, &dev, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        ka_status st = ka__cl_fail("clBuildProgram", err);
        size_t n = 0;
        if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 1) {
            char *log = ka__alloc(n);
            if (log && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
                log[n - 1] = 0;
                ka__append_detail("\nbuild log:\n");
                ka__append_detail(log);
            } else if (!log) {
                /* Without its log the failure cannot be told apart (nor
                 * shown): out of memory, like every allocation failure. */
                st = ka__fail(KA_ERR_OUT_OF_MEMORY, "clBuildProgram failed and its %zu-byte build log could not be allocated", n);
            } else {
                ka__append_detail("\n(build log unavailable)");
            }
            ka__free(log, n);
        }
        clReleaseProgram(prog);
        return st;
    }
    if (cache) ka__cl_cache_store(prog, dev, &key);
    *out = prog;
    return KA_OK;
}

/* The size of a by-value parameter whose type OpenCL names but does not
 * size (a struct, a typedef of one): for each, a kernel that never runs,
 * whose required work-group width is sizeof(the type), appended after the
 * user's source; clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)
 * reads it back (cl_kernel_create), so ka_launch can refuse KA_ARG_BYTES of
 * another size. Types spelled with scalar words, pointers and local memory
 * need no probe. Written into out when out is not NULL; returns the length. */
#define PROBE_FILE "libka-size-probes"
static void emit(char *out, size_t *len, const char *p, size_t n) {
    if (out) memcpy(out + *len, p, n);
    *len += n;
}

static size_t size_probes(const char *src, char *out) {
    static const char head[] = "\n#line 1 \"" PROBE_FILE "\"\n";
    static const char pre[] = "__kernel __attribute__((reqd_work_group_size(sizeof(", mid[] = "), 1, 1))) void ka__sizeof_";
    size_t len = 0;
    ka__kparam par[KA_MAX_ARGS];
    const char *name;
    size_t nl;
    uint32_t n;
    while (ka__kdecl_next(&src, &name, &nl, par, KA_MAX_ARGS, &n)) {
        for (uint32_t i = 0; i < n; i++) {
            const char *tb = par[i].type, *te = par[i].type_end;
            if (memchr(tb, '*', (size_t)(te - tb)) || memchr(tb, '[', (size_t)(te - tb)) || ka__kdecl_scalar_type(tb, te) ||
                ka__kdecl_has(tb, te, "KA_LOCAL_ARG") || ka__kdecl_has(tb, te, "KA_CONST") ||
                ka__kdecl_has(tb, te, "KA_GLOBAL") || ka__kdecl_has(tb, te, "KA_LOCAL"))
                continue;
            if (!len) emit(out, &len, head, sizeof head - 1);
            char tail[24];
            int tl = snprintf(tail, sizeof tail, "_%u(void) {}\n", i);
            emit(out, &len, pre, sizeof pre - 1);
            emit(out, &len, tb, (size_t)(te - tb));
            emit(out, &len, mid, sizeof mid - 1);
            emit(out, &len, name, nl);
            emit(out, &len, tail, (size_t)tl);
        }
    }
    return len;
}

/* OpenCL C 1.2 has no variadic macros (s6.9.e; NVIDIA's compiler refuses
 * them), so KA_KERNEL(name, params...) cannot be a macro: each `KA_KERNEL(X,`
 * of the source becomes `KA__KERNEL_OPEN(X),`, and the prelude's
 * KA__KERNEL_OPEN(X) opens the parameter list with the hidden range
 * (include/ka_kernel_cl.h). X is everything before the first comma outside
 * parentheses. Comments and literals are copied as they are; no newline is
 * added or removed, so build log lines stay the user's. Written into out when
 * out is not NULL (no terminating NUL); returns the length. */
static size_t rewrite_kernels(const char *s, char *out) {
    static const char to[] = "KA__KERNEL_OPEN";
    size_t len = 0;
    while (*s) {
        const char *b = s;
        if ((s = ka__src_skip(b)) != b) {
            /* a comment or a literal, copied as it is */
        } else if (ka__ident_char(*s)) {
            while (ka__ident_char(*s) || *s == '.') s++; /* a word or a number */
            const char *p = s, *comma = NULL;
            if (s - b == 9 && !memcmp(b, "KA_KERNEL", 9)) {
                while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || (p[0] == '\\' && p[1] == '\n')) p++;
                if (*p == '(')
                    for (int depth = 0; *++p && *p != ';' && *p != '{';) {
                        if (*p == '(') depth++;
                        else if (*p == ')' && depth-- == 0) break;
                        else if (*p == ',' && depth == 0) {
                            comma = p;
                            break;
                        }
                    }
            }
            if (comma) { /* KA__KERNEL_OPEN, the text from '(' to the comma, ')' */
                emit(out, &len, to, sizeof to - 1);
                emit(out, &len, s, (size_t)(comma - s));
                emit(out, &len, ")", 1);
                s = comma;
                continue;
            }
        } else {
            s++;
        }
        emit(out, &len, b, (size_t)(s - b));
    }
    return len;
}

/* Prelude + user source (KA_KERNEL rewritten, + size probes), and the full
 * options, as one allocation each. */
static ka_status compose(ka__program *p, const char *options, bool probes, char **src, size_t *slen_out, char **opts,
                         size_t *olen_out) {
    static const char line[] = "\n#line 1\n";
    size_t plen = strlen(ka__prelude_opencl), ulen = rewrite_kernels(p->source, NULL);
    size_t prlen = probes ? size_probes(p->source, NULL) : 0;
    size_t total = plen + sizeof line + ulen + prlen;
    size_t olen = strlen(options) + 64;
    *src = ka__alloc(total);
    *opts = ka__alloc(olen);
    if (!*src || !*opts) {
        ka__free(*src, total);
        ka__free(*opts, olen);
        *src = *opts = NULL; /* nothing for the caller to free */
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    }
    char *w = *src;
    memcpy(w, ka__prelude_opencl, plen);
    memcpy(w += plen, line, sizeof line - 1);
    rewrite_kernels(p->source, w += sizeof line - 1);
    if (prlen) size_probes(p->source, w + ulen);
    w[ulen + prlen] = 0;
    snprintf(*opts, olen, "%s -cl-kernel-arg-info %s", dev_of(p->dev)->std_option, options);
    *slen_out = total;
    *olen_out = olen;
    return KA_OK;
}

static ka_status cl_program_build(ka__program *p, ka__variant *v, const char *options) {
    cl_dev *cd = dev_of(p->dev);
    cl_prog *cp = ka__calloc(1, sizeof *cp);
    if (!cp) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    char *src, *opts;
    size_t slen, olen;
    /* Only PoCL needs the size probes: a conformant clSetKernelArg refuses a
     * wrong size itself (CL_INVALID_ARG_SIZE), and NVIDIA's compiler failed
     * in ptxas on a probe. */
    cp->probes = strstr(p->dev->info.platform, "Portable Computing Language") != NULL;
    ka_status st = compose(p, options, cp->probes, &src, &slen, &opts, &olen);
    if (st != KA_OK) {
        ka__free(cp, sizeof *cp);
        return st;
    }
    st = build_for(p, cd->device, src, opts, &cp->main);
    ka__free(src, slen);
    /* A size probe the compiler refused (a type it cannot take sizeof of
     * where the probes stand): the program without them, whose log is then
     * the user's own. */
    if (st != KA_OK && cp->probes && st != KA_ERR_OUT_OF_MEMORY && strstr(ka_last_error(), PROBE_FILE)) {
        ka__free(opts, olen);
        cp->probes = false;
        st = compose(p, options, false, &src, &slen, &opts, &olen); /* on failure opts is NULL */
        if (st == KA_OK) {
            st = build_for(p, cd->device, src, opts, &cp->main);
            ka__free(src, slen);
        }
    }
    /* Kept for building on `basic` when a small launch first needs it. */
    cp->opts = opts;
    cp->opts_len = olen;
    if (st != KA_OK) {
        ka__free(cp->opts, cp->opts_len);
        ka__free(cp, sizeof *cp);
        return st;
    }
    pthread_mutex_init(&cp->lock, NULL);
    v->native = cp;
    return KA_OK;
}

static void cl_program_release(ka__program *p, ka__variant *v) {
    (void)p;
    cl_prog *cp = v->native;
    clReleaseProgram(cp->main);
    if (cp->inl) clReleaseProgram(cp->inl);
    pthread_mutex_destroy(&cp->lock);
    ka__free(cp->opts, cp->opts_len);
    ka__free(cp, sizeof *cp);
}

/* ---- kernels ----------------------------------------------------------- */
static uint32_t type_size(const char *t) {
    static const struct { const char *name; uint32_t size; } base[] = {
        {"char", 1}, {"uchar", 1}, {"bool", 1}, {"short", 2}, {"ushort", 2}, {"half", 2}, {"int", 4},
        {"uint", 4}, {"float", 4}, {"long", 8}, {"ulong", 8}, {"double", 8}, {"size_t", 8},
        {"ptrdiff_t", 8}, {"intptr_t", 8}, {"uintptr_t", 8}, {"ulong4", 32},
    };
    if (!strncmp(t, "unsigned ", 9)) t += 9, t = !strncmp(t, "char", 4) ? "uchar" : t;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        size_t n = strlen(base[i].name);
        if (strncmp(t, base[i].name, n)) continue;
        const char *rest = t + n;
        if (!*rest) return base[i].size;
        int w = 0;
        if (sscanf(rest, "%d", &w) == 1 && (w == 2 || w == 3 || w == 4 || w == 8 || w == 16))
            return base[i].size * (uint32_t)(w == 3 ? 4 : w);
    }
    return 0; /* struct or unknown: the driver checks the size */
}

/* A by-value parameter's size from its probe (size_probes), 0 if none. */
static uint32_t probed_size(ka__kernel *k, uint32_t i) {
    char name[160];
    if (snprintf(name, sizeof name, "ka__sizeof_%s_%u", k->name, i) >= (int)sizeof name) return 0;
    cl_int err;
    cl_kernel pk = clCreateKernel(((cl_prog *)k->var->native)->main, name, &err);
    if (err != CL_SUCCESS) return 0;
    size_t w[3] = {0, 0, 0};
    if (clGetKernelWorkGroupInfo(pk, dev_of(k->prog->dev)->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof w, w, NULL) !=
        CL_SUCCESS)
        w[0] = 0;
    clReleaseKernel(pk);
    return w[0] <= UINT32_MAX ? (uint32_t)w[0] : 0;
}

static ka_status cl_kernel_create(ka__kernel *k) {
    cl_dev *cd = dev_of(k->prog->dev);
    cl_int err;
    cl_kernel ck = clCreateKernel(((cl_prog *)k->var->native)->main, k->name, &err);
    if (err == CL_INVALID_KERNEL_NAME)
        return ka__fail(KA_ERR_KERNEL_NOT_FOUND, "ka_kernel_get: no kernel '%s' in the program (clCreateKernel: %s)",
                        k->name, ka__cl_error_name(err));
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateKernel", err);
    k->native = ck;
    cl_uint n = 0;
    CL_CHECK("clGetKernelInfo", clGetKernelInfo(ck, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL));
    char name[64] = "";
    if (n == 0 || clGetKernelArgInfo(ck, 0, CL_KERNEL_ARG_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
        strcmp(name, "ka__nd"))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_kernel_get: kernel '%s' is not declared with KA_KERNEL(...)", k->name);
    k->nargs = n - 1;
    k->sig = ka__calloc(k->nargs ? k->nargs : 1, sizeof *k->sig);
    if (!k->sig) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    cl_kern *kk = ka__calloc(1, sizeof *kk);
    if (!kk) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    pthread_mutex_init(&kk->lock, NULL);
    k->bk = kk;
    if (!(kk->cache = ka__calloc(k->nargs ? k->nargs : 1, sizeof(argcache))))
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_kernel_get: out of memory");
    for (cl_uint i = 1; i < n; i++) {
        ka__argsig *s = &k->sig[i - 1];
        cl_kernel_arg_address_qualifier aq = CL_KERNEL_ARG_ADDRESS_PRIVATE;
        char tname[64] = "";
        CL_CHECK("clGetKernelArgInfo(CL_KERNEL_ARG_ADDRESS_QUALIFIER)",
                 clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL));
        /* A type name longer than tname: CL_INVALID_VALUE, and the size stays unknown (0), checked by the driver. */
        if (clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_TYPE_NAME, sizeof tname, tname, NULL) != CL_SUCCESS) tname[0] = 0;
        if (clGetKernelArgInfo(ck, i, CL_KERNEL_ARG_NAME, sizeof s->name, s->name, NULL) != CL_SUCCESS) s->name[0] = 0;
        s->name[sizeof s->name - 1] = 0;
        tname[sizeof tname - 1] = 0;
        if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
            s->kind = KA__SIG_BUFFER;
            s->size = sizeof(cl_mem);
        } else if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) {
            s->kind = KA__SIG_LOCAL;
        } else {
            s->kind = KA__SIG_SCALAR;
            s->size = strchr(tname, '*') ? 0 : type_size(tname);
            if (!s->size && ((cl_prog *)k->var->native)->probes) s->size = probed_size(k, i - 1);
        }
    }
    size_t wg = 0, mult = 0;
    cl_ulong lm = 0;
    CL_CHECK("clGetKernelWorkGroupInfo",
             clGetKernelWorkGroupInfo(ck, cd->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
    /* Hints only: a driver that cannot say leaves them 0 (no preference, unknown). */
    if (clGetKernelWorkGroupInfo(ck, cd->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult, NULL))
        mult = 0;
    if (clGetKernelWorkGroupInfo(ck, cd->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL)) lm = 0;
    k->max_wg = wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
    k->pref_multiple = (uint32_t)mult;
    k->local_mem = lm;
    return KA_OK;
}

static void cl_kernel_release(ka__kernel *k) {
    if (k->native) clReleaseKernel(k->native);
    cl_kern *kk = k->bk;
    if (!kk) return;
    size_t n = sizeof(argcache) * (k->nargs ? k->nargs : 1);
    if (kk->inl) clReleaseKernel(kk->inl);
    ka__free(kk->cache, n);
    ka__free(kk->inl_cache, n);
    pthread_mutex_destroy(&kk->lock);
    ka__free(kk, sizeof *kk);
}

/* ---- launch ------------------------------------------------------------ */
static ka_status set_args(ka__kernel *k, cl_kernel ck, argcache *cache, uint64_t last_nd[4], const ka__launch *l,
                          const ka_arg *args, uint32_t nargs) {
    /* The hidden range argument is set only when it changed: argument values
     * persist on the cl_kernel. */
    if (KA_UNLIKELY((last_nd[0] ^ l->nd[0]) | (last_nd[1] ^ l->nd[1]) | (last_nd[2] ^ l->nd[2]) | (last_nd[3] ^ l->nd[3]))) {
        CL_CHECK("clSetKernelArg(hidden range)", clSetKernelArg(ck, 0, sizeof l->nd, l->nd));
        memcpy(last_nd, l->nd, sizeof l->nd);
    }
    for (uint32_t i = 0; i < nargs; i++) {
        const ka_arg *a = &args[i];
        argcache *c = &cache[i];
        uint64_t v = a->u.u64;
        cl_int err;
        switch (a->kind) {
        case KA_ARG_BUFFER: /* resolved by the core */
            v = (uint64_t)(uintptr_t)l->mem[i];
            if (c->kind == KA_ARG_BUFFER && c->v == v) continue;
            err = clSetKernelArg(ck, i + 1, sizeof(cl_mem), &l->mem[i]);
            break;
        case KA_ARG_LOCAL:
            if (c->kind == KA_ARG_LOCAL && c->size == a->size) continue;
            err = clSetKernelArg(ck, i + 1, a->size, NULL);
            break;
        case KA_ARG_BYTES: /* not cached: the bytes live behind a pointer */
            c->kind = 0;
            err = clSetKernelArg(ck, i + 1, a->size, a->u.ptr);
            if (KA_UNLIKELY(err != CL_SUCCESS)) goto fail;
            continue;
        case KA_ARG_SCALAR:
            if (c->kind == KA_ARG_SCALAR && c->size == a->size && c->v == v) continue;
            err = clSetKernelArg(ck, i + 1, a->size, &a->u);
            break;
        default: /* reaches here only past the fast check: garbage of exactly an unknown argument's tag */
            c->kind = 0;
            return ka__fail(KA_ERR_ARG_TYPE, "ka_launch: kernel '%s' argument %u ('%s'): unknown argument kind %u",
                            k->name, i, k->sig[i].name, a->kind);
        }
        if (KA_UNLIKELY(err != CL_SUCCESS)) {
        fail:
            c->kind = 0;
            ka_status st = ka__cl_fail("clSetKernelArg", err);
            return ka__fail(st, "ka_launch: kernel '%s' argument %u ('%s'): clSetKernelArg: %s", k->name, i, k->sig[i].name,
                            ka__cl_error_name(err));
        }
        c->v = v;
        c->size = a->size;
        c->kind = a->kind;
    }
    return KA_OK;
}

/* First inline launch of a kernel: its program built for `basic`, and the
 * kernel made there. Off the hot path; serialized by the kernel's mutex. */
static ka_status make_inline(ka__kernel *k, cl_kern *kk) {
    cl_dev *cd = dev_of(k->prog->dev);
    cl_prog *cp = k->var->native;
    ka_status st = KA_OK;
    pthread_mutex_lock(&kk->lock);
    if (kk->inl) goto out;
    pthread_mutex_lock(&cp->lock);
    if (!cp->inl) {
        char *src, *opts;
        size_t slen, olen;
        st = compose(k->prog, "", cp->probes, &src, &slen, &opts, &olen);
        if (st == KA_OK) {
            ka__free(opts, olen);
            st = build_for(k->prog, cd->inline_device, src, cp->opts, &cp->inl);
            ka__free(src, slen);
        }
    }
    pthread_mutex_unlock(&cp->lock);
    if (st != KA_OK) goto out;
    if (!kk->inl_cache && !(kk->inl_cache = ka__calloc(k->nargs ? k->nargs : 1, sizeof(argcache)))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_launch: out of memory");
        goto out;
    }
    cl_int err;
    cl_kernel ck = clCreateKernel(cp->inl, k->name, &err);
    if (err != CL_SUCCESS) {
        st = ka__cl_fail("clCreateKernel(basic)", err);
        goto out;
    }
    atomic_store_explicit((void *_Atomic *)&kk->inl, ck, memory_order_release);
out:
    pthread_mutex_unlock(&kk->lock);
    return st;
}

/* A small launch on PoCL's `basic` device: it runs inside clFlush, in this
 * thread. Ordering with the threaded device is kept on the host: pending work
 * there is finished first, and the inline launch is complete on return, so
 * later commands anywhere see its results. For the same reason it needs no
 * native event: a launch that asks for one gets *ev = NULL, which the core
 * binds as an event complete at once (saving PoCL's event, a status query and
 * a release per launch + wait). */
static ka_status launch_inline(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                               void **ev) {
    cl_queue *cq = q->native;
    cl_kern *kk = k->bk;
    ka_status st;
    if (KA_UNLIKELY(!atomic_load_explicit((void *_Atomic *)&kk->inl, memory_order_acquire)) &&
        (st = make_inline(k, kk)) != KA_OK)
        return st;
    if (atomic_load_explicit(&cq->main_enqueued, memory_order_relaxed) !=
            atomic_load_explicit(&cq->main_finished, memory_order_relaxed) &&
        (st = finish_main(cq)) != KA_OK)
        return st;
    ka__spin_lock(&cq->inl_spin);
    ka__spin_lock(&kk->inl_spin);
    /* Few work-items need not mean little work: the second inline launch of
     * a kernel and every 8th after are timed (the first may compile), and
     * two slow ones in a row send the kernel to the threaded device for good. */
    bool timed = (kk->inl_count++ & 7) == 1 && cq->inline_slow_ns;
    int64_t t0 = timed ? ka__now_ns() : 0;
    st = set_args(k, kk->inl, kk->inl_cache, kk->inl_nd, l, args, nargs);
    if (KA_LIKELY(st == KA_OK)) {
        if (ev) *ev = NULL;
        cl_int err = clEnqueueNDRangeKernel(cq->inl, kk->inl, l->dims, NULL, l->global, l->local, 0, NULL, NULL);
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel(basic)", err);
        else if (KA_UNLIKELY((err = clFlush(cq->inl)) != CL_SUCCESS)) st = ka__cl_fail("clFlush(basic)", err);
    }
    /* Launches that ran inline. Under the queue's inline lock: a plain
     * increment, no locked instruction. */
    if (KA_LIKELY(st == KA_OK))
        atomic_store_explicit(&cq->inline_launches,
                              atomic_load_explicit(&cq->inline_launches, memory_order_relaxed) + 1, memory_order_relaxed);
    if (timed) {
        kk->slow_streak = ka__now_ns() - t0 > cq->inline_slow_ns ? kk->slow_streak + 1 : 0;
        if (kk->slow_streak >= 2) {
            atomic_store_explicit(&kk->demoted, 1, memory_order_relaxed);
            ka__log(KA_LOG_INFO, "kernel '%s' runs longer than %lld us inline: launching it on the threaded device",
                    k->name, (long long)(cq->inline_slow_ns / 1000));
        }
    }
    ka__spin_unlock(&kk->inl_spin);
    ka__spin_unlock(&cq->inl_spin);
    return st;
}

static ka_status cl_launch(ka__queue *q, ka__kernel *k, const ka__launch *l, const ka_arg *args, uint32_t nargs,
                           void **ev) {
    cl_queue *cq = q->native;
    cl_kern *kk = k->bk;
    if (cq->inl && l->items <= cq->inline_max &&
        !atomic_load_explicit(&kk->demoted, memory_order_relaxed))
        return launch_inline(q, k, l, args, nargs, ev);
    /* clSetKernelArg + enqueue on one cl_kernel must not interleave between
     * threads. */
    ka__spin_lock(&kk->spin);
    ka_status st = set_args(k, k->native, kk->cache, kk->last_nd, l, args, nargs);
    if (KA_LIKELY(st == KA_OK)) {
        cl_int err = counted(q, true, clEnqueueNDRangeKernel(main_q(q), k->native, l->dims, NULL, l->global, l->local, 0,
                                                       NULL, (cl_event *)ev));
        if (KA_UNLIKELY(err != CL_SUCCESS)) st = ka__cl_fail("clEnqueueNDRangeKernel", err);
    }
    ka__spin_unlock(&kk->spin);
    return st;
}

/* ---- events ------------------------------------------------------------ */
static int cl_event_query(void *ev, ka_status *st) {
    cl_int s = CL_QUEUED;
    cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (err != CL_SUCCESS) s = err;
    if (s == CL_COMPLETE) return 1;
    if (s < 0) {
        *st = KA_ERR_KERNEL_FAILED;
        ka__log(KA_LOG_ERROR, "command failed on the device: %s", ka__cl_error_name(s));
        return -1;
    }
    return 0;
}

static const char *cl_event_error(void *ev) {
    cl_int s = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) != CL_SUCCESS || s >= 0) return NULL;
    return ka__cl_error_name(s);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *ctx) {
    (void)ev;
    ka__event_native_done(ctx, status < 0 ? KA_ERR_KERNEL_FAILED : KA_OK);
}

static ka_status cl_event_callback(void *ev, ka__native_cb cb, void *ctx) {
    (void)cb; /* always ka__event_native_done: called directly, so nothing is stored */
    CL_CHECK("clSetEventCallback", clSetEventCallback(ev, CL_COMPLETE, on_complete, ctx));
    return KA_OK;
}

static ka_status cl_event_wait(void *ev) {
    cl_event e = ev;
    cl_int err = clWaitForEvents(1, &e);
    if (err == CL_SUCCESS) return KA_OK;
    ka__cl_fail("clWaitForEvents", err);
    return KA_ERR_KERNEL_FAILED;
}

static void cl_event_release(void *ev) { clReleaseEvent(ev); }

static void cl_queue_native(ka__queue *q, ka_native_queue *out) {
    cl_queue *cq = q->native;
    out->queue = cq->main;
    out->inline_queue = cq->inl;
}

static void cl_device_native(ka__device *d, ka_native_device *out) {
    cl_dev *cd = d->native;
    out->device = cd->device;
    out->context = cd->context;
    out->inline_device = cd->inline_device;
}

static void cl_queue_stats(ka__queue *q, ka_queue_stats *out) {
    cl_queue *cq = q->native;
    out->inline_max_items = cq->inl ? cq->inline_max : 0;
    out->inline_launches = atomic_load_explicit(&cq->inline_launches, memory_order_relaxed);
}

const ka__backend ka__opencl_backend = {
    .version = KA__BACKEND_VERSION,
    .name = "opencl",
    .kind = KA_BACKEND_OPENCL,
    .enumerate = ka__cl_enumerate,
    .selects = ka__cl_selects,
    .preferred = ka__cl_preferred,
    .device_open = ka__cl_device_open,
    .device_close = ka__cl_device_close,
    .queue_create = cl_queue_create,
    .queue_release = cl_queue_release,
    .queue_finish = cl_queue_finish,
    .queue_flush = cl_queue_flush,
    .buffer_create = cl_buffer_create,
    .buffer_release = cl_buffer_release,
    .buffer_write = cl_buffer_write,
    .buffer_read = cl_buffer_read,
    .buffer_copy = cl_buffer_copy,
    .buffer_fill = cl_buffer_fill,
    .program_build = cl_program_build,
    .program_release = cl_program_release,
    .kernel_create = cl_kernel_create,
    .kernel_release = cl_kernel_release,
    .launch = cl_launch,
    .event_query = cl_event_query,
    .event_error = cl_event_error,
    .event_callback = cl_event_callback,
    .event_wait = cl_event_wait,
    .event_release = cl_event_release,
    .device_native = cl_device_native,
    .queue_native = cl_queue_native,
    .queue_stats = cl_queue_stats,
};
