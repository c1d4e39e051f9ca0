size_t __attribute__((overloadable)) get_local_id(uint d) {
    return d == 0 ? __nvvm_read_ptx_sreg_tid_x() : d == 1 ? __nvvm_read_ptx_sreg_tid_y() : __nvvm_read_ptx_sreg_tid_z(); }
size_t __attribute__((overloadable)) get_group_id(uint d) {
    return d == 0 ? __nvvm_read_ptx_sreg_ctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_ctaid_y() : __nvvm_read_ptx_sreg_ctaid_z(); }
size_t __attribute__((overloadable)) get_num_groups(uint d) {
    return d == 0 ? __nvvm_read_ptx_sreg_nctaid_x() : d == 1 ? __nvvm_read_ptx_sreg_nctaid_y() : __nvvm_read_ptx_sreg_nctaid_z(); }
size_t __attribute__((overloadable)) get_local_size(uint d) {
    return d == 0 ? __nvvm_read_ptx_sreg_ntid_x() : d == 1 ? __nvvm_read_ptx_sreg_ntid_y() : __nvvm_read_ptx_sreg_ntid_z(); }
size_t __attribute__((overloadable)) get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
void __attribute__((overloadable)) barrier(cl_mem_fence_flags f) { __nvvm_barrier_sync(0); }
