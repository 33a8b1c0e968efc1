"""MassGen side of bench/vs-massgen.mjs: one long-lived Python process driven by JSON lines on stdin.

Replies go, one JSON line each, to the process's original stdout; everything MassGen prints is sent to stderr.
Commands:
  {"cmd": "run", "tasks": [prompt...], "config": {...}, "concurrency": 1}
      every prompt through massgen.run(query, config_dict=config) in this process (one orchestration each);
      reports wall seconds, this process's CPU seconds (all threads) and its children's, and per-task results.
  {"cmd": "cli", "tasks": [prompt...], "argv": [massgen, --automation, ...], "env": {...}}
      one `massgen` CLI process per prompt, sequentially; wall and CPU of the children (getrusage).
  {"cmd": "exit"}
On start it reports {"ready": true, "version", "importS", "importCpuS"}: the cost of `import massgen`.
"""

import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time

_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def reply(obj):
    _out.write(json.dumps(obj) + "\n")
    _out.flush()


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_sys():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


_t0 = time.perf_counter()
_c0 = time.process_time()
import massgen  # noqa: E402

IMPORT_S = time.perf_counter() - _t0
IMPORT_CPU_S = time.process_time() - _c0


async def run_one(prompt, config):
    try:
        result = await massgen.run(query=prompt, config_dict=json.loads(json.dumps(config)))
        answer = result.get("final_answer") or ""
        return {"ok": bool(answer), "selected": result.get("selected_agent"), "answer": answer[:200]}
    except Exception as e:  # a failed orchestration is reported, not fatal
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}


async def run_tasks(tasks, config, concurrency):
    sem = asyncio.Semaphore(max(1, concurrency))

    async def guarded(p):
        async with sem:
            return await run_one(p, config)

    wall0, cpu0, child0, sys0 = time.perf_counter(), time.process_time(), children_cpu(), self_sys()
    results = await asyncio.gather(*(guarded(p) for p in tasks))
    return {
        "wallS": time.perf_counter() - wall0,
        "cpuS": time.process_time() - cpu0,
        "sysS": self_sys() - sys0,
        "childCpuS": children_cpu() - child0,
        "results": results,
    }


def run_cli(tasks, argv, env):
    results = []
    wall0, child0 = time.perf_counter(), children_cpu()
    for prompt in tasks:
        t = time.perf_counter()
        p = subprocess.run([*argv, prompt], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        winner = next(
            (line.split(":", 1)[1].strip() for line in p.stdout.splitlines() if line.startswith("WINNER:")), None
        )
        results.append(
            {
                "ok": p.returncode == 0 and winner is not None,
                "exitCode": p.returncode,
                "selected": winner,
                "wallS": time.perf_counter() - t,
                **({} if p.returncode == 0 else {"tail": p.stdout[-800:]}),
            }
        )
    return {"wallS": time.perf_counter() - wall0, "cpuS": 0.0, "childCpuS": children_cpu() - child0, "results": results}


def main():
    loop = asyncio.new_event_loop()  # one loop for the whole process, as in a long-lived service
    asyncio.set_event_loop(loop)
    reply(
        {
            "ready": True,
            "version": massgen.__version__,
            "python": sys.version.split()[0],
            "importS": IMPORT_S,
            "importCpuS": IMPORT_CPU_S,
        }
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        cmd = msg.get("cmd")
        try:
            if cmd in ("run", "cli"):
                # MassGen writes a log tree per orchestration under ./.massgen; clear it between samples (untimed)
                # so hundreds of runs don't pile up.
                shutil.rmtree(os.path.join(".massgen", "massgen_logs"), ignore_errors=True)
            if cmd == "run":
                reply(loop.run_until_complete(run_tasks(msg["tasks"], msg["config"], msg.get("concurrency", 1))))
            elif cmd == "cli":
                reply(run_cli(msg["tasks"], msg["argv"], msg["env"]))
            elif cmd == "exit":
                reply({"bye": True})
                return
            else:
                reply({"error": f"unknown command {cmd}"})
        except Exception as e:
            reply({"error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
