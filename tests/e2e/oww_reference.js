// openWakeWord's streaming feature chain (openwakeword/utils.py AudioFeatures) run by the real
// onnxruntime, as the reference for voxrt's WakeWordDetector: per 1280-sample chunk the
// melspectrogram model on the last 1760 samples (int16 scale), frames scaled x / 10 + 2, the
// embedding model on the last 76 frames (the buffer starts as ones), the head on the last 16
// embeddings (zeros at first); the first 5 scores count as 0.
// Usage: node oww_reference.js ORT_MODULE_DIR MODELS_DIR HEAD.onnx SAMPLES.f32 -> one score a line
const [ortDir, modelsDir, headPath, samplesPath] = process.argv.slice(2);
const ort = require(ortDir);
const fs = require('fs');
(async () => {
  const opts = {intraOpNumThreads: 1};
  const mel = await ort.InferenceSession.create(modelsDir + '/melspectrogram.onnx', opts);
  const emb = await ort.InferenceSession.create(modelsDir + '/embedding_model.onnx', opts);
  const head = await ort.InferenceSession.create(headPath, opts);
  const buf = fs.readFileSync(samplesPath);
  const x = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  let tail = new Float32Array(480);
  const mels = [];
  for (let i = 0; i < 76; i++) mels.push(new Float32Array(32).fill(1));
  const embs = [];
  for (let i = 0; i < 16; i++) embs.push(new Float32Array(96));
  const scores = [];
  for (let c = 0; (c + 1) * 1280 <= x.length; c++) {
    const a = new Float32Array(1760);
    a.set(tail, 0);
    for (let i = 0; i < 1280; i++) a[480 + i] = x[c * 1280 + i] * 32768;
    tail = a.slice(1760 - 480);
    const feeds = {[mel.inputNames[0]]: new ort.Tensor('float32', a, [1, 1760])};
    const m = (await mel.run(feeds))[mel.outputNames[0]].data;
    for (let f = 0; f < m.length / 32; f++)
      mels.push(Float32Array.from(m.slice(f * 32, f * 32 + 32), (v) => v / 10 + 2));
    while (mels.length > 76) mels.shift();
    const w = new Float32Array(76 * 32);
    mels.forEach((f, i) => w.set(f, i * 32));
    const e = (await emb.run({[emb.inputNames[0]]: new ort.Tensor('float32', w, [1, 76, 32, 1])}))[
        emb.outputNames[0]].data;
    embs.push(Float32Array.from(e));
    embs.shift();
    const h = new Float32Array(16 * 96);
    embs.forEach((v, i) => h.set(v, i * 96));
    const s = (await head.run({[head.inputNames[0]]: new ort.Tensor('float32', h, [1, 16, 96])}))[
        head.outputNames[0]].data[0];
    scores.push(c < 5 ? 0 : s);
  }
  console.log(scores.join('\n'));
})();
