// Kernels that print, for tests/ffi/test_ptx_printf.py: every conversion
// CUDA's printf documents, with its flags, widths and precisions; each line
// is compared with the host C library's formatting of the same values.
// Regenerate printf.ptx with: nvcc -ptx -arch=compute_80 -O3 printf.cu -o printf.ptx
#include <cstdio>

extern "C" __global__ void formats(int i, long long ll, unsigned u, double d, float f,
                                   const char *s)
{
    printf("int %d %i %5d %-5d| %+d %05d %x %X %#o %u\n", i, i, i, i, i, i, u, u, u, u);
    printf("long %lld %llx %ld %lu %llu\n", ll, ll, (long)ll, (unsigned long)ll,
           (unsigned long long)ll);
    printf("short %hd %hhd %hu %hhx char %c\n", (short)i, (signed char)i, (unsigned short)u,
           (unsigned char)u, 'A' + (i & 7));
    printf("float %f %.3f %e %E %g %G %a %10.4f %-10.2e|\n", d, d, d, d, d, d, d, f, f);
    printf("string %s %.3s %10s %-6s|\n", s, s, s, s);
    printf("star %*d %-*d %.*f %*.*f|\n", 6, i, 6, i, 2, d, 9, 3, d);
    printf("pointer %p percent 100%%\n", (void *)s);
}

// Every thread prints; out gets what printf returned (the arguments it read).
extern "C" __global__ void per_thread(int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = printf("thread %d block %d\n", threadIdx.x, blockIdx.x);
}

// No arguments, and a format that ends a line without a newline.
extern "C" __global__ void plain(int *out)
{
    out[0] = printf("plain text, no arguments\n");
    out[1] = printf("no newline");
}
