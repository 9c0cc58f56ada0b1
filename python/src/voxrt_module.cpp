// The `voxrt` Python package's extension module (_voxrt): engines, recognizers and streams over
// the C++ API (embed/, stream/). Every call that does engine or signal work (building, loading,
// feeding audio, decoding) releases the GIL, so Python threads feeding their own streams run in
// parallel and their decodes batch through one recognizer (embed/shared_recognizer.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "embed/shared_recognizer.h"
#include "embed/streaming_engine_build.h"
#include "voxrt/engine.h"

namespace py = pybind11;

namespace voxrt::python {
namespace {

// voxrt.Error (a RuntimeError): every failure of the library, as "STATUS: message" with voxrt's
// message (what was expected, what was found, where), e.g. "i/o error: cannot open x.engine".
struct VoxrtError {
  StatusCode code;
  std::string message;
};

void throw_if_error(const Status& status) {
  if (!status) throw VoxrtError{status.code(), status.message()};
}

template <typename T>
T value_or_throw(Expected<T> expected) {
  throw_if_error(expected.status());
  return std::move(*expected);
}

struct PyEngine {
  std::string path;
  std::map<std::string, std::string> metadata;

  static PyEngine load(const std::string& path) {
    std::shared_ptr<const Engine> engine;
    {
      py::gil_scoped_release release;
      engine = value_or_throw(Engine::load_file(path));
    }
    // The recognizer loads its own instance; the handle keeps what it reports.
    return PyEngine{path, engine->metadata()};
  }
};

struct PyWord {
  std::string word;
  double start = 0;
  double end = 0;
  float conf = 0;
};

struct PyResult {
  std::string text;
  bool is_final = false;
  int utterance = 0;
  std::string endpoint;
  std::vector<PyWord> words;
};

std::vector<PyResult> convert(std::vector<stream::StreamResult> results) {
  std::vector<PyResult> out;
  out.reserve(results.size());
  for (auto& r : results) {
    PyResult p{std::move(r.result.text),
               r.result.is_final,
               r.utterance,
               decode::endpoint_reason_name(r.endpoint),
               {}};
    for (auto& w : r.result.words)
      p.words.push_back({std::move(w.word), w.start_s, w.end_s, w.confidence});
    out.push_back(std::move(p));
  }
  return out;
}

struct PyRecognizer {
  std::shared_ptr<embed::SharedRecognizer> shared;
  std::string engine_path;
};

struct PyStream {
  std::unique_ptr<embed::SharedStream> shared;

  embed::SharedStream& open() {
    if (!shared) throw VoxrtError{StatusCode::kFailedPrecondition, "stream: it was closed"};
    return *shared;
  }

  // float32/float64 samples in [-1, 1), int16 samples, or bytes of little-endian PCM16.
  void accept(const py::object& audio) {
    embed::SharedStream& s = open();
    std::vector<float> samples;
    if (py::isinstance<py::bytes>(audio) || py::isinstance<py::bytearray>(audio) ||
        py::isinstance<py::memoryview>(audio)) {
      py::buffer_info info = py::reinterpret_borrow<py::buffer>(audio).request();
      const auto bytes = static_cast<std::size_t>(info.size * info.itemsize);
      if (bytes % 2 != 0) {
        throw VoxrtError{
            StatusCode::kInvalidArgument,
            str_cat("accept: bytes are little-endian PCM16, so an even count; got ", bytes)};
      }
      samples.resize(bytes / 2);
      const auto* data = static_cast<const unsigned char*>(info.ptr);
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto value = static_cast<std::int16_t>(data[2 * i] | (data[2 * i + 1] << 8));
        samples[i] = static_cast<float>(value) / 32768.0f;
      }
    } else {
      py::array array = py::array::ensure(audio);
      if (!array) {
        throw VoxrtError{StatusCode::kInvalidArgument,
                         "accept: expected a numpy array (float32/float64 in [-1, 1) or int16) or "
                         "bytes of PCM16"};
      }
      if (array.ndim() != 1) {
        throw VoxrtError{StatusCode::kInvalidArgument,
                         str_cat("accept: expected mono samples (a 1-D array), got ", array.ndim(),
                                 " dimensions")};
      }
      const char kind = array.dtype().kind();
      if (kind == 'i' && array.itemsize() == 2) {
        auto ints = py::array_t<std::int16_t, py::array::c_style | py::array::forcecast>(array);
        samples.resize(static_cast<std::size_t>(ints.size()));
        const std::int16_t* data = ints.data();
        for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = data[i] / 32768.0f;
      } else if (kind == 'f') {
        auto floats = py::array_t<float, py::array::c_style | py::array::forcecast>(array);
        samples.assign(floats.data(), floats.data() + floats.size());
      } else {
        throw VoxrtError{StatusCode::kInvalidArgument,
                         str_cat("accept: samples of dtype ", std::string(py::str(array.dtype())),
                                 " are not audio; give float32/float64 in [-1, 1) or int16")};
      }
    }
    py::gil_scoped_release release;
    throw_if_error(s.stream().accept_pcm(samples));
  }

