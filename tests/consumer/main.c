/* A program built against an installed libka (pkg-config or find_package). */
#include <ka.h>
#include <stdio.h>

int main(void) {
    ka_device dev;
    if (ka_device_open(NULL, &dev) != KA_OK) {
        fprintf(stderr, "%s\n", ka_last_error());
        return 1;
    }
    const ka_device_info *info;
    ka_device_get_info(dev, &info);
    printf("libka %s on %s\n", ka_version(), info->name);
    return ka_device_close(dev) == KA_OK ? 0 : 1;
}
