/* voxrt's C API: streaming speech recognition from C (or any language with a C FFI).
 *
 * Three opaque handles: an engine (a compiled model file), a recognizer (the speech pipeline
 * over an engine, shared by many streams and threads) and a stream (one audio source). Audio goes
 * in with voxrt_stream_accept_*, voxrt_stream_decode runs the model on what is ready, and
 * voxrt_stream_poll hands back partial and final results one at a time.
 *
 * Errors: every fallible call returns a voxrt_status (VOXRT_OK = 0); voxrt_last_error() gives
 * the message of the calling thread's last failed call (what was expected, what was found,
 * where). No C++ exception or type crosses this interface.
 *
 * Threads: engines and recognizers may be used from any thread. A stream belongs to one thread
 * at a time. Streams decoded by different threads at the same moment share engine calls (the
 * recognizer batches them).
 *
 * ABI: VOXRT_C_ABI_VERSION changes whenever a function's signature or a struct's layout changes
 * incompatibly; check it against voxrt_abi_version() (the library's) before anything else.
 * Option structs start with struct_size, set by their *_init function, so later versions can
 * append fields.
 */
#ifndef VOXRT_VOXRT_C_H_
#define VOXRT_VOXRT_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(VOXRT_C_BUILDING_LIBRARY)
#define VOXRT_C_API __attribute__((visibility("default")))
#else
#define VOXRT_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define VOXRT_C_ABI_VERSION 1u

typedef enum voxrt_status {
  VOXRT_OK = 0,
  VOXRT_INVALID_ARGUMENT = 1,
  VOXRT_NOT_FOUND = 2,
  VOXRT_UNSUPPORTED = 3,
  VOXRT_OUT_OF_RANGE = 4,
  VOXRT_CORRUPT = 5,
  VOXRT_VERSION_MISMATCH = 6,
  VOXRT_RESOURCE_EXHAUSTED = 7,
  VOXRT_FAILED_PRECONDITION = 8,
  VOXRT_IO_ERROR = 9,
  VOXRT_INTERNAL = 10,
  /* Makes the enum an int in C++ too, so any value a C caller passes is a valid one to check
   * (as Vulkan's *_MAX_ENUM does). The same below. */
  VOXRT_STATUS_FORCE_INT32 = 0x7fffffff
} voxrt_status;

typedef struct voxrt_engine voxrt_engine;
typedef struct voxrt_recognizer voxrt_recognizer;
typedef struct voxrt_stream voxrt_stream;

/* The library's ABI version (compare with VOXRT_C_ABI_VERSION) and its version text. */
VOXRT_C_API uint32_t voxrt_abi_version(void);
VOXRT_C_API const char* voxrt_version(void);

/* The message of this thread's last failed call ("" if none); valid until its next failing
 * call. */
VOXRT_C_API const char* voxrt_last_error(void);
/* "ok", "invalid argument", "not found", ... (static text). */
VOXRT_C_API const char* voxrt_status_name(voxrt_status status);

/* ---- engines ------------------------------------------------------------------------------ */

typedef struct voxrt_build_options {
  size_t struct_size;
  /* Kernel threads while timing tactics. Default 1. */
  int threads;
  /* 1: time candidate kernels (minutes); 0: first tactic of each layer (seconds). Default 1. */
  int autotune;
  /* Timing cache file, or NULL. */
  const char* timing_cache_path;
  /* Largest batch of streams the engine admits. Default 64. */
  int max_batch;
} voxrt_build_options;

VOXRT_C_API void voxrt_build_options_init(voxrt_build_options* options);

/* Compiles a streaming ONNX model (docs/model_contract.md) into a CPU engine file at
 * engine_path, with the optimization profiles taken from the model's metadata. options may be
 * NULL (defaults). */
VOXRT_C_API voxrt_status voxrt_engine_build(const char* onnx_path, const char* engine_path,
                                            const voxrt_build_options* options);

/* Loads and checks an engine file (voxrt build or voxrt_engine_build wrote it). */
VOXRT_C_API voxrt_status voxrt_engine_load(const char* engine_path, voxrt_engine** engine);
VOXRT_C_API void voxrt_engine_destroy(voxrt_engine* engine);
/* A metadata value of the engine (e.g. "voxrt.model_family"), or NULL when absent; owned by the
 * engine. */
VOXRT_C_API const char* voxrt_engine_metadata(const voxrt_engine* engine, const char* key);

/* ---- recognizers -------------------------------------------------------------------------- */

typedef enum voxrt_decoder {
  VOXRT_DECODER_GREEDY = 0,
  VOXRT_DECODER_BEAM = 1,
  VOXRT_DECODER_FORCE_INT32 = 0x7fffffff
} voxrt_decoder;
typedef enum voxrt_vad {
  VOXRT_VAD_OFF = 0,
  VOXRT_VAD_ENERGY = 1,
  VOXRT_VAD_FORCE_INT32 = 0x7fffffff
} voxrt_vad;

