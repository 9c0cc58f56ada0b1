// Runs a model with onnxruntime-node (CPU) on raw tensors described by a manifest, for voxrt's
// reference comparisons (voxrt check, model tests, benchmarks).
//   node ort_run.js DIR     reads DIR/manifest.json, writes DIR/out_K.bin and DIR/outputs.json
// manifest: {"model": path, "threads": n, "inputs": [{"name","dtype","dims","file"}], "outputs": [names],
//            "iterations": n (optional: time n runs and report the median ms)}
'use strict';
const fs = require('fs');
const path = require('path');
const root = path.resolve(__dirname, '..', '..', '.third_party', 'node_modules');
const ort = require(path.join(root, 'onnxruntime-node'));

const typed = {
  f32: ['float32', Float32Array], i64: ['int64', BigInt64Array], i32: ['int32', Int32Array],
  i8: ['int8', Int8Array], u8: ['uint8', Uint8Array], bool: ['bool', Uint8Array],
};
const back = {float32: 'f32', int64: 'i64', int32: 'i32', int8: 'i8', uint8: 'u8', bool: 'bool'};

async function main() {
  const dir = process.argv[2];
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const options = {intraOpNumThreads: manifest.threads || 1, interOpNumThreads: 1,
                   graphOptimizationLevel: 'all', executionMode: 'sequential'};
  const session = await ort.InferenceSession.create(manifest.model, options);
  const feeds = {};
  for (const input of manifest.inputs) {
    const [ortType, Ctor] = typed[input.dtype];
    const bytes = fs.readFileSync(path.join(dir, input.file));
    const data = new Ctor(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    feeds[input.name] = new ort.Tensor(ortType, data, input.dims);
  }
  const results = await session.run(feeds, manifest.outputs);
  const times = [];
  const cpuTimes = [];  // the process's CPU time per run (every thread), ms
  for (let i = 0; i < (manifest.iterations || 0); i++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await session.run(feeds, manifest.outputs);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpuTimes.push((c.user + c.system) / 1e3);
  }
  const out = [];
  manifest.outputs.forEach((name, k) => {
    const t = results[name];
    const file = `out_${k}.bin`;
    fs.writeFileSync(path.join(dir, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    out.push({name, dtype: back[t.type] || t.type, dims: t.dims, file});
  });
  times.sort((a, b) => a - b);
  cpuTimes.sort((a, b) => a - b);
  fs.writeFileSync(path.join(dir, 'outputs.json'),
                   JSON.stringify({outputs: out, times_ms: times, cpu_times_ms: cpuTimes}));
}
main().catch((e) => { console.error(String(e && e.message || e)); process.exit(1); });
