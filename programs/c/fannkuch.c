// fannkuch: for every permutation of 1..n (generated in the order of the
// fannkuch-redux benchmark's counting scheme), count the prefix reversals
// ("pancake flips") until 1 is first; prints a checksum (flip counts with
// alternating signs) and the most flips. Small arrays, tight loops, short
// data-dependent trip counts. An optional second argument repeats the whole
// walk that many times (the checksum sums the walks; max flips stays).
// args: 7
// bench-args: 9 5
//> checksum 228 max flips 16
#include <stdio.h>
#include <stdlib.h>

static void fannkuch(int n, int *checksum, int *max_flips) {
    int perm[16], perm1[16], count[16];
    int sign = 1, r = n;
    for (int i = 0; i < n; i++)
        perm1[i] = i;
    for (;;) {
        while (r != 1) {
            count[r - 1] = r;
            r--;
        }
        for (int i = 0; i < n; i++)
            perm[i] = perm1[i];
        int flips = 0;
        for (int k = perm[0]; k != 0; k = perm[0]) {
            for (int i = 0, j = k; i < j; i++, j--) {
                int t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            flips++;
        }
        if (flips > *max_flips)
            *max_flips = flips;
        *checksum += sign * flips;
        sign = -sign;
        for (;;) {
            if (r == n)
                return;
            int first = perm1[0];
            for (int i = 0; i < r; i++)
                perm1[i] = perm1[i + 1];
            perm1[r] = first;
            if (--count[r] > 0)
                break;
            r++;
        }
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 7;
    int reps = argc > 2 ? atoi(argv[2]) : 1;
    if (n < 2 || n > 12 || reps < 1) {
        fprintf(stderr, "usage: fannkuch N [REPS], N in 2..12\n");
        return 2;
    }
    int checksum = 0, max_flips = 0;
    for (int i = 0; i < reps; i++)
        fannkuch(n, &checksum, &max_flips);
    printf("checksum %d max flips %d\n", checksum, max_flips);
    return 0;
}
