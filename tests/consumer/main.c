/* A program built against an installed libka (pkg-config or find_package):
 * opens the default device and moves bytes through a buffer and back. */
#include <ka.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    ka_device dev;
    ka_queue q;
    ka_buffer b;
    if (ka_device_open(NULL, &dev) != KA_OK) {
        fprintf(stderr, "%s\n", ka_last_error());
        return 1;
    }
    const ka_device_info *info;
    ka_device_get_info(dev, &info);
    char out[16] = "installed libka", back[16] = {0};
    int ok = ka_queue_create(dev, NULL, &q) == KA_OK && ka_buffer_create(dev, sizeof out, &b) == KA_OK &&
             ka_buffer_write(q, b, 0, out, sizeof out) == KA_OK && ka_buffer_read(q, back, b, 0, sizeof back) == KA_OK &&
             memcmp(out, back, sizeof out) == 0;
    if (!ok) fprintf(stderr, "consumer: %s\n", ka_last_error());
    ka_buffer_release(b);
    ka_queue_release(q);
    printf("libka %s on %s: %s\n", ka_version(), info->name, ok ? "ok" : "FAILED");
    return ka_device_close(dev) == KA_OK && ok ? 0 : 1;
}
