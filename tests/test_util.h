/* Helpers shared by the tests. */
#ifndef KA_TEST_UTIL_H
#define KA_TEST_UTIL_H
#include <ka.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

/* Asserts KA_OK, printing the status and libka's detail message otherwise. */
#define KA_OK_OR_FAIL(call)                                                                           \
    do {                                                                                              \
        ka_status s_ = (call);                                                                        \
        if (s_ != KA_OK) fail_msg("%s -> %s\n%s", #call, ka_status_name(s_), ka_last_error());       \
    } while (0)

/* Asserts a given failure status, printing the detail if it differs. */
#define KA_EXPECT(status, call)                                                                       \
    do {                                                                                              \
        ka_status s_ = (call);                                                                        \
        if (s_ != (status))                                                                           \
            fail_msg("%s -> %s, expected %s\n%s", #call, ka_status_name(s_), ka_status_name(status),   \
                     ka_last_error());                                                                \
    } while (0)

#endif
