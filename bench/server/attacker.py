#!/usr/bin/env python3
"""Hostile clients against a voxrt server on loopback (docs/security.md), for soak runs.

Each attack is one function, bounded in count and time; `--attack all` runs them in turn, once.
Only loopback targets are accepted: this is a test tool, not a traffic generator.

Usage: bench/server/attacker.py --port 8080 [--attack NAME|all] [--flac silence.flac] [--json]
Attacks: deep_json, empty_flood, silent_connections, malformed_http, invalid_utf8,
disconnect_storm, upload_bomb. Prints one JSON line per attack: {attack, start_unix_s, seconds,
outcome}.
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys
import threading
import time

HOST = "127.0.0.1"


def connect(port, source="127.0.0.1", timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((HOST, port))
    return s


def frame(opcode, payload, mask=b"\x11\x22\x33\x44"):
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def websocket(port, source="127.0.0.1"):
    s = connect(port, source)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        response += chunk
    if not response.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(response.split(b"\r\n")[0].decode(errors="replace"))
    return s


def drain(s, seconds):
    s.settimeout(0.2)
    end = time.time() + seconds
    data = b""
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk[:4096] if len(data) < 4096 else b""
    return data


def deep_json(port, args):
    results = []
    for body in (b'{"eof": ' + b"[" * 100000 + b"]" * 100000 + b"}",
                 b'{"config": {"words": ' + b"[" * 100000 + b"]" * 100000 + b"}}"):
        s = websocket(port)
        s.sendall(frame(0x1, body))
        reply = drain(s, 3)
        s.close()
        results.append("bad_message" in reply.decode(errors="replace"))
    return {"refused_both": all(results)}


def empty_flood(port, args):
    s = websocket(port, "127.0.0.2")
    s.sendall(frame(0x1, b'{"config": {"sample_rate": 16000}}'))
    s.settimeout(0.05)
    sent = 0
    end = time.time() + args.seconds
    empty = frame(0x2, b"")
    while time.time() < end:
        try:
            s.sendall(empty * 100)
            sent += 100
        except socket.timeout:
            pass  # back-pressure: the server stopped reading
        except OSError:
            break
    s.close()
    return {"frames_sent": sent}


def silent_connections(port, args):
    sockets, refused = [], 0
    for _ in range(args.connections):
        try:
            sockets.append(connect(port, "127.0.0.3"))
        except OSError:
            pass
    for s in sockets:
        s.settimeout(0.2)
        try:
            if s.recv(64).startswith(b"HTTP/1.1 429"):
                refused += 1
        except OSError:
            pass
    time.sleep(min(args.seconds, 5))
    for s in sockets:
        s.close()
    return {"opened": len(sockets), "refused_429": refused}


def malformed_http(port, args):
    answers = []
    for request in (b"GET / HTTP/1.1\r\nHost localhost\r\n\r\n", b"GET /\x01 HTTP/1.1\r\n\r\n",
                    b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
                    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64)):
        s = connect(port)
        s.sendall(request)
        answers.append(drain(s, 2)[:12].decode(errors="replace"))
        s.close()
    return {"answers": answers}


def invalid_utf8(port, args):
    s = websocket(port)
    s.sendall(frame(0x1, b'{"eof": "\xff\xfe"}'))
    reply = drain(s, 2)
    s.close()
    # A close frame: 0x88, length, code.
    at = reply.find(b"\x88")
    code = struct.unpack(">H", reply[at + 2:at + 4])[0] if at >= 0 and len(reply) >= at + 4 else 0
    return {"close_code": code}


def disconnect_storm(port, args):
    pcm = bytes(640)
    done = [0]

    def one():
        try:
            s = websocket(port, "127.0.0.4")
            s.sendall(frame(0x1, b'{"config": {"sample_rate": 16000}}'))
            for _ in range(10):
                s.sendall(frame(0x2, pcm))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # abrupt: a reset, no close handshake
            done[0] += 1
        except OSError:
            pass

    threads = [threading.Thread(target=one) for _ in range(args.storm)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"disconnected": done[0]}


def upload_bomb(port, args):
    if not args.flac:
        return {"skipped": "no --flac"}
    with open(args.flac, "rb") as f:
        audio = f.read()
    body = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.flac\"\r\n"
            b"Content-Type: audio/flac\r\n\r\n" + audio + b"\r\n--b--\r\n")
    s = connect(port, timeout=600)
    s.sendall(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: "
              b"multipart/form-data; boundary=b\r\nContent-Length: " + str(len(body)).encode() +
              b"\r\nConnection: close\r\n\r\n" + body)
    answer = drain(s, 600)
    s.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return {"status": head[:12].decode(errors="replace"), "body": body[:160].decode(errors="replace")}


ATTACKS = {f.__name__: f for f in (deep_json, empty_flood, silent_connections, malformed_http,
                                   invalid_utf8, disconnect_storm, upload_bomb)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--attack", default="all", choices=["all"] + list(ATTACKS))
    parser.add_argument("--flac", default="", help="a long FLAC for upload_bomb")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of timed attacks")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--storm", type=int, default=200)
    args = parser.parse_args()
    names = list(ATTACKS) if args.attack == "all" else [args.attack]
    for name in names:
        start = time.time()
        try:
            outcome = ATTACKS[name](args.port, args)
        except Exception as error:  # an attack that fails to run is reported, not fatal
            outcome = {"failed": str(error)}
        print(json.dumps({"attack": name, "start_unix_s": round(start, 1),
                          "seconds": round(time.time() - start, 2), "outcome": outcome}),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