typedef struct voxrt_recognizer_options {
  size_t struct_size;
  /* Streams open at once. Default 64. */
  int max_streams;
  /* Streams per engine call; 0 (the default): the largest batch the engine's profiles admit, at
   * most 32. Above what the profiles admit is refused. */
  int max_batch;
  /* Kernel threads. Default 1. */
  int threads;
  voxrt_decoder decoder; /* Default VOXRT_DECODER_GREEDY. */
  int beam_width;        /* Beam search only; 0 (the default): the model's tuned value with an
                          * LM, else 8. */
  const char* lm_path;   /* ARPA word LM for beam search, or NULL. */
  voxrt_vad vad;         /* Default VOXRT_VAD_ENERGY: silence costs no model work. */
} voxrt_recognizer_options;

VOXRT_C_API void voxrt_recognizer_options_init(voxrt_recognizer_options* options);

/* A recognizer over the engine (which may be destroyed afterwards: the recognizer loads its own
 * instance of the engine file). options may be NULL. */
VOXRT_C_API voxrt_status voxrt_recognizer_create(const voxrt_engine* engine,
                                                 const voxrt_recognizer_options* options,
                                                 voxrt_recognizer** recognizer);
/* Destroy a recognizer after its streams. */
VOXRT_C_API void voxrt_recognizer_destroy(voxrt_recognizer* recognizer);
/* Runs what the given streams have ready, in batches of up to max_batch streams per engine call,
 * together with the streams other threads decode at the same moment; engine_calls (may be NULL)
 * receives the number of engine calls of that round. */
VOXRT_C_API voxrt_status voxrt_recognizer_decode(voxrt_recognizer* recognizer,
                                                 voxrt_stream* const* streams, size_t count,
                                                 int* engine_calls);

/* ---- streams ------------------------------------------------------------------------------ */

typedef struct voxrt_stream_options {
  size_t struct_size;
  /* Sample rate of the audio fed in, 1000..384000 (resampled to the model's). Default 16000. */
  int sample_rate_hz;
  /* Phrases to boost (beam decoder only), or NULL. */
  const char* const* hotwords;
  size_t hotword_count;
  /* Per matched unit, 0..20; negative (the default, -1): the model's tuned value, else 1.5.
   * Phrases are normalised to the model's units (case, punctuation). */
  float hotword_bonus;
} voxrt_stream_options;

VOXRT_C_API void voxrt_stream_options_init(voxrt_stream_options* options);

VOXRT_C_API voxrt_status voxrt_stream_create(voxrt_recognizer* recognizer,
                                             const voxrt_stream_options* options,
                                             voxrt_stream** stream);
VOXRT_C_API void voxrt_stream_destroy(voxrt_stream* stream);

/* Mono samples, any count: floats in [-1, 1), or 16-bit integers. */
VOXRT_C_API voxrt_status voxrt_stream_accept_f32(voxrt_stream* stream, const float* samples,
                                                 size_t count);
VOXRT_C_API voxrt_status voxrt_stream_accept_s16(voxrt_stream* stream, const int16_t* samples,
                                                 size_t count);
/* No more audio: the next decode finishes the stream and a final result follows. */
VOXRT_C_API voxrt_status voxrt_stream_input_finished(voxrt_stream* stream);
/* Runs the model on what this stream has ready (voxrt_recognizer_decode for one stream, joined
 * by the streams other threads decode at the same moment). */
VOXRT_C_API voxrt_status voxrt_stream_decode(voxrt_stream* stream);
/* 1 once input_finished was given and everything was decoded (the last results may still wait
 * for voxrt_stream_poll). */
VOXRT_C_API int voxrt_stream_is_finished(const voxrt_stream* stream);

typedef enum voxrt_endpoint {
  VOXRT_ENDPOINT_NONE = 0,                 /* a partial, or the final at the end of input */
  VOXRT_ENDPOINT_TRAILING_SILENCE = 1,     /* long silence with nothing said */
  VOXRT_ENDPOINT_SILENCE_AFTER_SPEECH = 2, /* a pause after speech */
  VOXRT_ENDPOINT_MAX_UTTERANCE_LENGTH = 3, /* the utterance grew too long */
  VOXRT_ENDPOINT_VAD_END_OF_SPEECH = 4,    /* the VAD heard speech end */
  VOXRT_ENDPOINT_FORCE_INT32 = 0x7fffffff
} voxrt_endpoint;

typedef struct voxrt_word {
  const char* word;
  double start_s; /* seconds from the start of the stream */
  double end_s;
  float confidence; /* in (0, 1] */
} voxrt_word;

typedef struct voxrt_result {
  const char* text;
  int is_final; /* 0: a partial (the text so far of the current utterance) */
  int utterance;
  voxrt_endpoint endpoint;
  const voxrt_word* words;
  size_t word_count;
} voxrt_result;

/* The next result the stream produced (in order), or *result = NULL when there is none. Free
 * each with voxrt_result_destroy. */
VOXRT_C_API voxrt_status voxrt_stream_poll(voxrt_stream* stream, voxrt_result** result);
VOXRT_C_API void voxrt_result_destroy(voxrt_result* result);

/* ---- audio files (a convenience for programs that have files rather than a microphone) ---- */

/* Reads a WAV/FLAC/... file as mono floats; free the samples with voxrt_samples_destroy. */
VOXRT_C_API voxrt_status voxrt_read_audio_file(const char* path, float** samples, size_t* count,
                                               int* sample_rate_hz);
VOXRT_C_API void voxrt_samples_destroy(float* samples);

#ifdef __cplusplus
}
#endif

#endif /* VOXRT_VOXRT_C_H_ */
