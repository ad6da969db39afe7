// hashtable: a string-keyed hash table (open hashing with chains, FNV-1a
// hashes, doubling when the load passes 3/4): inserts n keys "k<i*7919>",
// counts each key found among 2n lookups (half of them absent), deletes
// every third key, looks everything up again, and prints the counts and a
// checksum of the stored values. Pointer chasing, string compares, malloc.
// args: 3000
// bench-args: 100000
//> found 3000 then 2000 checksum 525160212
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct entry *next;
    uint32_t hash;
    uint32_t value;
    char key[];
};

struct table {
    struct entry **slots;
    size_t nslots, count;
};

static uint32_t fnv1a(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void grow(struct table *t) {
    size_t n = t->nslots * 2;
    struct entry **slots = calloc(n, sizeof *slots);
    for (size_t i = 0; i < t->nslots; i++) {
        struct entry *e = t->slots[i];
        while (e) {
            struct entry *next = e->next;
            e->next = slots[e->hash & (n - 1)];
            slots[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
}

static struct entry **find(struct table *t, const char *key, uint32_t h) {
    struct entry **p = &t->slots[h & (t->nslots - 1)];
    while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
        p = &(*p)->next;
    return p;
}

static void put(struct table *t, const char *key, uint32_t value) {
    uint32_t h = fnv1a(key);
    struct entry **p = find(t, key, h);
    if (*p) {
        (*p)->value = value;
        return;
    }
    size_t len = strlen(key);
    struct entry *e = malloc(sizeof *e + len + 1);
    memcpy(e->key, key, len + 1);
    e->hash = h;
    e->value = value;
    e->next = NULL;
    *p = e;
    if (++t->count * 4 > t->nslots * 3)
        grow(t);
}

static struct entry *get(struct table *t, const char *key) {
    return *find(t, key, fnv1a(key));
}

static int del(struct table *t, const char *key) {
    struct entry **p = find(t, key, fnv1a(key));
    if (!*p)
        return 0;
    struct entry *e = *p;
    *p = e->next;
    free(e);
    t->count--;
    return 1;
}

static void key_of(char *buf, long i) {
    snprintf(buf, 32, "k%lld", (long long)i * 7919);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000;
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "n must be 1..10000000\n");
        return 2;
    }
    struct table t = {calloc(16, sizeof(struct entry *)), 16, 0};
    char key[32];
    for (long i = 0; i < n; i++) {
        key_of(key, i);
        put(&t, key, (uint32_t)(i * 2654435761u));
    }
    long found = 0;
    uint32_t checksum = 0;
    for (long i = 0; i < 2 * n; i++) {
        key_of(key, i);
        struct entry *e = get(&t, key);
        if (e) {
            found++;
            checksum = checksum * 33 + e->value;
        }
    }
    for (long i = 0; i < n; i += 3) {
        key_of(key, i);
        del(&t, key);
    }
    long found2 = 0;
    for (long i = 0; i < 2 * n; i++) {
        key_of(key, i);
        struct entry *e = get(&t, key);
        if (e) {
            found2++;
            checksum ^= e->value + (uint32_t)i;
        }
    }
    printf("found %ld then %ld checksum %u\n", found, found2, checksum);
    return 0;
}
