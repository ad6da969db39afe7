// qsort: sorts n records (a key and an id) with a quicksort written here
// that, like C's qsort, takes the element size and a comparator function
// pointer: every comparison is an indirect call (call_indirect). Sorts by
// key ascending, then by key descending with ties by id, then by the key's
// low byte; checks each order and prints a position-weighted checksum.
// args: 2000
// bench-args: 600000
//> sorted 3 orders, checksum 4087056677
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
    uint32_t key;
    uint32_t id;
};

typedef int (*cmp_fn)(const void *, const void *);

static int by_key(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_key_desc_then_id(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static int by_low_byte(const void *a, const void *b) {
    const struct rec *x = a, *y = b;
    return (int)(x->key & 0xFF) - (int)(y->key & 0xFF);
}

static void swap(char *a, char *b, size_t size) {
    char t[16];
    memcpy(t, a, size);
    memcpy(a, b, size);
    memcpy(b, t, size);
}

// Quicksort with median-of-three pivots and insertion sort for short runs;
// recursion on the smaller side only.
static void sort(void *base, size_t n, size_t size, cmp_fn cmp) {
    char *a = base;
    while (n > 12) {
        char *lo = a, *mid = a + (n / 2) * size, *hi = a + (n - 1) * size;
        if (cmp(mid, lo) < 0) swap(mid, lo, size);
        if (cmp(hi, mid) < 0) {
            swap(hi, mid, size);
            if (cmp(mid, lo) < 0) swap(mid, lo, size);
        }
        swap(mid, lo, size); // the pivot at a[0]
        size_t i = 1, j = n - 1;
        for (;;) {
            while (i <= j && cmp(a + i * size, a) < 0) i++;
            while (j >= i && cmp(a + j * size, a) > 0) j--;
            if (i >= j) break;
            swap(a + i * size, a + j * size, size);
            i++;
            j--;
        }
        swap(a, a + j * size, size);
        size_t left = j, right = n - j - 1;
        if (left < right) {
            sort(a, left, size, cmp);
            a += (j + 1) * size;
            n = right;
        } else {
            sort(a + (j + 1) * size, right, size, cmp);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(a + (j - 1) * size, a + j * size) > 0; j--)
            swap(a + (j - 1) * size, a + j * size, size);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "n must be 1..10000000\n");
        return 2;
    }
    struct rec *r = malloc(sizeof *r * n);
    if (!r) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint32_t x = 7;
    for (int i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        r[i].key = x % (uint32_t)(n * 4 + 1);
        r[i].id = (uint32_t)i;
    }
    cmp_fn orders[3] = {by_key, by_key_desc_then_id, by_low_byte};
    uint32_t checksum = 0;
    int sorted = 0;
    for (int o = 0; o < 3; o++) {
        sort(r, n, sizeof *r, orders[o]);
        int ok = 1;
        for (int i = 1; i < n; i++)
            if (orders[o](&r[i - 1], &r[i]) > 0) ok = 0;
        sorted += ok;
        for (int i = 0; i < n; i++)
            checksum = checksum * 31 + r[i].key * (uint32_t)(i + 1) + r[i].id;
    }
    printf("sorted %d orders, checksum %u\n", sorted, checksum);
    free(r);
    return 0;
}
