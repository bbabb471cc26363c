// The precision of the matmuls (config key `precision`): a field of the model, handed to each
// mixer in MixerDims and passed to every matmul_* call (model/layers.h), never a global.
#pragma once

typedef enum {
    PRECISION_FP32,  // fp32 operands and accumulation
    PRECISION_BF16,  // operands rounded to bfloat16, fp32 accumulation (model/kernels/gemm_bf16.h)
} Precision;
