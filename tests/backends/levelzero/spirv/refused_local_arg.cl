/* Refused at module creation: a __local pointer argument. */
__kernel void scratch(__global int *y, __local int *tmp)
{
    tmp[get_local_id(0)] = y[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[get_global_id(0)] = tmp[0];
}
