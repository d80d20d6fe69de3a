/* Fibers for the work-items of one work-group (host_exec.h).
 *
 * Items run in order, 0 to n - 1. Until an item calls a barrier they run as
 * plain calls on the thread's own stack: a group whose items never reach a
 * barrier costs a loop of calls. When item 0 reaches a barrier it stays
 * suspended where it is, on the thread's stack, and items 1 to n - 1 start
 * on stacks of their own; each barrier switches straight to the next item,
 * the last item's switches back to item 0 and the next round begins. If an
 * item other than 0 is the first to reach a barrier, the items before it
 * returned without one: divergence.
 *
 * A round ends when the last item returns or reaches a barrier; the items
 * must have done the same, else the group diverged: the waiting items are
 * abandoned (a fiber is never resumed; item 0, on the thread's stack, is
 * unwound by longjmp to ka__fiberset_run) and their stacks serve the next
 * run.
 *
 * Stacks: one mapping of max_items - 1 stacks (item 0 needs none), item i's
 * above item i - 1's, the lowest above a guard of 1 MiB (a frame that jumps
 * a guard page more likely ends there than in another mapping); between
 * them, what the set's guard puts there:
 * - MARKERS: a guard page installed as a page-table marker
 *   (MADV_GUARD_INSTALL, Linux 6.13); it faults as a PROT_NONE page does but
 *   splits no mapping, so a set is one line of /proc/self/maps;
 * - PAGES: a PROT_NONE page, which splits the mapping: two mappings a stack,
 *   against the process's limit of vm.max_map_count (65530 by default), so
 *   these sets share a budget of a quarter of it, and a set it cannot cover
 *   gets CANARIES instead;
 * - CANARIES: nothing; the stacks abut, each starting with 64 bytes of a
 *   pattern that must be intact whenever its item switches away or returns.
 *   The stacks' ends fall mid-page, so a canary shares its page with the top
 *   of the stack below, which its item touches anyway: they cost no memory.
 * Whatever the guard, an item that reaches a barrier with its stack pointer
 * within 256 bytes of its stack's low end (or below) has overflowed. Either
 * finding fails the group (KA_ERR_KERNEL_FAILED) before any item whose stack
 * the overflow may have written resumes: those stacks lie below, and their
 * items run again only in the next round. A guard faults (SIGSEGV), as a
 * thread's own stack overflow does. Not caught: a frame larger than the guard
 * page (or the canary) that jumps it without writing there, and is gone again
 * by its item's next barrier or return.
 *
 * The switch saves what the C calling convention preserves (and the
 * floating-point control words); elsewhere than x86-64 and aarch64 it is
 * ucontext's. */
#include "host_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FIBER_ASAN)
#define FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(FIBER_TSAN)
#define FIBER_TSAN 1
#endif
#ifdef FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(KA_FIBER_UCONTEXT)
#define FIBER_ASM 1
#else
#include <ucontext.h>
#endif

/* Sanitized code needs far bigger frames. */
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
#define FIBER_MIN_STACK (256u * 1024u)
#else
#define FIBER_MIN_STACK (16u * 1024u)
#endif

struct ka__fiberset;
struct fctx;
static struct fctx *fiber_main(struct ka__fiberset *fs);

/* ---- the context switch ---------------------------------------------------
 * ka__fiber_switch(&save, to): pushes the callee-saved registers and the
 * floating-point control words on the current stack, stores the stack
 * pointer in save, loads `to` and pops the same from there. A new fiber's
 * stack is made to look like one that switched away: its return address is
 * ka__fiber_entry, which calls fiber_main(fs) with fs and fiber_main in two
 * of the restored registers. When the item has returned, fiber_main returns
 * the context to go on with and the entry loads it, so no C frame of a
 * finished fiber stays behind (a sanitizer's shadow call stack balances). */
#ifdef FIBER_ASM
typedef struct fctx {
    void *sp;
} fctx;
void ka__fiber_switch(void **save, void *to);
void ka__fiber_entry(void);