  void input_finished() { throw_if_error(open().stream().input_finished()); }

  std::vector<PyResult> decode() {
    embed::SharedStream* one = &open();
    {
      py::gil_scoped_release release;
      throw_if_error(one->owner().decode(std::span<embed::SharedStream* const>(&one, 1)).status());
    }
    return convert(one->stream().take_results());
  }

  std::vector<PyResult> results() { return convert(open().stream().take_results()); }

  void close() {
    std::unique_ptr<embed::SharedStream> closing = std::move(shared);
    py::gil_scoped_release release;  // closing waits for a round in progress
    closing.reset();
  }
};

stream::DecoderKind decoder_kind(const std::string& name) {
  if (name == "greedy") return stream::DecoderKind::kGreedy;
  if (name == "beam") return stream::DecoderKind::kBeam;
  throw VoxrtError{StatusCode::kInvalidArgument,
                   str_cat("decoder '", name, "': expected 'greedy' or 'beam'")};
}

stream::VadKind vad_kind(const std::string& name) {
  if (name == "energy") return stream::VadKind::kEnergy;
  if (name == "off") return stream::VadKind::kOff;
  throw VoxrtError{StatusCode::kInvalidArgument,
                   str_cat("vad '", name, "': expected 'energy' or 'off'")};
}

PyRecognizer make_recognizer(const py::object& engine, int max_streams, int max_batch, int threads,
                             const std::string& decoder, std::optional<int> beam_width,
                             const std::optional<std::string>& lm, const std::string& vad) {
  stream::RecognizerConfig config;
  if (py::isinstance<PyEngine>(engine)) {
    config.engine_path = engine.cast<const PyEngine&>().path;
  } else if (py::isinstance<py::str>(engine)) {
    config.engine_path = engine.cast<std::string>();
  } else {
    config.engine_path = py::str(engine).cast<std::string>();  // os.PathLike
  }
  config.max_streams = max_streams;
  config.max_batch = max_batch;
  config.threads = threads;
  config.decoder = decoder_kind(decoder);
  config.decoding.beam_width = beam_width;
  if (lm) config.lm_path = *lm;
  config.vad = vad_kind(vad);
  PyRecognizer r;
  r.engine_path = config.engine_path;
  py::gil_scoped_release release;
  r.shared = value_or_throw(embed::SharedRecognizer::create(config));
  return r;
}

}  // namespace
}  // namespace voxrt::python

