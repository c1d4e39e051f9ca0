# Session 6, call 8 (~1 minute): call 7 again after one fix. Call 7 found the padding copies
# faster (A 0.092 -> 0.042 ms, B 0.081 -> 0.053 at 4000^3) but the launch span 0.5 ms longer
# than its steps: copy_rows went through pyopencl's kernel call (kernel object and arguments
# set on every launch); the step is now bound once (operands.bind_copy, build.bind).
# The same commands as call 7 (see there).
bash scripts/h200_s6_call7.sh
