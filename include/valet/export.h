/* VALET_API marks the symbols libvalet.so exports. The shared library is built
 * with -fvisibility=hidden, so everything else (the engine, kernels, GGUF
 * reader, tokenizer) stays internal and free to change between releases.
 * valet.h, plain C, exports its whole API with a visibility pragma instead. */
#ifndef VALET_EXPORT_H_
#define VALET_EXPORT_H_

/* The C++ spelling composes with other standard attributes ([[nodiscard]]). */
#if defined(_WIN32)
#define VALET_API
#elif defined(__cplusplus)
#define VALET_API [[gnu::visibility("default")]]
#else
#define VALET_API __attribute__((visibility("default")))
#endif

#endif /* VALET_EXPORT_H_ */
