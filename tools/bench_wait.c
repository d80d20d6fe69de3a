/* ka bench wait: filled in with issue 4's wait modes. */
#include <stdio.h>

#include "bench_common.h"

int bench_wait_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fputs("ka bench wait: not built yet\n", stderr);
    return 2;
}
