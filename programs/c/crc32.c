// crc32: CRC-32 (IEEE 802.3: reflected, polynomial 0xEDB88320, initial value
// and final xor 0xFFFFFFFF) of a 64 KiB pseudo-random buffer, computed `reps`
// times, a byte of the buffer changed by the last CRC before each; prints
// the last CRC and a rotate-xor of all of them. Table-driven byte loop: a
// load-xor-load chain at data-dependent addresses.
// args: 2
// bench-args: 800
//> crc 921862671 all 597488541
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE (64 * 1024)

static uint32_t table[256];
static uint8_t buf[SIZE];

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 2;
    make_table();
    uint32_t x = 12345;
    for (int i = 0; i < SIZE; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    uint32_t crc = 0, all = 0;
    for (int r = 0; r < reps; r++) {
        buf[r % SIZE] ^= (uint8_t)(crc ^ r);
        crc = crc32(buf, SIZE);
        all = (all << 1 | all >> 31) ^ crc;
    }
    printf("crc %u all %u\n", crc, all);
    return 0;
}