#if defined(__x86_64__)
__asm__(".pushsection .text\n"
        ".globl ka__fiber_switch\n"
        ".hidden ka__fiber_switch\n"
        ".type ka__fiber_switch,@function\n"
        ".p2align 4\n"
        "ka__fiber_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        ".Lka_fiber_restore:\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size ka__fiber_switch,.-ka__fiber_switch\n"
        ".globl ka__fiber_entry\n"
        ".hidden ka__fiber_entry\n"
        ".type ka__fiber_entry,@function\n"
        ".p2align 4\n"
        "ka__fiber_entry:\n"
        "  .cfi_startproc\n"
        "  .cfi_undefined rip\n" /* the outermost frame: unwinders stop here */
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
#ifdef FIBER_TSAN
        /* Told here, not in fiber_main: its own exit must still count on
         * this fiber's shadow call stack. */
        "  movq %rax, %rbx\n"
        "  movq 8(%rax), %rdi\n"
        "  xorl %esi, %esi\n"
        "  callq __tsan_switch_to_fiber@PLT\n"
        "  movq %rbx, %rax\n"
#endif
        "  movq (%rax), %rsp\n"
        "  jmp .Lka_fiber_restore\n"
        "  .cfi_endproc\n"
        ".size ka__fiber_entry,.-ka__fiber_entry\n"
        ".popsection\n");

/* The frame ka__fiber_switch pops, lowest address first. */
static void ctx_init(fctx *c, char *hi, struct ka__fiberset *fs) {
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
    __asm__ __volatile__("fnstcw %0" : "=m"(fpucw));
    uint64_t *sp = (uint64_t *)((uintptr_t)hi & ~(uintptr_t)15) - 8;
    sp[0] = mxcsr | (uint64_t)fpucw << 32;
    sp[1] = 0;                          /* r15 */
    sp[2] = 0;                          /* r14 */
    sp[3] = (uint64_t)(uintptr_t)fiber_main; /* r13 */
    sp[4] = (uint64_t)(uintptr_t)fs;   /* r12 */
    sp[5] = 0;                          /* rbx */
    sp[6] = 0;                          /* rbp: frame-pointer walks end here */
    sp[7] = (uint64_t)(uintptr_t)ka__fiber_entry;
    c->sp = sp;
}
#else /* aarch64: x19-x30, d8-d15 (AAPCS64) and fpcr */
__asm__(".pushsection .text\n"
        ".globl ka__fiber_switch\n"
        ".hidden ka__fiber_switch\n"
        ".type ka__fiber_switch,%function\n"
        ".p2align 4\n"
        "ka__fiber_switch:\n"
        "  sub sp, sp, #176\n"
        "  stp x19, x20, [sp, #0]\n"
        "  stp x21, x22, [sp, #16]\n"
        "  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n"
        "  stp x27, x28, [sp, #64]\n"
        "  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n"
        "  stp d10, d11, [sp, #112]\n"
        "  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mrs x9, fpcr\n"
        "  str x9, [sp, #160]\n"
        "  mov x9, sp\n"
        "  str x9, [x0]\n"
        "  mov sp, x1\n"
        ".Lka_fiber_restore:\n"
        "  ldp x19, x20, [sp, #0]\n"
        "  ldp x21, x22, [sp, #16]\n"
        "  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n"
        "  ldp x27, x28, [sp, #64]\n"
        "  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n"
        "  ldp d10, d11, [sp, #112]\n"
        "  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  ldr x9, [sp, #160]\n"
        "  msr fpcr, x9\n"
        "  add sp, sp, #176\n"
        "  ret\n"
        ".size ka__fiber_switch,.-ka__fiber_switch\n"
        ".globl ka__fiber_entry\n"
        ".hidden ka__fiber_entry\n"
        ".type ka__fiber_entry,%function\n"
        ".p2align 4\n"
        "ka__fiber_entry:\n"
        "  .cfi_startproc\n"
        "  .cfi_undefined x30\n"
        "  mov x0, x19\n"
        "  blr x20\n"
#ifdef FIBER_TSAN
        "  mov x19, x0\n"
        "  ldr x0, [x19, #8]\n"
        "  mov w1, #0\n"
        "  bl __tsan_switch_to_fiber\n"
        "  mov x0, x19\n"
#endif
        "  ldr x9, [x0]\n"
        "  mov sp, x9\n"
        "  b .Lka_fiber_restore\n"
        "  .cfi_endproc\n"
        ".size ka__fiber_entry,.-ka__fiber_entry\n"
        ".popsection\n");

