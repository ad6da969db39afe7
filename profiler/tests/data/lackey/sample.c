/* The lackey sample: a freestanding x86-64 program (no libc, so the trace
 * holds only this code). main_loop calls step 300 times; step loads from a
 * table and branches on the parity of its index. */
static long table[64];

__attribute__((noinline)) static long step(long x, long i)
{
	if (i & 1)
		return x + table[i & 63];
	return x ^ table[(i * 7) & 63];
}

__attribute__((noinline)) static long main_loop(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s = step(s, i);
	return s;
}

void _start(void)
{
	for (long i = 0; i < 64; i++)
		table[i] = i * i;
	long s = main_loop(300);
	/* exit(s & 0xff) */
	__asm__ volatile("mov %0, %%rdi\n\tmov $60, %%eax\n\tsyscall"
			 :
			 : "r"(s & 0xff)
			 : "rdi", "rax");
	__builtin_unreachable();
}
