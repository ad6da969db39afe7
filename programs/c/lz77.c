// lz77: compresses n bytes of generated text (words drawn from a small
// vocabulary by a linear congruential generator, so it repeats the way
// prose does) with an LZ77 coder: a hash of the next 3 bytes finds the
// most recent earlier position with the same hash (a hash-chain of depth
// 8), matches up to 258 bytes within a 32 KiB window; literals and
// (length, distance) pairs go to a byte stream. Decompresses, checks the
// round trip, and prints the sizes and a checksum of the compressed bytes.
// args: 20000
// bench-args: 4000000
//> in 20000 out 12688 ok checksum 3652196875
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 32768
#define MIN_MATCH 3
#define MAX_MATCH 258
#define HASH_BITS 14
#define DEPTH 8

static const char *words[] = {
    "the ", "of ", "and ", "a ", "to ", "in ", "is ", "you ", "that ", "it ",
    "he ", "was ", "for ", "on ", "are ", "as ", "with ", "his ", "they ", "I ",
    "machine ", "profile ", "branch ", "value ", "register ", "memory ",
    "compiler ", "trace ", ". ", ", ", "\n",
};

static uint32_t hash3(const uint8_t *p) {
    return ((p[0] << 16 | p[1] << 8 | p[2]) * 2654435761u) >> (32 - HASH_BITS);
}

// Output format: a literal run is a tag 0x00-0x7F (its length - 1) then the
// bytes; a match is the tag 0x80, its length - 3 (one byte) and its distance
// (two bytes, little-endian).
static size_t compress(const uint8_t *in, size_t n, uint8_t *out) {
    int32_t *head = malloc(sizeof(int32_t) << HASH_BITS);
    int32_t *prev = malloc(sizeof(int32_t) * n);
    for (size_t i = 0; i < (1u << HASH_BITS); i++)
        head[i] = -1;
    size_t o = 0, lit_start = 0, i = 0;
    while (i < n) {
        size_t best_len = 0, best_dist = 0;
        if (i + MIN_MATCH <= n) {
            uint32_t h = hash3(in + i);
            int32_t cand = head[h];
            for (int d = 0; d < DEPTH && cand >= 0 && i - cand <= WINDOW - 1; d++) {
                size_t len = 0, max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
                while (len < max && in[cand + len] == in[i + len])
                    len++;
                if (len > best_len) {
                    best_len = len;
                    best_dist = i - cand;
                }
                cand = prev[cand];
            }
            prev[i] = head[h];
            head[h] = (int32_t)i;
        }
        if (best_len >= MIN_MATCH) {
            while (lit_start < i) {
                size_t run = i - lit_start > 128 ? 128 : i - lit_start;
                out[o++] = (uint8_t)(run - 1);
                memcpy(out + o, in + lit_start, run);
                o += run;
                lit_start += run;
            }
            out[o++] = 0x80;
            out[o++] = (uint8_t)(best_len - MIN_MATCH);
            out[o++] = (uint8_t)best_dist;
            out[o++] = (uint8_t)(best_dist >> 8);
            for (size_t k = 1; k < best_len && i + k + MIN_MATCH <= n; k++) {
                uint32_t h = hash3(in + i + k);
                prev[i + k] = head[h];
                head[h] = (int32_t)(i + k);
            }
            i += best_len;
            lit_start = i;
        } else {
            i++;
        }
    }
    while (lit_start < n) {
        size_t run = n - lit_start > 128 ? 128 : n - lit_start;
        out[o++] = (uint8_t)(run - 1);
        memcpy(out + o, in + lit_start, run);
        o += run;
        lit_start += run;
    }
    free(head);
    free(prev);
    return o;
}

static size_t decompress(const uint8_t *in, size_t n, uint8_t *out) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t tag = in[i++];
        if (tag < 0x80) {
            memcpy(out + o, in + i, tag + 1u);
            i += tag + 1u;
            o += tag + 1u;
        } else {
            size_t len = in[i] + MIN_MATCH;
            size_t dist = in[i + 1] | (size_t)in[i + 2] << 8;
            i += 3;
            for (size_t k = 0; k < len; k++, o++)
                out[o] = out[o - dist];
        }
    }
    return o;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 20000;
    if (n < 1 || n > 50000000) {
        fprintf(stderr, "n must be 1..50000000\n");
        return 2;
    }
    uint8_t *text = malloc(n + 16), *packed = malloc(n + n / 64 + 16), *back = malloc(n + 16);
    if (!text || !packed || !back) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint32_t x = 2024;
    size_t nwords = sizeof words / sizeof words[0];
    for (size_t i = 0; i < n;) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % nwords];
        for (size_t k = 0; w[k] && i < n; k++)
            text[i++] = (uint8_t)w[k];
    }
    size_t m = compress(text, n, packed);
    size_t back_n = decompress(packed, m, back);
    int ok = back_n == n && memcmp(text, back, n) == 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < m; i++)
        sum = (sum << 5 | sum >> 27) ^ packed[i];
    printf("in %zu out %zu %s checksum %u\n", n, m, ok ? "ok" : "MISMATCH", sum);
    return ok ? 0 : 1;
}
