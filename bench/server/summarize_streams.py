#!/usr/bin/env python3
"""Summary of bench/server/gpu_streams.sh: one row per stream count from the loadgen report
(what clients saw), the server's /metrics at the end of the run (what the server measured) and
the CPU and GPU use. Usage: summarize_streams.py OUT_DIR N..."""
import json
import re
import sys
from pathlib import Path


def histogram(metrics: str, name: str):
    """Cumulative buckets [(le, count)], count and sum of one Prometheus histogram."""
    buckets = []
    for le, value in re.findall(rf'^{name}_bucket{{le="([^"]+)"}} (\S+)$', metrics, re.M):
        buckets.append((float("inf") if le == "+Inf" else float(le), float(value)))
    count = re.search(rf"^{name}_count (\S+)$", metrics, re.M)
    total = re.search(rf"^{name}_sum (\S+)$", metrics, re.M)
    return sorted(buckets), float(count.group(1)) if count else 0.0, float(total.group(1)) if total else 0.0


def quantile(buckets, count, q):
    """Linear interpolation inside the bucket that holds quantile q (as Prometheus does)."""
    if count == 0:
        return None
    rank = q * count
    lower_edge, lower_count = 0.0, 0.0
    for edge, cumulative in buckets:
        if cumulative >= rank:
            if edge == float("inf"):
                return lower_edge
            inside = cumulative - lower_count
            return lower_edge + (edge - lower_edge) * ((rank - lower_count) / inside if inside else 1)
        lower_edge, lower_count = edge, cumulative
    return lower_edge


def fraction_at_most(buckets, count, edge):
    for e, cumulative in buckets:
        if abs(e - edge) < 1e-12:
            return cumulative / count if count else None
    return None


def scalar(metrics: str, name: str):
    m = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else None


def labelled(metrics: str, name: str):
    return {k: float(v) for k, v in re.findall(rf'^{name}{{kind="([^"]+)"}} (\S+)$', metrics, re.M)}


