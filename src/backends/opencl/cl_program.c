/* The OpenCL build hooks (src/core/build.c runs the pipeline): the text that
 * stands for the user's source (KA_KERNEL rewritten), PoCL's size probes
 * appended after it, the options every build starts with, and the compile. */
#include "cl_internal.h"
#include "kdecl.h"

#include <stdio.h>
#include <string.h>

ka_status ka__cl_compile_for(ka__build *b, cl_device_id dev, void **binary, size_t *size, void **module) {
    const char *src = b->source;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ka__cl_dev_of(b->prog->dev)->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) return ka__cl_fail("clCreateProgramWithSource", err);
    err = clBuildProgram(prog, 1, &dev, b->options, NULL, NULL);
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
    /* clBuildProgram gave a usable program: the module; the binary only for the cache. */
    *module = prog;
    if (b->want_binary) *binary = ka__cl_program_binary(prog, dev, size);
    return KA_OK;
}

ka_status ka__cl_compile(ka__build *b, void **binary, size_t *size, void **module) {
    return ka__cl_compile_for(b, ka__cl_dev_of(b->prog->dev)->device, binary, size, module);
}

void ka__cl_module_release(ka__program *p, void *module, uint32_t target) {
    (void)p;
    (void)target;
    clReleaseProgram(module);
}

const char *ka__cl_build_options(const ka__device *d) { return ka__cl_dev_of(d)->build_options; }

static void emit(char *out, size_t *len, const char *p, size_t n) {
    if (out) memcpy(out + *len, p, n);
    *len += n;
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Whether [b, e), blanks around it, is one identifier over
 * KA__NAME_DIRECT_MAX characters: then its alias into alias and the newlines
 * of [b, e) into *lines, which the rewrite keeps. A name spelled otherwise
 * (a splice or a comment in or around it, a macro) is left as it is. */
static bool long_name(const char *b, const char *e, char *alias, int *lines) {
    *lines = 0;
    for (const char *t = b; t < e; t++) *lines += *t == '\n';
    while (b < e && blank(*b)) b++;
    while (e > b && blank(e[-1])) e--;
    if ((size_t)(e - b) <= KA__NAME_DIRECT_MAX || (*b >= '0' && *b <= '9')) return false;
    for (const char *t = b; t < e; t++)
        if (!ka__ident_char(*t)) return false;
    ka__kernel_alias(b, (size_t)(e - b), alias);
    return true;
}

/* The declaration's name [b, e) as the prelude's macro gets it: itself, or
 * its alias and its newlines (long_name). */
static void emit_name(char *out, size_t *len, const char *b, const char *e) {
    char alias[KA__ALIAS_LEN + 1];
    int lines;
    if (!long_name(b, e, alias, &lines)) {
        emit(out, len, b, (size_t)(e - b));
        return;
    }
    emit(out, len, alias, KA__ALIAS_LEN);
    while (lines-- > 0) emit(out, len, "\n", 1);
}

/* The size of a by-value parameter whose type OpenCL names but does not
 * size (a struct, a typedef of one): for each, a kernel that never runs,
 * whose required work-group width is sizeof(the type), appended after the
 * user's source (under #line 1 KA__CL_PROBE_FILE, which the core puts before
 * it); clGetKernelWorkGroupInfo(CL_KERNEL_COMPILE_WORK_GROUP_SIZE)
 * reads it back (cl_kernel.c), so ka_launch can refuse KA_ARG_BYTES of
 * another size. Types spelled with scalar words, pointers and local memory
 * need no probe. Written into out when out is not NULL; returns the length. */
static size_t size_probes(const char *src, char *out) {
    static const char pre[] = "__kernel __attribute__((reqd_work_group_size(sizeof(", mid[] = "), 1, 1))) void ka__sizeof_";
    size_t len = 0;
    ka__kparam par[KA_MAX_ARGS];
    const char *name;
    size_t nl;
    uint32_t n;
    while (ka__kdecl_next(&src, &name, &nl, par, KA_MAX_ARGS, &n)) {
        for (uint32_t i = 0; i < n; i++) {
            if (ka__kdecl_traits(&par[i])) continue; /* a pointer, scalar, local memory...: no probe */
            const char *tb = par[i].type, *te = par[i].type_end;
            char tail[24];
            int tl = snprintf(tail, sizeof tail, "_%u(void) {}\n", i);
            emit(out, &len, pre, sizeof pre - 1);
            emit(out, &len, tb, (size_t)(te - tb));
            emit(out, &len, mid, sizeof mid - 1);
            emit_name(out, &len, name, name + nl); /* the kernel's symbol without ka_k_ */
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
 * parentheses. A name over KA__NAME_DIRECT_MAX characters, there and in
 * KA_KERNEL_NOARGS(X), becomes its alias (objects.h): PoCL names files after
 * the compiled symbol. Comments and literals are copied as they are; no
 * newline is added or removed, so build log lines stay the user's. Written
 * into out when out is not NULL (no terminating NUL); returns the length. */
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
            const char *p = s, *paren = NULL, *end = NULL;
            bool kernel = s - b == 9 && !memcmp(b, "KA_KERNEL", 9);
            bool noargs = s - b == 16 && !memcmp(b, "KA_KERNEL_NOARGS", 16);
            if (kernel || noargs) {
                while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || (p[0] == '\\' && p[1] == '\n')) p++;
                if (*(paren = p) == '(')
                    for (int depth = 0; *++p && *p != ';' && *p != '{';) {
                        if (*p == '(') depth++;
                        else if (*p == ')' && depth-- == 0) {
                            if (noargs) end = p;
                            break;
                        } else if (*p == ',' && depth == 0) {
                            if (kernel) end = p;
                            break;
                        }
                    }
            }
            if (end && kernel) { /* KA__KERNEL_OPEN, the text from '(' to the comma, ')' */
                emit(out, &len, to, sizeof to - 1);
                emit(out, &len, s, (size_t)(paren + 1 - s));
                emit_name(out, &len, paren + 1, end);
                emit(out, &len, ")", 1);
                s = end;
                open = asserts ? 0 : -1;
                continue;
            }
            if (end) { /* KA_KERNEL_NOARGS(X): only X may change */
                emit(out, &len, b, (size_t)(paren + 1 - b));
                emit_name(out, &len, paren + 1, end);
                s = end;
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

size_t ka__cl_source_rewrite(const ka__program *p, char *out) { return rewrite_kernels(p->source, out, p->asserts); }

/* Only PoCL needs the size probes: a conformant clSetKernelArg refuses a
 * wrong size itself (CL_INVALID_ARG_SIZE), and NVIDIA's compiler failed in
 * ptxas on a probe. */
size_t ka__cl_source_append(const ka__program *p, char *out) {
    return ka__cl_dev_of(p->dev)->pocl ? size_probes(p->source, out) : 0;
}
