/* Native helpers of the CUDA backend (libaruntime_cuda_helpers.so), not CUDA API.
 *
 * The CUDA driver runs host functions (cuLaunchHostFunc) on its own threads.
 * No Python may run there, so the functions it calls live here, in C.  This
 * header is also the cffi declaration of the library: keep it plain C with
 * one declaration per line.
 */
struct ar_copy_job { void *dst; const void *src; size_t nbytes; int free_after; };
struct ar_copy_job *ar_copy_job_new(void *dst, const void *src, size_t nbytes, int free_after);
void ar_copy_job_free(struct ar_copy_job *job);
void ar_hostfn_copy(void *job);
void ar_helpers_shutdown(void);
int ar_helpers_is_shutdown(void);
