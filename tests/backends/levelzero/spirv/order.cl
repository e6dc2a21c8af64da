/* Each work-item works a while (spin steps), then takes a ticket: out[]
 * records the order in which the work-items ran
 * (tests/backends/levelzero/test_spirv_executor.py). */
__kernel void tickets(__global uint *counter, __global uint *out, __global uint *work, uint spin)
{
    uint acc = 0;
    for (uint i = 0; i < spin; i++)
        acc = acc * 31u + i;
    work[get_global_id(0)] = acc;
    out[get_global_id(0)] = atomic_inc(counter);
}