def main():
    out = Path(sys.argv[1])
    rows = []
    for n in sys.argv[2:]:
        row = {"streams": int(n)}
        try:
            report = json.loads((out / f"loadgen_{n}.json").read_text())
            for key in ("sessions", "completed", "refused", "errors", "audio_seconds", "wall_seconds", "wer"):
                row[key] = report.get(key)
            for key in ("chunk_latency", "first_partial_latency", "final_latency"):
                row[key] = report.get(key)
            row["first_error"] = next((r["error"] for r in report.get("results", []) if r["error"]), "")
        except (OSError, ValueError) as e:
            row["loadgen_error"] = str(e)
        metrics = (out / f"metrics_{n}.txt").read_text() if (out / f"metrics_{n}.txt").exists() else ""
        b, c, _ = histogram(metrics, "voxrt_reply_latency_seconds")
        row["server_reply_p50_ms"] = (quantile(b, c, 0.50) or 0) * 1000
        row["server_reply_p99_ms"] = (quantile(b, c, 0.99) or 0) * 1000
        row["server_reply_within_30ms"] = fraction_at_most(b, c, 0.03)
        b, c, _ = histogram(metrics, "voxrt_queue_delay_seconds")
        row["server_queue_delay_p99_ms"] = (quantile(b, c, 0.99) or 0) * 1000
        b, c, s = histogram(metrics, "voxrt_engine_seconds")
        row["rounds"] = c
        row["round_mean_ms"] = s / c * 1000 if c else None
        row["round_p99_ms"] = (quantile(b, c, 0.99) or 0) * 1000
        b, c, s = histogram(metrics, "voxrt_batch_size")
        row["mean_batch"] = s / c if c else None
        row["engine_calls"] = scalar(metrics, "voxrt_engine_calls_total")
        row["chunks"] = scalar(metrics, "voxrt_chunks_total")
        row["server_errors"] = labelled(metrics, "voxrt_stream_errors_total")
        row["server_refusals"] = labelled(metrics, "voxrt_refusals_total")
        cpu = {}
        if (out / f"cpu_{n}.txt").exists():
            for line in (out / f"cpu_{n}.txt").read_text().split("\n"):
                parts = line.split()
                if len(parts) == 2:
                    cpu[parts[0]] = float(parts[1])
        if cpu.get("server_wall_s"):
            row["server_cores"] = cpu.get("server_cpu_s", 0) / cpu["server_wall_s"]
        if cpu.get("loadgen_wall_s"):
            row["loadgen_cores"] = cpu.get("loadgen_cpu_s", 0) / cpu["loadgen_wall_s"]
        # Busiest thread of each kind (by name), as a fraction of one core over the run: a
        # compute worker near 1.0 is the limit, whatever the GPU does.
        before, after = {}, {}
        for name, table in ((f"threads_before_{n}.txt", before), (f"threads_after_{n}.txt", after)):
            path = out / name
            if path.exists():
                for i, line in enumerate(path.read_text().split("\n")):
                    parts = line.split()
                    if len(parts) == 2:
                        table[(parts[0], i)] = float(parts[1])
        busiest = {}
        if cpu.get("server_wall_s") and after:
            # Thread order in /proc is stable between the two listings; threads that started
            # during the run count from zero.
            names_before = {}
            for (name, _), seconds in before.items():
                names_before.setdefault(name, []).append(seconds)
            names_after = {}
            for (name, _), seconds in after.items():
                names_after.setdefault(name, []).append(seconds)
            for name, values in names_after.items():
                old = names_before.get(name, [])
                deltas = [v - (old[i] if i < len(old) else 0.0) for i, v in enumerate(values)]
                busiest[name] = {"threads": len(values), "busiest_core_fraction": max(deltas) / cpu["server_wall_s"],
                                 "total_cores": sum(deltas) / cpu["server_wall_s"]}
        row["threads"] = busiest
        util = []
        if (out / f"gpu_{n}.csv").exists():
            for line in (out / f"gpu_{n}.csv").read_text().split("\n"):
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[0].isdigit():
                    util.append(float(parts[0]))
        row["gpu_util_mean_pct"] = sum(util) / len(util) if util else None
        row["gpu_util_max_pct"] = max(util) if util else None
        rows.append(row)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))

    def f(v, fmt="{:.1f}"):
        return "-" if v is None else fmt.format(v)

    print("| streams | client frame p50 / p99 / max ms | first partial p99 | final p99 | server reply p99 ms (within 30 ms) | mean batch | round mean / p99 ms | server cores | loadgen cores | GPU util mean % | errors | refused |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cl = r.get("chunk_latency") or {}
        fp = r.get("first_partial_latency") or {}
        fl = r.get("final_latency") or {}
        within = r.get("server_reply_within_30ms")
        print(f"| {r['streams']} | {f(cl.get('p50_ms'))} / {f(cl.get('p99_ms'))} / {f(cl.get('max_ms'))} | "
              f"{f(fp.get('p99_ms'))} | {f(fl.get('p99_ms'))} | {f(r['server_reply_p99_ms'])} "
              f"({f(within * 100 if within is not None else None, '{:.2f}')} %) | {f(r['mean_batch'])} | "
              f"{f(r['round_mean_ms'], '{:.2f}')} / {f(r['round_p99_ms'])} | {f(r.get('server_cores'), '{:.2f}')} | "
              f"{f(r.get('loadgen_cores'), '{:.2f}')} | {f(r['gpu_util_mean_pct'])} | {r.get('errors')} | {r.get('refused')} |")
        if r.get("threads"):
            print("  threads: " + ", ".join(f"{k} x{v['threads']}: busiest {v['busiest_core_fraction']:.2f} core, all {v['total_cores']:.2f}"
                                            for k, v in sorted(r["threads"].items())))
        if r.get("first_error"):
            print(f"  first client error at {r['streams']}: {r['first_error']}")


if __name__ == "__main__":
    main()
