/* Refused at module creation: images. */
__kernel void sample(__read_only image2d_t img, __global float4 *y)
{
    y[0] = read_imagef(img, (int2)(0, 0));
}
