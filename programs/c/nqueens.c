// nqueens: the number of ways to place n non-attacking queens on an n x n
// board, by backtracking with bitmasks (one recursive call per row: cols are
// the occupied columns, left/right the squares attacked along the diagonals).
// Deep, branchy recursion with a data-dependent number of calls per frame.
// args: 8
// bench-args: 14
//> 8 queens: 92 solutions
#include <stdio.h>
#include <stdlib.h>

static long place(unsigned all, unsigned cols, unsigned left, unsigned right) {
    if (cols == all)
        return 1;
    long count = 0;
    unsigned free = all & ~(cols | left | right);
    while (free) {
        unsigned bit = free & -free;
        free -= bit;
        count += place(all, cols | bit, ((left | bit) << 1) & all, (right | bit) >> 1);
    }
    return count;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8;
    if (n < 1 || n > 16) {
        fprintf(stderr, "n must be 1..16\n");
        return 2;
    }
    unsigned all = (1u << n) - 1;
    printf("%d queens: %ld solutions\n", n, place(all, 0, 0, 0));
    return 0;
}
