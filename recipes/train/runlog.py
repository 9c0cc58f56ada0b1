#!/usr/bin/env python3
"""Appends one GPU run to recipes/RUNLOG.md from what the run brought back ($OUT/summary.json,
written by recipes/device_train.sh): date, machine, steps, audio hours seen, data synthesised,
loss (and the output's last input dependence, train.py: near 0 is an encoder that ignores the
audio), dev WER.

    runlog.py OUT_DIR [--note "run 2: resume, lr 5e-4"] [--log recipes/RUNLOG.md]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def row(summary, note):
    train = summary.get("train") or {}
    synthesis = summary.get("synthesis") or {}
    dev = summary.get("dev") or {}
    checkpoint = summary.get("checkpoint") or {}

    def wer(name):
        result = dev.get(name)
        if not result:
            return "-"
        text = f"{result['wer']:.1f} %"
        if "stream_over_cut_apart" in result:
            text += f" (x{result['stream_over_cut_apart']} of cut apart)"
        return text

    cells = [
        (train.get("started") or "?")[:16].replace("T", " "),
        train.get("machine", "?"),
        f"{train.get('steps', 0)} (total {checkpoint.get('steps', train.get('total_steps', '?'))})",
        f"{train.get('train_seconds', '?')} s",
        f"{train.get('audio_hours', 0):.0f} h (total {checkpoint.get('audio_hours_seen', 0):.0f} h)",
        f"{synthesis.get('audio_hours', '?')} h",
        str(train.get("final_loss", "-")) + (
            f" (input {train['input_dependence'][-1][1]:.2f})"
            if train.get("input_dependence") else ""),
        wer("clean"), wer("snr10"), wer("streams"),
        f"exit {summary.get('exit_status', '?')}, {summary.get('wall_s', '?')} s" +
        (f"; {note}" if note else ""),
    ]
    return "| " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--note", default="")
    parser.add_argument("--log", default=os.path.join(HERE, "..", "RUNLOG.md"))
    args = parser.parse_args()
    with open(os.path.join(args.out_dir, "summary.json")) as f:
        summary = json.load(f)
    line = row(summary, args.note)
    with open(args.log, "a") as f:
        f.write(line + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
