#!/usr/bin/env python3
"""Streams a WAV to `voxrt serve` over its WebSocket protocol (docs/server.md) and prints every
message the server sends, one JSON document a line. Debian's python3 has no WebSocket module:
the handshake and the client frames are bench/server/attacker.py's, the server frames are read
here; for the e2e tests, loopback only.

usage: ws_stream.py PORT WAV [CONFIG_JSON] [--frame-ms N]
  CONFIG_JSON: the object sent as {"config": ...} before the audio (omit: none).
  Every binary frame of N ms (default 20) of 16-bit PCM waits for its one reply, as Vosk
  clients do; then {"eof": 1}, and the messages until the server closes.
"""
import json
import os
import struct
import sys
import wave

# The frame encoder and the handshake of bench/server/attacker.py (its hostile clients speak the
# same protocol).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../bench/server"))
import attacker  # noqa: E402


def send_frame(sock, opcode, payload):
    sock.sendall(attacker.frame(opcode, payload))


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the server closed the connection")
        data += chunk
    return data


def read_message(sock):
    """(opcode, payload) of the next whole message; pings are answered."""
    while True:
        first, second = read_exactly(sock, 2)
        opcode = first & 0x0F
        n = second & 0x7F
        if n == 126:
            n = struct.unpack(">H", read_exactly(sock, 2))[0]
        elif n == 127:
            n = struct.unpack(">Q", read_exactly(sock, 8))[0]
        payload = read_exactly(sock, n)
        if opcode == 0x9:
            send_frame(sock, 0xA, payload)
            continue
        return opcode, payload


def main(argv):
    frame_ms = 20
    if "--frame-ms" in argv:
        at = argv.index("--frame-ms")
        frame_ms = int(argv[at + 1])
        del argv[at:at + 2]
    port, wav_path = int(argv[1]), argv[2]
    config = json.loads(argv[3]) if len(argv) > 3 else None
    with wave.open(wav_path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, "16-bit mono WAV expected"
        rate = w.getframerate()
        pcm = w.readframes(w.getnframes())
    sock = attacker.websocket(port)
    sock.settimeout(120)  # a window's decode on a loaded machine, not attacker.py's 5 s

    def show(opcode, payload):
        if opcode == 0x1:
            print(payload.decode(), flush=True)
            return True
        if opcode == 0x8:
            code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
            print(json.dumps({"close": code, "reason": payload[2:].decode(errors="replace")}),
                  flush=True)
            return False
        return True

    if config is not None:
        config.setdefault("sample_rate", rate)
        send_frame(sock, 0x1, json.dumps({"config": config}).encode())
    step = rate * frame_ms // 1000 * 2
    for at in range(0, len(pcm), step):
        send_frame(sock, 0x2, pcm[at:at + step])
        if not show(*read_message(sock)):
            return
    send_frame(sock, 0x1, b'{"eof": 1}')
    while show(*read_message(sock)):
        pass
    send_frame(sock, 0x8, struct.pack(">H", 1000))
    sock.close()


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (BrokenPipeError, ConnectionResetError, EOFError) as e:
        # A stream the server refused is closed under the client's feet; what it said is printed.
        print(json.dumps({"client": "connection ended: %s" % e}), flush=True)