static void ctx_init(fctx *c, char *hi, struct ka__fiberset *fs) {
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    uint64_t *sp = (uint64_t *)((uintptr_t)hi & ~(uintptr_t)15) - 22;
    memset(sp, 0, 22 * sizeof *sp);
    sp[0] = (uint64_t)(uintptr_t)fs;         /* x19 */
    sp[1] = (uint64_t)(uintptr_t)fiber_main; /* x20 */
    sp[11] = (uint64_t)(uintptr_t)ka__fiber_entry; /* x30; x29 = 0 ends frame-pointer walks */
    sp[20] = fpcr;
    c->sp = sp;
}
#endif

static inline void ctx_switch(fctx *save, fctx *to) { ka__fiber_switch(&save->sp, to->sp); }

#else /* ucontext */
typedef struct fctx {
    ucontext_t uc;
} fctx;
static _Thread_local struct ka__fiberset *uc_starting;
static void uc_entry(void) { fiber_main(uc_starting); }
static void ctx_init(fctx *c, char *lo, char *hi, struct ka__fiberset *fs) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = (size_t)(hi - lo);
    c->uc.uc_link = NULL;
    makecontext(&c->uc, uc_entry, 0);
    uc_starting = fs;
}
static inline void ctx_switch(fctx *save, fctx *to) { swapcontext(&save->uc, &to->uc); }
#endif

/* ---- the set ------------------------------------------------------------- */
enum { MODE_CALLS, MODE_FIBERS };
enum { FAIL_NONE, FAIL_DIVERGED, FAIL_OVERFLOW };

/* A CANARIES stack's first bytes; the room a barrier needs above its stack's
 * low end (and canary) for its own frame and the switch's. */
#define CANARY_WORDS 8u
#define CANARY_BYTES (CANARY_WORDS * 8u)
#define CANARY_VALUE 0x6b612d6669626572ull /* "ka-fiber" */
#define SWITCH_ROOM 256u
/* Below a set's lowest stack: a frame that skips a guard page (a large
 * array, partly written) more likely ends in the set's own memory. */
#define BOTTOM_GUARD ((size_t)1 << 20)

/* The canaries are read and written outside the sanitizers' view: an
 * overflow may have left a sanitizer's poison or shadow stack there. */
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
#define FIBER_UNCHECKED __attribute__((no_sanitize("address", "thread"), noinline))
#else
#define FIBER_UNCHECKED
#endif

typedef struct fiber {
    fctx ctx; /* f[0]: the thread's own stack, item 0 */
#ifdef FIBER_TSAN
    void *tsan; /* right after ctx: ka__fiber_entry reads it */
#endif
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
    bool stale; /* left with frames on its stack */
#endif
#ifdef FIBER_ASAN
    void *fake_stack;
#endif
} fiber;
#if defined(FIBER_ASM) && defined(FIBER_TSAN)
_Static_assert(offsetof(fiber, tsan) == 8, "ka__fiber_entry reads the TSan fiber at offset 8");
#endif

struct ka__fiberset {
    /* The run. */
    ka__item_fn item;
    void *ctx;
    uint32_t n, cur;
    uint32_t round;              /* 1: items 1.. start when reached */
    uint32_t nbarrier, nreturned; /* in this round */
    uint8_t mode;
    uint8_t failed;              /* FAIL_*, reported by ka__fiberset_run */
    uint8_t guard;               /* enum ka__fiber_guard */
    fiber *f;
    /* The stacks: item i's is [first + (i - 1) * slot_bytes, + stack_bytes);
     * at a barrier its stack pointer is above floor + (i - 1) * slot_bytes. */
    char *floor;
    size_t slot_bytes;
    /* Colder. */
    char *first;
    size_t stack_bytes;
    uint32_t overflowed;         /* FAIL_OVERFLOW: the item */
    struct ka__fiberset *outer; /* the set this thread was running before */
    jmp_buf unwind; /* back to ka__fiberset_run from item 0's frames */
    uint32_t max;
    uint32_t canaried;           /* CANARIES: stacks 1 .. canaried hold theirs */
    uint32_t budget;             /* PAGES: mappings counted in the process's budget */
    size_t asked, map_bytes, page;
    char *map;
    struct ka__fiberset *link;   /* the owner's */
    bool made;                   /* counted in sets_alive */
#ifdef FIBER_ASAN
    bool escaped;     /* a fault handler left an item for the thread's stack */
    bool from_thread; /* the switch under way leaves the thread's stack */
    const void *thread_bottom;
    size_t thread_size;
#endif
};

static _Thread_local ka__fiberset *running;

