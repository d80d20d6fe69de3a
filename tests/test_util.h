/* Helpers shared by the tests. */
#ifndef KA_TEST_UTIL_H
#define KA_TEST_UTIL_H
#include <ka.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Asserts that ka_last_error() contains every given substring. */
#define EXPECT_DETAIL(...)                                                                              \
    do {                                                                                                \
        const char *subs_[] = {__VA_ARGS__};                                                            \
        for (size_t i_ = 0; i_ < sizeof subs_ / sizeof subs_[0]; i_++)                                  \
            if (!strstr(ka_last_error(), subs_[i_]))                                                    \
                fail_msg("ka_last_error() lacks \"%s\":\n%s", subs_[i_], ka_last_error());              \
    } while (0)

#endif
