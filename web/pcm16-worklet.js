// AudioWorklet: the microphone at the AudioContext's rate in, 16 kHz PCM16 frames of 20 ms out
// (posted to the page, which sends each as one WebSocket binary message).
//
// Resampling is a windowed-sinc interpolator (Blackman window, cutoff just below the lower
// Nyquist frequency), evaluated at each output instant; it needs no state but the last few
// input samples, so it runs for any input rate (44.1, 48 kHz, ... or 16 kHz unchanged).
const HALF_TAPS = 16;  // zero crossings on each side of the kernel's centre (at the lower rate)

class Pcm16Resampler extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate = 16000, frameSamples = 320 } = options.processorOptions || {};
    this.step = sampleRate / targetRate;  // input samples per output sample
    this.cutoff = Math.min(1, 1 / this.step) * 0.95;  // of the input Nyquist
    this.radius = Math.ceil(HALF_TAPS / this.cutoff);  // kernel half-width in input samples
    this.history = new Float32Array(0);  // input samples still needed by the kernel
    this.historyStart = 0;  // absolute index of history[0]
    this.nextOut = 0;  // absolute input position of the next output sample
    this.frame = new Int16Array(frameSamples);
    this.filled = 0;
    this.peak = 0;
  }

  kernel(x) {
    if (x === 0) return this.cutoff;
    if (Math.abs(x) >= this.radius) return 0;
    const w = 0.42 + 0.5 * Math.cos((Math.PI * x) / this.radius) +
              0.08 * Math.cos((2 * Math.PI * x) / this.radius);
    return (Math.sin(Math.PI * this.cutoff * x) / (Math.PI * x)) * w;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    // Mono: average the channels of this render quantum.
    const n = channels[0].length;
    const mono = new Float32Array(n);
    for (const c of channels) for (let i = 0; i < n; i++) mono[i] += c[i] / channels.length;
    const joined = new Float32Array(this.history.length + n);
    joined.set(this.history);
    joined.set(mono, this.history.length);
    const end = this.historyStart + joined.length;  // absolute index past the last input
    while (this.nextOut + this.radius < end) {
      const centre = this.nextOut;
      const first = Math.max(this.historyStart, Math.ceil(centre - this.radius));
      const last = Math.floor(centre + this.radius);
      let sum = 0;
      for (let k = first; k <= last; k++) sum += joined[k - this.historyStart] * this.kernel(centre - k);
      this.emit(sum);
      this.nextOut += this.step;
    }
    const keepFrom = Math.max(this.historyStart, Math.floor(this.nextOut - this.radius));
    this.history = joined.slice(keepFrom - this.historyStart);
    this.historyStart = keepFrom;
    return true;
  }

  emit(sample) {
    const clipped = Math.max(-1, Math.min(1, sample));
    this.peak = Math.max(this.peak, Math.abs(clipped));
    this.frame[this.filled++] = clipped < 0 ? clipped * 32768 : clipped * 32767;
    if (this.filled === this.frame.length) {
      const pcm = this.frame.slice();
      this.port.postMessage({ pcm: pcm.buffer, peak: this.peak }, [pcm.buffer]);
      this.filled = 0;
      this.peak = 0;
    }
  }
}

registerProcessor('pcm16-resampler', Pcm16Resampler);
