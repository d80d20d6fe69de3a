/* ka_assert: the host side. A kernel whose program calls ka_assert takes the
 * queue's assertion record as a hidden last argument (the back-ends pass it);
 * the first failing work-item fills it. Waits on a queue that launched such a
 * kernel (KA__QH_ASSERTS in q->hooks) read the record afterwards, here. */
#include "ka_internal.h"
#include "backend.h"

ka_status ka__assert_check(ka__queue *q, const char *call) {
    uint32_t r[KA__ASSERT_WORDS] = {0};
    ka_status st = ka__be_assert_take(q, r);
    if (st != KA_OK) return st;
    if (!r[0]) return KA_OK;
    uint64_t g[3];
    for (int d = 0; d < 3; d++) g[d] = r[2 + 2 * d] | (uint64_t)r[3 + 2 * d] << 32;
    uint64_t kid = r[8] | (uint64_t)r[9] << 32;
    ka__slot *ks;
    ka__kernel *k = ka__pin(kid, KA__T_KERNEL, &ks);
    st = ka__fail(KA_ERR_KERNEL_FAILED,
                  "%s: ka_assert failed in kernel '%s', line %u of the program's source, work-item (%llu,%llu,%llu)", call,
                  k ? k->name : "(released)", r[1], (unsigned long long)g[0], (unsigned long long)g[1],
                  (unsigned long long)g[2]);
    if (k) ka__unpin(ks);
    return st;
}
