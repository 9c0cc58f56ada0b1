/* Latency of one stream through the C API (bench/interfaces/README.md):
 *   voxrt_c_latency ENGINE AUDIO RUNS
 * Feeds AUDIO in 20 ms pieces RUNS times (a new stream each run); for each piece times
 * accept + decode + poll (feed to result), and after the last piece input_finished until the
 * final is polled (end of input to final). Prints one JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "voxrt/voxrt_c.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double percentile(double* v, size_t n, double p) {
  qsort(v, n, sizeof(double), by_value);
  size_t i = (size_t)(p / 100.0 * (double)n);
  return v[i < n ? i : n - 1];
}

static int ok(voxrt_status s, const char* what) {
  if (s == VOXRT_OK) return 1;
  fprintf(stderr, "error: %s: %s\n", what, voxrt_last_error());
  return 0;
}

/* Polls every result; returns the number of finals with text. */
static int drain(voxrt_stream* stream) {
  int finals = 0;
  voxrt_result* r = NULL;
  while (voxrt_stream_poll(stream, &r) == VOXRT_OK && r != NULL) {
    finals += r->is_final && r->text[0] != '\0';
    voxrt_result_destroy(r);
  }
  return finals;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s ENGINE AUDIO RUNS\n", argv[0]);
    return 1;
  }
  const int runs = atoi(argv[3]);
  voxrt_engine* engine = NULL;
  voxrt_recognizer* recognizer = NULL;
  float* samples = NULL;
  size_t count = 0;
  int rate = 0;
  if (!ok(voxrt_engine_load(argv[1], &engine), "load") ||
      !ok(voxrt_recognizer_create(engine, NULL, &recognizer), "recognizer") ||
      !ok(voxrt_read_audio_file(argv[2], &samples, &count, &rate), "audio")) {
    return 1;
  }
  const size_t piece = (size_t)rate / 50;
  const size_t pieces = (count + piece - 1) / piece;
  double* feed_ms = malloc(sizeof(double) * pieces * (size_t)runs);
  double* final_ms = malloc(sizeof(double) * (size_t)runs);
  size_t feeds = 0;
  int finals = 0;
  for (int run = 0; run < runs; ++run) {
    voxrt_stream_options options;
    voxrt_stream_options_init(&options);
    options.sample_rate_hz = rate;
    voxrt_stream* stream = NULL;
    if (!ok(voxrt_stream_create(recognizer, &options, &stream), "stream")) return 1;
    for (size_t at = 0; at < count; at += piece) {
      const size_t n = count - at < piece ? count - at : piece;
      const double start = now_ms();
      if (!ok(voxrt_stream_accept_f32(stream, samples + at, n), "accept") ||
          !ok(voxrt_stream_decode(stream), "decode")) {
        return 1;
      }
      finals += drain(stream);
      feed_ms[feeds++] = now_ms() - start;
    }
    const double start = now_ms();
    if (!ok(voxrt_stream_input_finished(stream), "finish")) return 1;
    while (!voxrt_stream_is_finished(stream)) {
      if (!ok(voxrt_stream_decode(stream), "decode")) return 1;
    }
    finals += drain(stream);
    final_ms[run] = now_ms() - start;
    voxrt_stream_destroy(stream);
  }
  printf("{\"interface\": \"c\", \"runs\": %d, \"finals\": %d, \"feed_ms_p50\": %.3f, "
         "\"feed_ms_p95\": %.3f, \"feed_ms_max\": %.3f, \"end_to_final_ms_p50\": %.3f, "
         "\"end_to_final_ms_max\": %.3f}\n",
         runs, finals, percentile(feed_ms, feeds, 50), percentile(feed_ms, feeds, 95),
         percentile(feed_ms, feeds, 100), percentile(final_ms, (size_t)runs, 50),
         percentile(final_ms, (size_t)runs, 100));
  free(feed_ms);
  free(final_ms);
  voxrt_samples_destroy(samples);
  voxrt_recognizer_destroy(recognizer);
  voxrt_engine_destroy(engine);
  return 0;
}
