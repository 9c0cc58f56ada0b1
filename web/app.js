// The live page: microphone -> AudioWorklet (16 kHz PCM16, 20 ms frames) -> WebSocket (the Vosk
// protocol of docs/server.md) -> partial and final results with word timings, and file uploads
// to /v1/audio/transcriptions. No dependencies; everything it loads comes from this server.
const $ = (id) => document.getElementById(id);
const TARGET_RATE = 16000;
const FRAME_SAMPLES = 320;  // 20 ms at 16 kHz

// What happened, in order, with page-clock times (ms): read by tests/web and the latency bench.
const events = [];
const log = (type, data = {}) => events.push({ type, t: performance.now(), ...data });
window.voxrt = {
  events,
  finalText: () => events.filter((e) => e.type === 'final' && e.text).map((e) => e.text).join(' '),
  // Each binary frame's send-to-reply time (ms) in the current session, and when each frame
  // (20 ms of audio, in stream order) was sent.
  replyMs: () => (session ? session.replyMs : []),
  frameSentAt: () => (session ? session.frameSentAt : []),
};

let session = null;

function setStatus(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
}

function fmtMs(ms) { return ms == null || ms < 0 ? '–' : `${Math.round(ms)} ms`; }

function wordSpan(w) {
  const span = document.createElement('span');
  span.className = 'word';
  span.style.setProperty('--conf', (0.1 + 0.35 * w.conf).toFixed(2));
  span.title = `${w.start.toFixed(2)}–${w.end.toFixed(2)} s, confidence ${w.conf.toFixed(2)}`;
  span.append(w.word);
  const times = document.createElement('small');
  times.textContent = `${w.start.toFixed(2)}–${w.end.toFixed(2)}`;
  span.append(times);
  return span;
}

function showFinal(msg) {
  const li = document.createElement('li');
  for (const w of msg.result || []) li.append(wordSpan(w));
  if (!msg.result || msg.result.length === 0) li.append(msg.text);
  const meta = document.createElement('span');
  meta.className = 'meta';
  const parts = [`endpoint: ${msg.endpoint || (session && session.eofAt ? 'end of input' : '–')}`];
  if (msg.latency) {
    parts.push(`first partial ${fmtMs(msg.latency.first_partial_ms)}`,
               `final ${fmtMs(msg.latency.final_ms)} (server)`);
  }
  meta.textContent = parts.join(' · ');
  li.append(meta);
  $('finals').append(li);
}

function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function onMessage(event) {
  const s = session;
  const msg = JSON.parse(event.data);
  const now = performance.now();
  if (msg.error) {
    log('error', { error: msg.error, kind: msg.kind });
    $('warning').textContent = `server error (${msg.kind}): ${msg.error}`;
    setStatus('error', 'error');
    return;
  }
  if (msg.warning) $('warning').textContent = `server: ${msg.warning}`;
  // One reply per binary frame (finals answer a frame too); replies after eof answer none.
  const sentAt = s.sendTimes.shift();
  if (sentAt !== undefined) s.replyMs.push(now - sentAt);
  if ('partial' in msg) {
    $('partial').textContent = msg.partial;
    if (msg.partial) log('partial', { text: msg.partial });
  } else if ('text' in msg) {
    log('final', { text: msg.text, endpoint: msg.endpoint, latency: msg.latency,
                   words: msg.result || [] });
    $('partial').textContent = '';
    // The empty final that closes a stream after an endpoint says nothing about an utterance.
    if (msg.text) showFinal(msg);
    if (msg.text && msg.endpoint) $('endpoint').textContent = msg.endpoint;
    if (msg.text && msg.latency) {
      if (msg.latency.first_partial_ms >= 0) $('first-partial-ms').textContent = fmtMs(msg.latency.first_partial_ms);
      $('final-ms').textContent = fmtMs(msg.latency.final_ms);
    }
    if (s.eofAt && msg.text !== undefined) {
      $('stop-final-ms').textContent = fmtMs(now - s.eofAt);
      log('final_after_stop', { ms: now - s.eofAt });
    }
  }
  $('reply-ms').textContent = fmtMs(median(s.replyMs.slice(-250)));
}

