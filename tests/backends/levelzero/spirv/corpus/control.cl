// Control flow: loops with break and continue, switch, early return, calls.
static int classify(int v) {
    switch (v % 11) {
    case 0: return 10;
    case 1:
    case 2: return v * 3;
    case 5: v += 100;  // falls through
    case 6: return v - 1;
    case -3: return v << 2;
    case 9: return v ^ 0x55;
    default: return -v;
    }
}

static uint collatz_steps(uint v) {
    uint s = 0;
    while (v > 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        if (++s > 1000)
            break;
    }
    return s;
}

kernel void control(global const int *x, global int *out, int n) {
    size_t i = get_global_id(0);
    if ((int)i >= n)
        return;
    int v = x[i];
    out[4 * i + 0] = classify(v);
    out[4 * i + 1] = (int)collatz_steps((uint)(v & 1023) + 1);
    int acc = 0;
    for (int a = 0; a < 8; a++) {
        if (a == (v % 5))  // not v & 3: clang -O2 switches on an i2 llvm-spirv 15 refuses
            continue;
        for (int b = 0; b < a; b++) {
            if (b * a > (v & 31))
                break;
            acc += a ^ b;
        }
    }
    out[4 * i + 2] = acc;
    int k = 0;
    do {
        k += v % 5;
        v /= 7;  // not 5: clang -O2 pairs it with v % 5 through a freeze
    } while (v != 0);
    out[4 * i + 3] = k;
}

kernel void lookup(global const int *x, global int *out) {
    const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    int prime[5] = {2, 3, 5, 7, 11};
    size_t i = get_global_id(0);
    int v = x[i] & 7;
    prime[v % 5] += v;
    out[i] = table[v] * 100 + prime[i % 5];
}
