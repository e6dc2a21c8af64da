// As local_slack.cl, with more __local memory than 2 KiB: 2,100 bytes, which
// a GPU rounds up to 4 KiB.  at[0] is the index of buf it reads.
kernel void slack_big(global const int *at, global int *out) {
    local int buf[525];
    for (int i = 0; i < 525; i++) buf[i] = 100 + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[0] = buf[at[0]];
}
