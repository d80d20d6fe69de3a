/* The host back-end's table: kernels compiled by the system C compiler and
 * run on this machine's CPUs (README.md). */
#include "host_internal.h"

#include <string.h>

static bool h_selects(const char *sel, const ka_device_info *d) {
    (void)d;
    return !strcmp(sel, "host");
}

const ka__backend ka__host_backend = {
    .version = KA__BACKEND_VERSION, .name = "host", .kind = KA_BACKEND_HOST,
    /* An unbounded wait calls event_wait, which joins a pool launch: the
     * waiting thread runs its share instead of sleeping on a callback. */
    .flags = KA__BE_WAIT_SLEEPS,
    .enumerate = ka__host_enumerate, .selects = h_selects,
    .device_open = ka__host_device_open, .device_close = ka__host_device_close,
    .queue_create = ka__host_queue_create, .queue_release = ka__host_queue_release,
    .queue_finish = ka__host_queue_finish, .queue_flush = ka__host_queue_flush,
    .buffer_create = ka__host_buffer_create, .buffer_release = ka__host_buffer_release,
    .buffer_native = ka__host_buffer_native,
    .buffer_write = ka__host_buffer_write, .buffer_read = ka__host_buffer_read,
    .buffer_copy = ka__host_buffer_copy, .buffer_fill = ka__host_buffer_fill,
    .buffer_wrap = ka__host_buffer_wrap, .buffer_init = ka__host_buffer_init,
    .buffer_guard = ka__host_buffer_guard,
    .buffer_map = ka__host_buffer_map, .buffer_unmap = ka__host_buffer_unmap,
    .queue_wait = ka__host_queue_wait,
    .prelude = ka__prelude_c, .source_file = "<program source>",
    .build_target = ka__host_build_target, .compile = ka__host_compile_hook,
    .load = ka__host_load_hook, .module_release = ka__host_module_release,
    .kernel_create = ka__host_kernel_create, .kernel_release = ka__host_kernel_release,
    .launch = ka__host_launch,
    .event_query = ka__host_event_query, .event_callback = ka__host_event_callback,
    .event_wait = ka__host_event_wait, .event_release = ka__host_event_release,
    .event_error = ka__host_event_error,
    .assert_take = ka__host_assert_take, .event_elapsed = ka__host_event_elapsed,
};
