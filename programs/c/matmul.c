// matmul: C = A x B for n x n matrices of 32-bit integers filled by a linear
// congruential generator, with the i-k-j loop order; prints the sum of C's
// entries (mod 2^32) and its trace. Regular strided loads and a long
// multiply-accumulate chain; heap memory from malloc (memory.grow).
// args: 24
// bench-args: 400
//> sum 2447824455 trace 9687506
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 24;
    if (n < 1 || n > 2000) {
        fprintf(stderr, "n must be 1..2000\n");
        return 2;
    }
    uint32_t *a = malloc(sizeof(uint32_t) * n * n);
    uint32_t *b = malloc(sizeof(uint32_t) * n * n);
    uint32_t *c = calloc((size_t)n * n, sizeof(uint32_t));
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint32_t x = 42;
    for (int i = 0; i < n * n; i++) {
        x = x * 1664525u + 1013904223u;
        a[i] = x >> 24;
        x = x * 1664525u + 1013904223u;
        b[i] = x >> 24;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            uint32_t aik = a[i * n + k];
            for (int j = 0; j < n; j++)
                c[i * n + j] += aik * b[k * n + j];
        }
    uint32_t sum = 0, trace = 0;
    for (int i = 0; i < n * n; i++)
        sum += c[i] * (uint32_t)(i + 1);
    for (int i = 0; i < n; i++)
        trace += c[i * n + i];
    printf("sum %u trace %u\n", sum, trace);
    free(a);
    free(b);
    free(c);
    return 0;
}
