// Internal: a region of code compiled for an instruction-set extension beyond
// the build's baseline, which kernel_table.cpp calls only after the CPU has
// reported that extension at run time.
//   VALET_TARGET_BEGIN("avx2,fma,f16c")  ...  VALET_TARGET_END()
// GCC's `#pragma GCC target` is ignored by clang, whose equivalent applies the
// target attribute to every function declared in the region: include every
// header before opening one, or its declarations (and inline functions, which
// other files compile for the baseline) would carry the target too. Lambdas
// and templates defined in a region get it under both compilers; a template
// defined outside one keeps the baseline under GCC wherever it is
// instantiated, so the kernels written once over a variant's steps
// (attention_tiles.h, arm/packed_neon.h) are forced inline into a function
// of the variant's region, and the ones written once over intrinsics
// (x86/tiles.h, x86/attention.h) open the includer's region themselves.
#pragma once

#define VALET_PRAGMA(x) _Pragma(#x)

#if defined(__clang__)
#define VALET_TARGET_BEGIN(features) \
  VALET_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define VALET_TARGET_END() _Pragma("clang attribute pop")
#else
#define VALET_TARGET_BEGIN(features) _Pragma("GCC push_options") VALET_PRAGMA(GCC target(features))
#define VALET_TARGET_END() _Pragma("GCC pop_options")
#endif
