#!/usr/bin/env bash
# Compiles the README's example exactly as written (its first ```c block),
# with a main that runs it and checks the result, against the built library.
# Usage: readme_example.sh BUILD_DIR SOURCE_DIR [SANITIZERS [CC]]
set -euo pipefail
build=$1 src=$2 san=${3:-} cc=${4:-cc}
flags=(-std=c11 -Wall -Wextra -Werror)
[[ -n $san ]] && flags+=(-fsanitize="$san" -fno-omit-frame-pointer)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk '/^```c$/ {f = 1; next} f && /^```$/ {exit} f' "$src/README.md" > "$dir/example.c"
[[ -s $dir/example.c ]] || { echo "no \`\`\`c block in README.md"; exit 1; }
cat >> "$dir/example.c" <<'MAIN'

/* Appended by tests/readme_example.sh: run the example and check it. */
int main(void) {
    enum { N = 1000 };
    static float hx[N], hy[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 1.0f;
    if (saxpy(N, 2.0f, hx, hy) != 0) { fprintf(stderr, "saxpy failed: %s\n", ka_last_error()); return 1; }
    for (int i = 0; i < N; i++)
        if (hy[i] != 2.0f * (float)i + 1.0f) { fprintf(stderr, "y[%d] = %g\n", i, hy[i]); return 1; }
    printf("README example: %d elements checked\n", N);
    return 0;
}
MAIN
"$cc" "${flags[@]}" -I"$src/include" -o "$dir/example" "$dir/example.c" -L"$build" -lka -Wl,-rpath,"$build"
"$dir/example"
