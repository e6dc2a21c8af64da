// An image read: levelzero-sim has no images (capability ImageBasic), so the
// module is refused at creation, naming what it met first.
__kernel void image_read(__read_only image2d_t img, __global float4 *out)
{
    int2 pos = (int2)(get_global_id(0), 0);
    out[get_global_id(0)] = read_imagef(img, pos);
}