async function start() {
  $('start').disabled = true;
  $('warning').textContent = '';
  const s = { sendTimes: [], replyMs: [], frameSentAt: [], samplesSent: 0, eofAt: 0 };
  session = s;
  try {
    s.media = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false,
               autoGainControl: false },
    });
    s.context = new AudioContext();
    await s.context.audioWorklet.addModule('/pcm16-worklet.js');
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    s.socket = new WebSocket(`${scheme}://${location.host}/ws`);
    s.socket.binaryType = 'arraybuffer';
    await new Promise((resolve, reject) => {
      s.socket.onopen = resolve;
      s.socket.onerror = () => reject(new Error('the WebSocket did not open'));
    });
    s.socket.onmessage = onMessage;
    s.socket.onclose = (e) => {
      log('closed', { code: e.code, reason: e.reason });
      setStatus(e.code === 1000 ? 'idle' : 'error', e.code === 1000 ? 'idle' : `closed ${e.code}`);
      stopAudio(s);
      $('start').disabled = false;
      $('stop').disabled = true;
    };
    const phrases = $('hotwords').value.split('\n').map((p) => p.trim()).filter(Boolean);
    const config = { sample_rate: TARGET_RATE, words: true };
    if (phrases.length) config.phrase_list = phrases;
    s.socket.send(JSON.stringify({ config }));
    s.node = new AudioWorkletNode(s.context, 'pcm16-resampler', {
      numberOfInputs: 1, numberOfOutputs: 0,
      processorOptions: { targetRate: TARGET_RATE, frameSamples: FRAME_SAMPLES },
    });
    s.node.port.onmessage = ({ data }) => {
      if (s.eofAt || s.socket.readyState !== WebSocket.OPEN) return;
      s.socket.send(data.pcm);
      s.sendTimes.push(performance.now());
      s.frameSentAt.push(performance.now());
      s.samplesSent += FRAME_SAMPLES;
      $('level').value = data.peak;
      $('sent-s').textContent = `${(s.samplesSent / TARGET_RATE).toFixed(1)} s`;
    };
    s.context.createMediaStreamSource(s.media).connect(s.node);
    log('started', { contextRate: s.context.sampleRate });
    setStatus('live', `listening (${s.context.sampleRate} Hz → 16 kHz)`);
    $('stop').disabled = false;
  } catch (err) {
    log('error', { error: String(err) });
    $('warning').textContent = `cannot start: ${err.message || err}`;
    setStatus('error', 'error');
    stopAudio(s);
    $('start').disabled = false;
  }
}

function stopAudio(s) {
  if (s.node) s.node.port.onmessage = null;
  if (s.media) s.media.getTracks().forEach((t) => t.stop());
  if (s.context && s.context.state !== 'closed') s.context.close();
}

function stop() {
  const s = session;
  if (!s || !s.socket) return;
  $('stop').disabled = true;
  stopAudio(s);
  s.eofAt = performance.now();
  log('eof');
  s.socket.send(JSON.stringify({ eof: 1 }));
  setStatus('idle', 'finishing…');
}

// ---- uploads --------------------------------------------------------------------------------

async function transcribeBlob(blob, name) {
  $('upload-result').textContent = `transcribing ${name}…`;
  $('upload-words').textContent = '';
  const form = new FormData();
  form.append('file', blob, name);
  form.append('model', 'voxrt');
  form.append('response_format', 'verbose_json');
  const headers = {};
  if ($('token').value) headers.Authorization = `Bearer ${$('token').value}`;
  const started = performance.now();
  const response = await fetch('/v1/audio/transcriptions', { method: 'POST', body: form, headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = (body.error && (body.error.message || body.error)) || response.statusText;
    $('upload-result').textContent = `${name}: ${response.status} ${message}`;
    log('upload_error', { status: response.status, message });
    return;
  }
  const ms = performance.now() - started;
  $('upload-result').textContent = `${name} (${(body.duration || 0).toFixed(1)} s, ${Math.round(ms)} ms): ${body.text}`;
  for (const w of body.words || []) {
    $('upload-words').append(wordSpan({ word: w.word, start: w.start, end: w.end, conf: w.conf ?? 1 }));
  }
  log('upload', { name, text: body.text, ms, mime: blob.type });
}

function uploadFailed(err) {
  $('upload-result').textContent = String(err);
  log('upload_error', { message: String(err) });
}

function uploadChosen() {
  const file = $('file').files[0];
  if (!file) { $('upload-result').textContent = 'choose a file first'; return; }
  transcribeBlob(file, file.name).catch(uploadFailed);
}

// Records the microphone with the browser's own encoder (WebM/Opus in Chromium and Firefox,
// MP4 with Opus or AAC in Chromium and Safari) and uploads the recording: the formats users'
// browsers produce. The menu lists the ones this browser can write.
const RECORD_TYPES = ['audio/webm;codecs=opus', 'audio/mp4;codecs=opus', 'audio/mp4;codecs=mp4a.40.2',
                      'audio/mp4', 'audio/ogg;codecs=opus'];
for (const type of RECORD_TYPES) {
  if (!window.MediaRecorder || !MediaRecorder.isTypeSupported(type)) continue;
  $('record-format').append(new Option(type.replace('audio/', ''), type));
}
let recorder = null;
async function toggleClip() {
  if (recorder) { recorder.stop(); return; }
  const media = await navigator.mediaDevices.getUserMedia({ audio: true });
  const chunks = [];
  const mimeType = $('record-format').value;
  recorder = new MediaRecorder(media, mimeType ? { mimeType } : {});
  recorder.ondataavailable = (e) => chunks.push(e.data);
  recorder.onstop = () => {
    media.getTracks().forEach((t) => t.stop());
    const type = recorder.mimeType || 'audio/webm';
    const ext = type.includes('mp4') ? 'm4a' : type.includes('ogg') ? 'ogg' : 'webm';
    recorder = null;
    $('record-clip').textContent = 'Record a clip';
    transcribeBlob(new Blob(chunks, { type }), `recording.${ext}`).catch(uploadFailed);
  };
  recorder.start();
  $('record-clip').textContent = 'Stop and transcribe';
  log('recording', { type: recorder.mimeType });
}

$('start').addEventListener('click', start);
$('stop').addEventListener('click', stop);
$('upload-button').addEventListener('click', uploadChosen);
$('record-clip').addEventListener('click', () => toggleClip().catch((err) => {
  uploadFailed(`cannot record: ${err.message || err}`);
}));