/* Item i's stack (i >= 1), below its upper end. */
static char *stack_lo(const ka__fiberset *fs, uint32_t i) { return fs->first + (size_t)(i - 1) * fs->slot_bytes; }

FIBER_UNCHECKED static bool canary_intact(const ka__fiberset *fs, uint32_t i) {
    const uint64_t *c = (const uint64_t *)stack_lo(fs, i), v = CANARY_VALUE;
    _Static_assert(CANARY_WORDS == 8, "the check reads 8 words");
    return ((c[0] ^ v) | (c[1] ^ v) | (c[2] ^ v) | (c[3] ^ v) | (c[4] ^ v) | (c[5] ^ v) | (c[6] ^ v) | (c[7] ^ v)) == 0;
}

/* Before a run of n items: the canaries of stacks 1 .. n - 1, written once
 * (again after an overflow) and only as far as groups reach. */
FIBER_UNCHECKED static void canaries_write(ka__fiberset *fs, uint32_t n) {
    for (uint32_t i = fs->canaried + 1; i < n; i++) {
        uint64_t *c = (uint64_t *)stack_lo(fs, i);
        for (uint32_t k = 0; k < CANARY_WORDS; k++) c[k] = CANARY_VALUE;
    }
    fs->canaried = n - 1;
}

/* The stack pointer, where reading it costs nothing. */
static inline const char *stack_pointer(void) {
    const char *sp;
#if defined(__x86_64__)
    __asm__ __volatile__("movq %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
    __asm__ __volatile__("mov %0, sp" : "=r"(sp));
#else
    sp = __builtin_frame_address(0);
#endif
    return sp;
}

/* Item i (>= 1), about to switch away at a barrier: it has kept to its stack. */
static inline bool stack_kept(const ka__fiberset *fs, uint32_t i) {
    if (KA_UNLIKELY(stack_pointer() < fs->floor + (size_t)(i - 1) * fs->slot_bytes)) return false;
    return fs->guard != KA__FG_CANARIES || canary_intact(fs, i);
}

#ifdef FIBER_ASAN
static void asan_arrived(ka__fiberset *fs, void *fake_stack) {
    const void *bottom;
    size_t size;
    __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
    if (fs->from_thread) {
        fs->thread_bottom = bottom;
        fs->thread_size = size;
    }
}
#endif

/* What the sanitizers must hear before the stack changes from item `from`
 * to item `to`; `leaving`: from will never be resumed. */
__attribute__((always_inline)) /* no call frame may span the sanitizer's switch */
static inline void before_switch(ka__fiberset *fs, uint32_t from, uint32_t to, bool leaving) {
    fs->cur = to;
#ifdef FIBER_ASAN
    fs->from_thread = from == 0;
    if (to == 0) __sanitizer_start_switch_fiber(leaving ? NULL : &fs->f[from].fake_stack, fs->thread_bottom, fs->thread_size);
    else __sanitizer_start_switch_fiber(leaving ? NULL : &fs->f[from].fake_stack, stack_lo(fs, to), fs->stack_bytes);
#endif
#ifdef FIBER_TSAN
    __tsan_switch_to_fiber(fs->f[to].tsan, 0); /* 0: synchronizes, as the barrier does */
#endif
    (void)from;
    (void)leaving;
}

/* Switches from item `from` to item `to`; returns when `from` is resumed. */
static void switch_item(ka__fiberset *fs, uint32_t from, uint32_t to, bool leaving) {
    before_switch(fs, from, to, leaving);
    ctx_switch(&fs->f[from].ctx, &fs->f[to].ctx);
#ifdef FIBER_ASAN
    asan_arrived(fs, fs->f[from].fake_stack);
#endif
}

/* Prepares item i (i >= 1) to start from the top of its stack. */
static void start_item(ka__fiberset *fs, uint32_t i) {
    char *lo = stack_lo(fs, i);
    char *hi = lo + fs->stack_bytes;
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
    /* Frames a failed run abandoned: their poisoned redzones, their entries
     * in the shadow call stack. */
    if (fs->f[i].stale) {
#ifdef FIBER_ASAN
        __asan_unpoison_memory_region(lo, fs->stack_bytes);
#endif
#ifdef FIBER_TSAN
        if (fs->f[i].tsan) __tsan_destroy_fiber(fs->f[i].tsan);
        fs->f[i].tsan = NULL;
#endif
        fs->f[i].stale = false;
    }
#endif
#ifdef FIBER_TSAN
    if (!fs->f[i].tsan) fs->f[i].tsan = __tsan_create_fiber(0);
#endif
#ifdef FIBER_ASM
    ctx_init(&fs->f[i].ctx, hi, fs);
#else
    ctx_init(&fs->f[i].ctx, lo, hi, fs);
#endif
}

/* The group failed: no item of it is resumed but item 0, to be unwound.
 * ka__fiberset_run says why, on the thread's stack. */
static void group_failed(ka__fiberset *fs, uint8_t why) {
    fs->failed = why;
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
    for (uint32_t i = 1; i < fs->n; i++) fs->f[i].stale = true;
#endif
}

/* Item i (on its fiber, or item 0 back in ka__fiberset_run) has returned:
 * the item to go on with; after the last, or when item i overflowed its
 * stack, the thread (ka__fiberset_run, or item 0 waiting at a barrier, to be
 * unwound). */
static uint32_t item_returned(ka__fiberset *fs, uint32_t i) {
    if (i && fs->guard == KA__FG_CANARIES && KA_UNLIKELY(!canary_intact(fs, i))) {
        fs->overflowed = i;
        group_failed(fs, FAIL_OVERFLOW);
        return 0;
    }
    fs->nreturned++;
    uint32_t next = i + 1;
    if (next == fs->n) {
        if (fs->nbarrier) group_failed(fs, FAIL_DIVERGED);
        next = 0;
    }
    if (fs->round == 1 && next) start_item(fs, next);
    return next;
}

/* Item i's fiber, from its start; returns the context to go on with. */
static fctx *fiber_main(ka__fiberset *fs) {
#ifdef FIBER_ASAN
    asan_arrived(fs, NULL);
#endif
    uint32_t i = fs->cur;
    fs->item(fs->ctx, i);
    uint32_t next = item_returned(fs, i);
#ifdef FIBER_ASM
    fs->cur = next;
#ifdef FIBER_ASAN
    fs->from_thread = false;
    if (next == 0) __sanitizer_start_switch_fiber(NULL, fs->thread_bottom, fs->thread_size);
    else __sanitizer_start_switch_fiber(NULL, stack_lo(fs, next), fs->stack_bytes);
#endif
    return &fs->f[next].ctx; /* ka__fiber_entry goes there (and tells TSan) */
#else
#if defined(FIBER_ASAN) || defined(FIBER_TSAN)
    fs->f[i].stale = true; /* this frame stays */
#endif
    switch_item(fs, i, next, true);
    return NULL; /* never resumed */
#endif
}

void ka__fiber_barrier(void) {
    ka__fiberset *fs = running;
    if (!fs) return; /* not in a set: a group of one item run directly */
    uint32_t i = fs->cur, next = i + 1;
    if (fs->mode == MODE_CALLS) {
        if (i != 0) {
            /* Items 0 .. i - 1 returned without a barrier. */
            fs->nreturned = i;
            fs->nbarrier = 1;
            group_failed(fs, FAIL_DIVERGED);
            longjmp(fs->unwind, 1);
        }
        if (fs->n == 1) return;
        /* Item 0 waits here, on the thread's stack; the others get fibers. */
        fs->mode = MODE_FIBERS;
        fs->round = 1;
        fs->nreturned = 0;
        fs->nbarrier = 1;
#ifdef FIBER_TSAN
        fs->f[0].tsan = __tsan_get_current_fiber();
#endif
    } else {
        if (KA_LIKELY(i != 0) && KA_UNLIKELY(!stack_kept(fs, i))) {
            fs->overflowed = i;
            group_failed(fs, FAIL_OVERFLOW);
            switch_item(fs, i, 0, true); /* abandoned: never resumed */
            __builtin_unreachable();
        }
        fs->nbarrier++;
        if (next == fs->n) {
            if (fs->nreturned) {
                group_failed(fs, FAIL_DIVERGED);
                switch_item(fs, i, 0, true);
                __builtin_unreachable();
            }
            fs->round++;
            fs->nbarrier = 0;
            next = 0;
        }
    }
    if (fs->round == 1 && next) start_item(fs, next);
    switch_item(fs, i, next, false);
    if (fs->failed) longjmp(fs->unwind, 1); /* only item 0 is resumed after a failure */
}

/* Items as plain calls until item 0 reaches a barrier; then, item 0 having
 * returned, the other items' fibers finish the group. */
static void run_items(ka__fiberset *fs) {
    for (uint32_t i = 0; i < fs->n; i++) {
        fs->cur = i;
        fs->item(fs->ctx, i);
        if (fs->mode != MODE_CALLS) {
            switch_item(fs, 0, item_returned(fs, 0), false); /* back here when the group is done */
            return;
        }
    }
}

static ka_status run_failed(ka__fiberset *fs) {
    if (fs->failed == FAIL_DIVERGED)
        return ka__fail(KA_ERR_KERNEL_FAILED,
                        "work-group barrier divergence: %u of the group's %u work-items returned while %u waited at a "
                        "barrier (every item of a group must reach the same barriers)",
                        fs->nreturned, fs->n, fs->nbarrier);
    if (fs->guard == KA__FG_CANARIES) fs->canaried = 0; /* written again before the next run */
    return ka__fail(KA_ERR_KERNEL_FAILED,
                    "work-item stack overflow: item %u of a work-group of %u went past the end of its fiber stack "
                    "of %zu KiB (a kernel with barriers: its private arrays and calls must fit in it)",
                    fs->overflowed, fs->n, fs->asked / 1024);
}

ka_status ka__fiberset_run(ka__fiberset *fs, uint32_t n, ka__item_fn item, void *ctx) {
    if (n == 0) return KA_OK;
    if (n > fs->max)
        return ka__fail(KA_ERR_INVALID_WORKGROUP, "work-group of %u items: the fiber set holds %u", n, fs->max);
    if (KA_UNLIKELY(running == fs))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber set run again from one of its own work-items");
    if (KA_UNLIKELY(fs->canaried + 1 < n)) canaries_write(fs, n);
    fs->item = item;
    fs->ctx = ctx;
    fs->n = n;
    fs->mode = MODE_CALLS;
    fs->failed = FAIL_NONE;
    fs->outer = running;
    running = fs;
    if (!setjmp(fs->unwind)) run_items(fs);
    running = fs->outer;
    return fs->failed ? run_failed(fs) : KA_OK;
}

void ka__fiber_escape(void) {
    ka__fiberset *fs = running;
    if (!fs || fs->mode != MODE_FIBERS || fs->cur == 0) return; /* on the thread's stack */
#ifdef FIBER_ASAN
    fs->from_thread = false;
    __sanitizer_start_switch_fiber(NULL, fs->thread_bottom, fs->thread_size);
    fs->escaped = true;
#endif
#ifdef FIBER_TSAN
    __tsan_switch_to_fiber(fs->f[0].tsan, 0);
#endif
}

void ka__fiberset_abandon(ka__fiberset *fs) {
#ifdef FIBER_ASAN
    if (fs->escaped) {
        __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
        fs->escaped = false;
        /* The jump left from a fiber's stack, so AddressSanitizer's longjmp
         * cleared nothing here: the frames it abandoned on the thread's stack,
         * below this one, keep their redzones' poison; clear it. */
        char here;
        if ((const char *)fs->thread_bottom < &here)
            __asan_unpoison_memory_region(fs->thread_bottom, (size_t)(&here - (const char *)fs->thread_bottom));
    }
#endif
    group_failed(fs, FAIL_DIVERGED); /* its items abandoned, as after a divergence */
    running = fs->outer;
}

/* ---- making and unmaking ------------------------------------------------- */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13; older headers lack it */
#endif

/* A number read from a file of /proc; -1 if unreadable. No stdio: nothing
 * allocated. */
static long proc_number(const char *path) {
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf ? -1 : v;
}

/* The process's mappings: lines of /proc/self/maps; -1 if unreadable. */
static long maps_in_use(void) {
    char buf[4096];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long lines = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t k = 0; k < n; k++) lines += buf[k] == '\n';
    close(fd);
    return lines;
}

