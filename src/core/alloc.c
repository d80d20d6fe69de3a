/* The allocator hook: every allocation libka makes goes through here. */
#include "ka_internal.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, void *user) {
    (void)user;
    return malloc(size);
}
static void default_free(void *p, size_t size, void *user) {
    (void)size;
    (void)user;
    free(p);
}

static ka_allocator current = {default_alloc, default_free, NULL};

void ka_set_allocator(const ka_allocator *a) {
    if (a && a->alloc && a->free)
        current = *a;
    else
        current = (ka_allocator){default_alloc, default_free, NULL};
}

void *ka__alloc(size_t size) { return current.alloc(size ? size : 1, current.user); }

void *ka__calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = ka__alloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void ka__free(void *p, size_t size) {
    if (p) current.free(p, size ? size : 1, current.user);
}

char *ka__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = ka__alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void ka__strfree(char *s) {
    if (s) ka__free(s, strlen(s) + 1);
}
