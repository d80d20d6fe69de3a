/* The saxpy example's run, shared with the `ka run` command (tools/ka.c),
 * which links examples/saxpy.c built with KA_SAXPY_NO_MAIN. */
#ifndef KA_EXAMPLE_SAXPY_H
#define KA_EXAMPLE_SAXPY_H
#include <stdint.h>

/* y = 2x + y over n floats on the device sel names (NULL: the default),
 * every element checked: 0 when right, 1 on a failure (printed to stderr). */
int ka_run_saxpy(const char *sel, uint32_t n);

#endif