static long map_limit(void) {
    long v = proc_number("/proc/sys/vm/max_map_count");
    return v > 0 ? v : 65530; /* the kernel's default */
}

static _Atomic uint32_t sets_alive;
uint32_t ka__fiberset_alive(void) { return atomic_load_explicit(&sets_alive, memory_order_relaxed); }

/* PAGES sets' mappings in this process: at most a quarter of the limit, the
 * rest left to the program and its other libraries. */
static _Atomic uint64_t pages_budget_used;

static bool budget_take(uint32_t mappings) {
    uint64_t cap = (uint64_t)map_limit() / 4, used = atomic_load(&pages_budget_used);
    do {
        if (used + mappings > cap) return false;
    } while (!atomic_compare_exchange_weak(&pages_budget_used, &used, used + mappings));
    return true;
}

/* The failure of a call that maps (what: printf-style, the call's object),
 * with its cause: for ENOMEM, the process's limit of mappings when it is
 * reached, else memory or address space, with the numbers. */
KA_PRINTF(2, 3) static ka_status map_failed(int err, const char *what, ...) {
    char head[160], cause[320];
    va_list ap;
    va_start(ap, what);
    vsnprintf(head, sizeof head, what, ap);
    va_end(ap);
    long maps = maps_in_use(), limit = map_limit();
    struct rlimit as;
    if (err != ENOMEM) {
        snprintf(cause, sizeof cause, "%s", strerror(err));
    } else if (maps >= 0 && maps + 2 >= limit) {
        snprintf(cause, sizeof cause,
                 "the process has %ld memory mappings, its limit (vm.max_map_count = %ld): raise the limit, or run "
                 "fewer threads (KA_NUM_THREADS)", maps, limit);
    } else {
        int n = snprintf(cause, sizeof cause, "out of memory or address space (%ld of vm.max_map_count's %ld mappings in use",
                         maps, limit);
        if (n > 0 && (size_t)n < sizeof cause && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
            n += snprintf(cause + n, sizeof cause - (size_t)n, "; address space limit (ulimit -v) %llu MiB",
                          (unsigned long long)(as.rlim_cur >> 20));
        if (n > 0 && (size_t)n < sizeof cause) snprintf(cause + n, sizeof cause - (size_t)n, ")");
    }
    return ka__fail(KA_ERR_OUT_OF_MEMORY, "%s: %s", head, cause);
}

static ka_status map_set(ka__fiberset *fs, uint32_t nstacks) {
    void *m = mmap(NULL, fs->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return map_failed(errno, "fiber set: cannot map %u stacks of %zu KiB (%zu KiB with guards)", nstacks,
                          fs->asked / 1024, fs->map_bytes / 1024);
    fs->map = m;
    return KA_OK;
}

/* A guard page below each stack but the lowest, which has the set's bottom
 * guard: MARKERS or PAGES. *none: the kernel has no markers, or refuses them
 * here (the first failed: EINVAL before Linux 6.13, or a sandbox's EPERM or
 * ENOSYS); nothing is left mapped then. */
static ka_status map_guarded(ka__fiberset *fs, uint32_t nstacks, uint8_t guard, bool *none) {
    fs->guard = guard;
    fs->stack_bytes = fs->asked;
    fs->slot_bytes = fs->asked + fs->page;
    fs->map_bytes = BOTTOM_GUARD + fs->slot_bytes * nstacks - fs->page;
    ka_status st = map_set(fs, nstacks);
    if (st != KA_OK) return st;
    fs->first = fs->map + BOTTOM_GUARD;
    fs->floor = fs->first + SWITCH_ROOM;
    for (uint32_t i = 1; i <= nstacks; i++) {
        char *g = i == 1 ? fs->map : stack_lo(fs, i) - fs->page;
        size_t len = i == 1 ? BOTTOM_GUARD : fs->page;
        int r = guard == KA__FG_MARKERS ? madvise(g, len, MADV_GUARD_INSTALL) : mprotect(g, len, PROT_NONE);
        if (r == 0) continue;
        int err = errno;
        if (guard == KA__FG_MARKERS && i == 1) {
            *none = true;
            munmap(fs->map, fs->map_bytes);
            fs->map = NULL;
            return KA_OK;
        }
        return map_failed(err, "fiber set: cannot make the guard page of stack %u of %u", i, nstacks);
    }
    return KA_OK;
}

/* Stacks that abut, each starting with its canary, above the bottom guard.
 * The first starts half a page up, so that every stack's ends fall
 * mid-page: a canary shares its page with the top of the stack below. */
static ka_status map_canaried(ka__fiberset *fs, uint32_t nstacks) {
    fs->guard = KA__FG_CANARIES;
    fs->slot_bytes = (fs->asked + CANARY_BYTES + fs->page - 1) & ~(fs->page - 1);
    fs->stack_bytes = fs->slot_bytes;
    fs->map_bytes = BOTTOM_GUARD + fs->slot_bytes * nstacks + fs->page;
    ka_status st = map_set(fs, nstacks);
    if (st != KA_OK) return st;
    fs->first = fs->map + BOTTOM_GUARD + fs->page / 2;
    fs->floor = fs->first + CANARY_BYTES + SWITCH_ROOM;
    if (mprotect(fs->map, BOTTOM_GUARD, PROT_NONE))
        return map_failed(errno, "fiber set: cannot make the guard below %u stacks", nstacks);
    return KA_OK;
}

static ka_status map_stacks(ka__fiberset *fs, enum ka__fiber_guard guard) {
    uint32_t nstacks = fs->max - 1;
    if (fs->asked + fs->page > (SIZE_MAX - BOTTOM_GUARD - fs->page) / nstacks)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber set: %u stacks of %zu bytes overflow", nstacks, fs->asked);
    if (guard == KA__FG_AUTO || guard == KA__FG_MARKERS) {
        bool none = false;
        ka_status st = map_guarded(fs, nstacks, KA__FG_MARKERS, &none);
        if (!none) return st;
        if (guard == KA__FG_MARKERS)
            return ka__fail(KA_ERR_UNSUPPORTED, "fiber set: this kernel has no guard-page markers (MADV_GUARD_INSTALL, "
                            "Linux 6.13), or refuses them");
    }
    if (guard != KA__FG_CANARIES && budget_take(2 * nstacks)) {
        fs->budget = 2 * nstacks;
        return map_guarded(fs, nstacks, KA__FG_PAGES, NULL);
    }
    return map_canaried(fs, nstacks);
}

ka_status ka__fiberset_create(uint32_t max_items, size_t stack_bytes, enum ka__fiber_guard guard, ka__fiberset **out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber set: out is NULL");
    *out = NULL;
    if (max_items < 1 || max_items > (1u << 20))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber set of %u items (1 to %u)", max_items, 1u << 20);
    if ((unsigned)guard > KA__FG_CANARIES)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber set: guard %u (0 to %u)", (unsigned)guard, KA__FG_CANARIES);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (stack_bytes < FIBER_MIN_STACK) stack_bytes = FIBER_MIN_STACK;
    if (stack_bytes > ((size_t)1 << 30))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "fiber stacks of %zu bytes (at most 1 GiB)", stack_bytes);
    ka__fiberset *fs = ka__calloc(1, sizeof *fs);
    fiber *f = ka__calloc(max_items, sizeof *f);
    if (!fs || !f) {
        ka__free(fs, sizeof *fs);
        ka__free(f, (size_t)max_items * sizeof *f);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "fiber set: out of memory");
    }
    fs->f = f;
    fs->max = max_items;
    fs->guard = (uint8_t)guard; /* AUTO for a set of one item: no stacks */
    fs->page = page;
    fs->asked = (stack_bytes + page - 1) & ~(page - 1);
    ka_status st = max_items > 1 ? map_stacks(fs, guard) : KA_OK;
    if (st != KA_OK) {
        ka__fiberset_destroy(fs);
        return st;
    }
    fs->canaried = fs->guard == KA__FG_CANARIES ? 0 : max_items - 1;
    fs->made = true;
    atomic_fetch_add_explicit(&sets_alive, 1, memory_order_relaxed);
    *out = fs;
    return KA_OK;
}

void ka__fiberset_destroy(ka__fiberset *fs) {
    if (!fs) return;
#ifdef FIBER_TSAN
    for (uint32_t i = 1; i < fs->max; i++)
        if (fs->f[i].tsan) __tsan_destroy_fiber(fs->f[i].tsan);
#endif
    if (fs->map) munmap(fs->map, fs->map_bytes);
    if (fs->made) atomic_fetch_sub_explicit(&sets_alive, 1, memory_order_relaxed);
    if (fs->budget) atomic_fetch_sub(&pages_budget_used, fs->budget);
    ka__free(fs->f, (size_t)fs->max * sizeof *fs->f);
    ka__free(fs, sizeof *fs);
}

uint32_t ka__fiberset_items(const ka__fiberset *fs) { return fs->max; }
enum ka__fiber_guard ka__fiberset_guard(const ka__fiberset *fs) { return (enum ka__fiber_guard)fs->guard; }
ka__fiberset **ka__fiberset_link(ka__fiberset *fs) { return &fs->link; }
