/* Streaming speech recognition through voxrt's C API (include/voxrt/voxrt_c.h).
 *
 *   voxrt_c_transcribe [--build MODEL.onnx [--no-autotune]] ENGINE AUDIO
 *
 * Builds the engine from the ONNX model first when --build is given, then feeds AUDIO in 20 ms
 * pieces, as a microphone would, decoding after each piece. Prints each final as
 * "AUDIO: text" on stdout (the format of `voxrt transcribe`), and partials and word timings on
 * stderr. Exit status 0 on success, 1 on any error (with voxrt's message). */
#include <stdio.h>
#include <string.h>

#include "voxrt/voxrt_c.h"

static int check(voxrt_status status, const char* what) {
  if (status == VOXRT_OK) return 1;
  fprintf(stderr, "error: %s: %s (%s)\n", what, voxrt_last_error(), voxrt_status_name(status));
  return 0;
}

/* Prints and frees every result the stream has; returns 0 on an error. */
static int print_results(voxrt_stream* stream, const char* audio_path) {
  for (;;) {
    voxrt_result* result = NULL;
    if (!check(voxrt_stream_poll(stream, &result), "poll")) return 0;
    if (result == NULL) return 1;
    if (result->is_final) {
      printf("%s: %s\n", audio_path, result->text);
      for (size_t i = 0; i < result->word_count; ++i) {
        const voxrt_word* w = &result->words[i];
        fprintf(stderr, "  %-12s %6.2f - %6.2f s  conf %.2f\n", w->word, w->start_s, w->end_s,
                (double)w->confidence);
      }
    } else {
      fprintf(stderr, "partial: %s\n", result->text);
    }
    voxrt_result_destroy(result);
  }
}

int main(int argc, char** argv) {
  const char* onnx_path = NULL;
  int autotune = 1;
  int arg = 1;
  for (; arg < argc && strncmp(argv[arg], "--", 2) == 0; ++arg) {
    if (strcmp(argv[arg], "--build") == 0 && arg + 1 < argc) {
      onnx_path = argv[++arg];
    } else if (strcmp(argv[arg], "--no-autotune") == 0) {
      autotune = 0;
    } else {
      fprintf(stderr, "error: unknown option %s\n", argv[arg]);
      return 1;
    }
  }
  if (argc - arg != 2) {
    fprintf(stderr, "usage: %s [--build MODEL.onnx [--no-autotune]] ENGINE AUDIO\n", argv[0]);
    return 1;
  }
  const char* engine_path = argv[arg];
  const char* audio_path = argv[arg + 1];
  if (voxrt_abi_version() != VOXRT_C_ABI_VERSION) {
    fprintf(stderr, "error: libvoxrt_c has ABI %u, this program was built for %u\n",
            voxrt_abi_version(), VOXRT_C_ABI_VERSION);
    return 1;
  }

  if (onnx_path != NULL) {
    voxrt_build_options build;
    voxrt_build_options_init(&build);
    build.autotune = autotune;
    if (!check(voxrt_engine_build(onnx_path, engine_path, &build), "build")) return 1;
  }

  int ok = 0;
  voxrt_engine* engine = NULL;
  voxrt_recognizer* recognizer = NULL;
  voxrt_stream* stream = NULL;
  float* samples = NULL;
  size_t sample_count = 0;
  int sample_rate_hz = 0;
  if (!check(voxrt_engine_load(engine_path, &engine), "load engine")) goto done;
  voxrt_recognizer_options options;
  voxrt_recognizer_options_init(&options);
  options.max_streams = 1;
  if (!check(voxrt_recognizer_create(engine, &options, &recognizer), "recognizer")) goto done;
  if (!check(voxrt_read_audio_file(audio_path, &samples, &sample_count, &sample_rate_hz),
             "read audio")) {
    goto done;
  }
  voxrt_stream_options stream_options;
  voxrt_stream_options_init(&stream_options);
  stream_options.sample_rate_hz = sample_rate_hz;
  if (!check(voxrt_stream_create(recognizer, &stream_options, &stream), "stream")) goto done;

  const size_t piece = (size_t)sample_rate_hz / 50; /* 20 ms */
  for (size_t at = 0; at < sample_count; at += piece) {
    const size_t n = sample_count - at < piece ? sample_count - at : piece;
    if (!check(voxrt_stream_accept_f32(stream, samples + at, n), "accept")) goto done;
    if (!check(voxrt_stream_decode(stream), "decode")) goto done;
    if (!print_results(stream, audio_path)) goto done;
  }
  if (!check(voxrt_stream_input_finished(stream), "input finished")) goto done;
  while (!voxrt_stream_is_finished(stream)) {
    if (!check(voxrt_stream_decode(stream), "decode")) goto done;
  }
  ok = print_results(stream, audio_path);

done:
  voxrt_stream_destroy(stream);
  voxrt_samples_destroy(samples);
  voxrt_recognizer_destroy(recognizer);
  voxrt_engine_destroy(engine);
  return ok ? 0 : 1;
}
