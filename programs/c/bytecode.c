// bytecode: an interpreter for a small stack machine, written in C with a
// `switch` over opcodes (a br_table), running a bytecode program that sums
// the Collatz trajectory lengths of 1..n and counts the primes below n by
// trial division. The dispatch is where value and call-target profiles
// should matter most.
// args: 300
// bench-args: 20000
//> collatz steps 14167 primes 62
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    PUSH, LOAD, STORE, ADD, SUB, MUL, DIV, MOD, LT, EQ, JMP, JZ, JNZ,
    DUP, DROP, SWAP, HALT, INC, SHR, AND,
};

static int64_t run(const int32_t *code, int64_t *vars) {
    int64_t stack[64];
    int sp = 0, pc = 0;
    for (;;) {
        int32_t op = code[pc++];
        switch (op) {
        case PUSH: stack[sp++] = code[pc++]; break;
        case LOAD: stack[sp++] = vars[code[pc++]]; break;
        case STORE: vars[code[pc++]] = stack[--sp]; break;
        case ADD: sp--; stack[sp - 1] += stack[sp]; break;
        case SUB: sp--; stack[sp - 1] -= stack[sp]; break;
        case MUL: sp--; stack[sp - 1] *= stack[sp]; break;
        case DIV: sp--; stack[sp - 1] /= stack[sp]; break;
        case MOD: sp--; stack[sp - 1] %= stack[sp]; break;
        case LT: sp--; stack[sp - 1] = stack[sp - 1] < stack[sp]; break;
        case EQ: sp--; stack[sp - 1] = stack[sp - 1] == stack[sp]; break;
        case JMP: pc = code[pc]; break;
        case JZ: pc = stack[--sp] ? pc + 1 : code[pc]; break;
        case JNZ: pc = stack[--sp] ? code[pc] : pc + 1; break;
        case DUP: stack[sp] = stack[sp - 1]; sp++; break;
        case DROP: sp--; break;
        case SWAP: { int64_t t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; break; }
        case HALT: return sp ? stack[sp - 1] : 0;
        case INC: vars[code[pc++]]++; break;
        case SHR: stack[sp - 1] >>= 1; break;
        case AND: sp--; stack[sp - 1] &= stack[sp]; break;
        default: return -1;
        }
    }
}

// The bytecode, assembled at startup: emit() appends, jump() leaves a
// target slot to patch().
static int32_t code[256];
static int ncode;

static void emit(int32_t op) { code[ncode++] = op; }
static void emit1(int32_t op, int32_t arg) { emit(op); emit(arg); }
static int jump(int32_t op) { emit1(op, 0); return ncode - 1; }
static void patch(int slot) { code[slot] = ncode; }

// Variables.
enum { N, I, X, STEPS, PRIMES, D, ISPRIME };

static void assemble(void) {
    // Collatz: for i in 1..=n, steps += trajectory length of i.
    emit1(PUSH, 1); emit1(STORE, I);
    int outer = ncode;
    emit1(LOAD, I); emit1(LOAD, N); emit1(PUSH, 1); emit(ADD); emit(LT);
    int to_primes = jump(JZ);
    emit1(LOAD, I); emit1(STORE, X);
    int loop = ncode;
    emit1(LOAD, X); emit1(PUSH, 1); emit(EQ);
    int to_next = jump(JNZ);
    emit1(INC, STEPS);
    emit1(LOAD, X); emit1(PUSH, 1); emit(AND);
    int to_even = jump(JZ);
    emit1(LOAD, X); emit1(PUSH, 3); emit(MUL); emit1(PUSH, 1); emit(ADD); emit1(STORE, X);
    emit1(JMP, loop);
    patch(to_even);
    emit1(LOAD, X); emit(SHR); emit1(STORE, X);
    emit1(JMP, loop);
    patch(to_next);
    emit1(INC, I);
    emit1(JMP, outer);
    // Primes below n by trial division.
    patch(to_primes);
    emit1(PUSH, 2); emit1(STORE, I);
    int primes = ncode;
    emit1(LOAD, I); emit1(LOAD, N); emit(LT);
    int to_end = jump(JZ);
    emit1(PUSH, 1); emit1(STORE, ISPRIME); emit1(PUSH, 2); emit1(STORE, D);
    int divisors = ncode;
    emit1(LOAD, D); emit1(LOAD, D); emit(MUL); emit1(LOAD, I); emit(SWAP); emit(LT);
    int to_done = jump(JNZ);
    emit1(LOAD, I); emit1(LOAD, D); emit(MOD);
    int to_inc = jump(JNZ);
    emit1(PUSH, 0); emit1(STORE, ISPRIME);
    int to_done2 = jump(JMP);
    patch(to_inc);
    emit1(INC, D);
    emit1(JMP, divisors);
    patch(to_done);
    patch(to_done2);
    emit1(LOAD, PRIMES); emit1(LOAD, ISPRIME); emit(ADD); emit1(STORE, PRIMES);
    emit1(INC, I);
    emit1(JMP, primes);
    patch(to_end);
    emit(HALT);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 300;
    int64_t vars[8] = {n, 0, 0, 0, 0, 0, 0, 0};
    assemble();
    if (run(code, vars) < 0) {
        printf("bad opcode\n");
        return 1;
    }
    printf("collatz steps %lld primes %lld\n", (long long)vars[STEPS], (long long)vars[PRIMES]);
    return 0;
}
