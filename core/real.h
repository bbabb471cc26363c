// The model's floating-point type. Programs build with float; the test runner builds the same
// sources with -DREAL_DOUBLE so finite-difference checks can use tight tolerances.
// Math functions for `real` are named like C's float variants, with an `r` suffix: expr(x), ...
#pragma once
#include <math.h>

#ifdef REAL_DOUBLE
typedef double real;
#define REAL_NAME "f64"
#define expr exp
#define logr log
#define log1pr log1p
#define expm1r expm1
#define sqrtr sqrt
#define tanhr tanh
#define fabsr fabs
#define cosr cos
#define sinr sin
#define powr pow
#else
typedef float real;
#define REAL_NAME "f32"
#define expr expf
#define logr logf
#define log1pr log1pf
#define expm1r expm1f
#define sqrtr sqrtf
#define tanhr tanhf
#define fabsr fabsf
#define cosr cosf
#define sinr sinf
#define powr powf
#endif
