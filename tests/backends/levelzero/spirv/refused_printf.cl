/* Refused at module creation: printf. */
__kernel void say(__global int *y)
{
    printf("%d\n", y[0]);
}