PYBIND11_MODULE(_voxrt, m) {
  using namespace voxrt::python;
  namespace embed = voxrt::embed;
  m.doc() = "voxrt: streaming speech recognition (engines, recognizers, streams).";

  static py::exception<VoxrtError> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const VoxrtError& e) {
      error((std::string(voxrt::status_code_name(e.code)) + ": " + e.message).c_str());
    }
  });

  py::class_<PyEngine>(m, "Engine", "A compiled model file (voxrt build), checked on load.")
      .def_static("load", &PyEngine::load, py::arg("path"),
                  "Loads and checks an engine file (magic, version, checksum, target).")
      .def_static(
          "build",
          [](const std::string& onnx_path, const std::string& engine_path, int threads,
             bool autotune, const std::optional<std::string>& timing_cache, int max_batch) {
            embed::StreamingBuildOptions options;
            options.threads = threads;
            options.autotune = autotune;
            options.timing_cache_path = timing_cache.value_or("");
            options.max_batch = max_batch;
            {
              py::gil_scoped_release release;
              throw_if_error(embed::build_streaming_engine(onnx_path, engine_path, options));
            }
            return PyEngine::load(engine_path);
          },
          py::arg("onnx_path"), py::arg("engine_path"), py::kw_only(), py::arg("threads") = 1,
          py::arg("autotune") = true, py::arg("timing_cache") = py::none(),
          py::arg("max_batch") = 64,
          "Compiles a streaming ONNX model into a CPU engine file, with the optimization "
          "profiles taken from the model's metadata (one stream alone; batches up to "
          "max_batch), and loads it. autotune=False skips kernel timing (seconds instead of "
          "minutes).")
      .def_readonly("path", &PyEngine::path, "The engine file.")
      .def_readonly("metadata", &PyEngine::metadata,
                    "The engine's metadata (model contract keys such as voxrt.model_family).")
      .def("__repr__", [](const PyEngine& e) { return "voxrt.Engine('" + e.path + "')"; });

  py::class_<PyWord>(m, "Word", "A recognized word with its times in seconds from stream start.")
      .def_readonly("word", &PyWord::word)
      .def_readonly("start", &PyWord::start, "Start in seconds from the start of the stream.")
      .def_readonly("end", &PyWord::end, "End in seconds from the start of the stream.")
      .def_readonly("conf", &PyWord::conf, "Confidence in (0, 1].")
      .def("__repr__", [](const PyWord& w) {
        return voxrt::str_cat("Word('", w.word, "', ", w.start, ", ", w.end, ", conf=", w.conf,
                              ")");
      });

  py::class_<PyResult>(m, "Result", "A partial (text so far) or final result of an utterance.")
      .def_readonly("text", &PyResult::text)
      .def_readonly("is_final", &PyResult::is_final)
      .def_readonly("utterance", &PyResult::utterance, "Utterance number within the stream.")
      .def_readonly("endpoint", &PyResult::endpoint,
                    "Why a final ended its utterance ('none' for partials and the end of input; "
                    "'rule2_silence_after_speech', 'vad_end_of_speech', ...).")
      .def_readonly("words", &PyResult::words)
      .def("__repr__", [](const PyResult& r) {
        return voxrt::str_cat("Result(", r.is_final ? "final" : "partial", ", '", r.text, "')");
      });

  py::class_<PyStream>(m, "Stream",
                       "One audio source. Feed it from one thread at a time; streams of "
                       "different threads decode together.")
      .def("accept", &PyStream::accept, py::arg("audio"),
           "Feeds mono audio at the stream's sample rate: a numpy array of float32/float64 in "
           "[-1, 1) or int16, or bytes of little-endian PCM16. Any length. Releases the GIL.")
      .def("input_finished", &PyStream::input_finished,
           "No more audio: the next decode() finishes the stream with a final result.")
      .def("decode", &PyStream::decode,
           "Runs the model on what this stream has ready (batched with the streams other "
           "threads decode at the same moment; the GIL is released) and returns the new "
           "results.")
      .def("results", &PyStream::results, "Results produced since the last call, without decoding.")
      .def_property_readonly(
          "finished", [](PyStream& s) { return s.open().stream().finished(); },
          "True once input_finished() was given and everything was decoded.")
      .def_property_readonly(
          "audio_seconds", [](PyStream& s) { return s.open().stream().audio_seconds(); },
          "Seconds of audio accepted so far.")
      .def("close", &PyStream::close, "Gives the stream's state slot back (also on deletion).")
      .def("__enter__", [](PyStream& s) -> PyStream& { return s; })
      .def("__exit__", [](PyStream& s, const py::args&) { s.close(); });

  py::class_<PyRecognizer>(
      m, "Recognizer", "The speech pipeline over an engine, shared by many streams and threads.")
      .def(py::init(&make_recognizer), py::arg("engine"), py::kw_only(),
           py::arg("max_streams") = 64, py::arg("max_batch") = 0, py::arg("threads") = 1,
           py::arg("decoder") = "greedy", py::arg("beam_width") = py::none(),
           py::arg("lm") = py::none(), py::arg("vad") = "energy",
           "engine: an Engine or an engine file path. max_streams: streams open at once; "
           "max_batch: streams per engine call (0: the largest batch the engine's profiles "
           "admit, at most 32); threads: kernel threads; decoder: 'greedy' or 'beam' (lm, and "
           "hotwords with a CTC model, need beam); beam_width: None for the model's tuned value "
           "with an LM, else 8; vad: 'energy' (silence costs no model work) or 'off'.")
      .def(
          "open_stream",
          [](PyRecognizer& r, int sample_rate, const std::vector<std::string>& hotwords,
             std::optional<float> hotword_bonus) {
            voxrt::stream::StreamOptions options;
            options.sample_rate_hz = sample_rate;
            options.hotwords = hotwords;
            options.decoding.hotword_bonus = hotword_bonus;
            PyStream s;
            py::gil_scoped_release release;  // waits for a round in progress
            s.shared = value_or_throw(r.shared->open_stream(options));
            return s;
          },
          py::arg("sample_rate") = 16000, py::arg("hotwords") = std::vector<std::string>{},
          py::arg("hotword_bonus") = py::none(),
          "Opens a stream for audio at sample_rate Hz (resampled to the model's rate). "
          "hotwords: phrases to boost (case and punctuation normalised to the model's units); "
          "hotword_bonus: per matched unit, None for the model's value, else 1.5.")
      .def(
          "decode",
          [](PyRecognizer& r, const std::vector<PyStream*>& streams) {
            std::vector<embed::SharedStream*> shared;
            for (PyStream* s : streams) shared.push_back(&s->open());
            py::gil_scoped_release release;
            return value_or_throw(r.shared->decode(shared));
          },
          py::arg("streams"),
          "Runs what the streams have ready, in batches of up to max_batch per engine call; "
          "returns the engine calls made. Take each stream's results with Stream.results().")
      .def_property_readonly(
          "rounds", [](const PyRecognizer& r) { return r.shared->rounds(); },
          "Decode rounds run so far (decodes of threads that met share one).")
      .def_property_readonly(
          "engine_calls", [](const PyRecognizer& r) { return r.shared->engine_calls(); },
          "Engine calls so far (each one a batch of streams).")
      .def_property_readonly(
          "sample_rate",
          [](const PyRecognizer& r) {
            return r.shared->recognizer().feature_config().sample_rate_hz;
          },
          "The model's sample rate in Hz.")
      .def_property_readonly(
          "streams_open",
          [](const PyRecognizer& r) { return r.shared->recognizer().streams_open(); })
      .def_readonly("engine_path", &PyRecognizer::engine_path);
}
