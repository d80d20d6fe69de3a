/* Program builds: the source handed to OpenCL (the prelude, the user's source
 * with KA_KERNEL rewritten, PoCL's size probes), the options, the persistent
 * kernel cache, and the build for `basic` when routing first needs it. */
#include "cl_internal.h"
#include "kdecl.h"

#include <stdio.h>
#include <string.h>

/* The probes' file name in #line, so a build log that names it is theirs. */
#define PROBE_FILE "libka-size-probes"

static ka_status compile(ka__cl_dev *cd, cl_device_id dev, const char *src, const char *opts, cl_program *out) {
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
    *out = prog;
    return KA_OK;
}

static ka_status build_for(ka__program *p, cl_device_id dev, const char *src, const char *opts, cl_program *out) {
    ka__cl_dev *cd = ka__cl_dev_of(p->dev);
    /* The persistent kernel cache first (cl_kcache.c); any trouble there
     * just means compiling. A miss holds the entry's lock until stored. */
    ka__kcache_key key;
    bool cache = ka__kcache_enabled();
    if (cache) {
        ka__cl_cache_key(p->dev, dev, src, opts, &key);
        if (ka__cl_cache_load(cd, dev, &key, opts, out)) {
            atomic_fetch_add_explicit(&p->cache_hits, 1, memory_order_relaxed);
            return KA_OK;
        }
    }
    ka_status st = compile(cd, dev, src, opts, out);
    if (cache) {
        if (st == KA_OK) ka__cl_cache_store(*out, dev, &key);
        ka__kcache_unlock(&key);
    }
    return st;
}

static void emit(char *out, size_t *len, const char *p, size_t n) {
    if (out) memcpy(out + *len, p, n);
    *len += n;
}

/* The size of a by-value parameter whose type OpenCL names but does not
 * size (a struct, a typedef of one): for each, a kernel that never runs,
 * whose required work-group width is sizeof(the type), appended after the
 * user's source; clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)
 * reads it back (cl_kernel.c), so ka_launch can refuse KA_ARG_BYTES of
 * another size. Types spelled with scalar words, pointers and local memory
 * need no probe. Written into out when out is not NULL; returns the length. */
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
static size_t rewrite_kernels(const char *s, char *out, bool asserts) {
    static const char to[] = "KA__KERNEL_OPEN", hidden[] = " KA__ASSERT_PARAMS";
    size_t len = 0;
    int open = -1; /* inside a rewritten parameter list: its parenthesis depth */
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
                open = asserts ? 0 : -1;
                continue;
            }
        } else {
            /* With ka_assert, the hidden parameters close the list. */
            if (open >= 0 && *s == '(') open++;
            else if (open >= 0 && *s == ')' && open-- == 0) emit(out, &len, hidden, sizeof hidden - 1);
            s++;
        }
        emit(out, &len, b, (size_t)(s - b));
    }
    return len;
}

/* Prelude + user source (KA_KERNEL rewritten, + size probes), one allocation. */
static ka_status compose_source(const ka__program *p, bool probes, char **src, size_t *len) {
    static const char line[] = "\n#line 1\n";
    size_t plen = strlen(ka__prelude_opencl), ulen = rewrite_kernels(p->source, NULL, p->asserts);
    size_t prlen = probes ? size_probes(p->source, NULL) : 0;
    size_t total = plen + sizeof line + ulen + prlen;
    *len = total;
    char *w = *src = ka__alloc(total);
    if (!w) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    memcpy(w, ka__prelude_opencl, plen);
    memcpy(w += plen, line, sizeof line - 1);
    rewrite_kernels(p->source, w += sizeof line - 1, p->asserts);
    if (prlen) size_probes(p->source, w + ulen);
    w[ulen + prlen] = 0;
    return KA_OK;
}

/* Builds p's source, with cp's probes and options, for dev into *out. */
static ka_status build_source(ka__program *p, const ka__cl_prog *cp, cl_device_id dev, cl_program *out) {
    char *src;
    size_t slen;
    ka_status st = compose_source(p, cp->probes, &src, &slen);
    if (st != KA_OK) return st;
    st = build_for(p, dev, src, cp->opts, out);
    ka__free(src, slen);
    return st;
}

ka_status ka__cl_program_build(ka__program *p, ka__variant *v, const char *options) {
    ka__cl_dev *cd = ka__cl_dev_of(p->dev);
    ka__cl_prog *cp = ka__calloc(1, sizeof *cp);
    if (!cp) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    /* Only PoCL needs the size probes: a conformant clSetKernelArg refuses a
     * wrong size itself (CL_INVALID_ARG_SIZE), and NVIDIA's compiler failed
     * in ptxas on a probe. */
    cp->probes = cd->pocl;
    /* The full options, kept for building on `basic` later. */
    cp->opts_len = strlen(options) + 64;
    ka_status st = KA_OK;
    if (!(cp->opts = ka__alloc(cp->opts_len)))
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    else
        snprintf(cp->opts, cp->opts_len, "%s -cl-kernel-arg-info %s", cd->std_option, options);
    if (st == KA_OK) st = build_source(p, cp, cd->device, &cp->main);
    /* A size probe the compiler refused (a type it cannot take sizeof of
     * where the probes stand): the program without them, whose log is then
     * the user's own. */
    if (st != KA_OK && cp->probes && st != KA_ERR_OUT_OF_MEMORY && strstr(ka_last_error(), PROBE_FILE)) {
        cp->probes = false;
        st = build_source(p, cp, cd->device, &cp->main);
    }
    if (st != KA_OK) {
        ka__free(cp->opts, cp->opts_len);
        ka__free(cp, sizeof *cp);
        return st;
    }
    pthread_mutex_init(&cp->lock, NULL);
    v->native = cp;
    return KA_OK;
}

ka_status ka__cl_program_inline(ka__program *p, ka__cl_prog *cp) {
    pthread_mutex_lock(&cp->lock);
    ka_status st = cp->inl ? KA_OK : build_source(p, cp, ka__cl_dev_of(p->dev)->inline_device, &cp->inl);
    pthread_mutex_unlock(&cp->lock);
    return st;
}

void ka__cl_program_release(ka__program *p, ka__variant *v) {
    (void)p;
    ka__cl_prog *cp = v->native;
    clReleaseProgram(cp->main);
    if (cp->inl) clReleaseProgram(cp->inl);
    pthread_mutex_destroy(&cp->lock);
    ka__free(cp->opts, cp->opts_len);
    ka__free(cp, sizeof *cp);
}
