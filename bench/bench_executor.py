"""Benchmark the sandboxed executor against the two alternatives it replaces.

200 typical programs, each on 6 images (one original scene plus 5 unit-test
scenes), executed three ways in one run:

- warm pool: ``Executor`` with long-lived sandboxed workers (this project);
- fresh process per program: a new ``python -c`` per (program, image) pair, as
  ViUniT does; the slowest mode, so it is timed on a sample and extrapolated;
- in-process ``exec`` with no isolation at all: the lower bound.

    python bench/bench_executor.py            # full run, about a minute on 2 cores
    python bench/bench_executor.py --quick    # smaller run for a smoke test

``--baseline REF`` (a git revision or a directory holding another checkout) adds the
warm-pool arm of that version, measured in the same invocation, alternating with this
version's arm, and prints the ratio of the medians: how much an isolation change
costs, on whatever load the machine has at that moment.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--tree" in sys.argv:  # a pool arm of another checkout (see --baseline)
    ROOT = Path(sys.argv[sys.argv.index("--tree") + 1]).resolve()
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from envs.execution import Executor, to_answer  # noqa: E402

PLAIN_FACTORY = "envs.execution.namespaces:plain_namespace"

# What a ViUniT-style runner does per program: start Python, import the tools,
# load the image, build the namespace, execute, print the answer.
FRESH_RUNNER = """
import json, sys
import numpy as np
from PIL import Image
module, _, attr = sys.argv[3].partition(':')
factory = getattr(__import__(module, fromlist=[attr]), attr)
image = np.asarray(Image.open(sys.argv[2]).convert('RGB'))
namespace = factory(sys.argv[4])
exec(open(sys.argv[1]).read(), namespace)
print(json.dumps(str(namespace['execute_command'](image))))
"""


def have_tools() -> bool:
    try:
        tools = importlib.import_module("envs.tools")
        programs = importlib.import_module("envs.data.programs")
    except ImportError:
        return False
    return hasattr(tools, "build_namespace") and hasattr(programs, "reference_program")


def scenes(n: int, seed: int):
    """(images, scene objects); synthetic drawings when the shapes renderer is absent."""
    rng = random.Random(seed)
    try:
        from envs.data.render import render
        from envs.data.scene import sample_scene
    except ImportError:
        images = []
        for _ in range(n):
            image = np.full((256, 256, 3), 235, np.uint8)
            for _ in range(rng.randint(2, 6)):
                x, y, s = rng.randrange(200), rng.randrange(200), rng.randint(15, 50)
                image[y:y + s, x:x + s] = [rng.randrange(256) for _ in range(3)]
            images.append(image)
        return images, [None] * n
    objs = [sample_scene(rng) for _ in range(n)]
    return [np.asarray(render(s, 256)) for s in objs], objs


def numpy_program(i: int) -> str:
    """Pixel-level programs of the kind models write when they skip the tools."""
    bodies = [
        "mean = image.reshape(-1, 3).mean(axis=0)\n    return ['red', 'green', 'blue'][int(np.argmax(mean))]",
        f"mask = (image.astype(int).sum(axis=2) < {600 - i})\n    return int(mask.sum()) > {1000 + i}",
        "cols = (image.std(axis=2) > 20).any(axis=0)\n    edges = np.flatnonzero(np.diff(cols.astype(int)) == 1)\n    return len(edges)",
        f"half = image[:, :image.shape[1] // 2]\n    return 'left' if half.mean() < image.mean() - {i % 3} else 'right'",
        f"hist = np.bincount((image[..., 0] // 32).ravel(), minlength=8)\n    return int(hist.argmax()) + {i % 2}",
    ]
    return "def execute_command(image):\n    " + bodies[i % len(bodies)] + "\n"


def plain_program(i: int) -> str:
    """Plain computation around the answer: string handling, small loops, math."""
    bodies = [
        f"words = 'the {i} red circles are left of the square'.split()\n    return sorted(words, key=len)[-1]",
        f"total = 0\n    for k in range({200 + i}):\n        total += k * k % 7\n    return total % 5 == 0",
        f"return math.hypot({i}, {i + 1}) > {i + 0.5}",
        f"counts = {{}}\n    for ch in 'abracadabra' * {1 + i % 4}:\n        counts[ch] = counts.get(ch, 0) + 1\n    return max(counts, key=counts.get)",
    ]
    return "def execute_command(image):\n    " + bodies[i % len(bodies)] + "\n"


def build_programs(n: int, original_scene, seed: int, tools: bool) -> list[str]:
    programs: list[str] = []
    if tools:
        from envs.data.programs import reference_program
        from envs.data.questions import sample_question

        rng = random.Random(seed)
        while len(programs) < n * 6 // 10:
            try:
                spec = sample_question(rng, original_scene)["spec"]
            except ValueError:
                continue
            programs.append(reference_program(spec) + f"# variant {len(programs)}\n")
    i = 0
    while len(programs) < n:
        program = numpy_program(i) if i % 2 == 0 else plain_program(i)
        programs.append(program + f"# variant {len(programs)}\n")  # all distinct: no dedup
        i += 1
    return programs


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def worker_startup_cpu(factory, backend) -> float:
    """CPU a worker spends warming up, to subtract it from the pool's CPU."""
    c0 = children_cpu()
    with Executor(workers=1, backend=backend, namespace_factory=factory) as ex:
        ex.wait_ready()
    return children_cpu() - c0


def run_in_process(programs, images, factory_spec, backend):
    """No isolation at all: the same work, straight in this process."""
    module, _, attr = factory_spec.partition(":")
    factory = getattr(__import__(module, fromlist=[attr]), attr)
    answers, compiled = [], {}
    for program, image in zip(programs, images):
        namespace = factory(backend)
        try:
            if program not in compiled:  # compile once per program, as the pool does
                compiled[program] = compile(program, "<program>", "exec")
            exec(compiled[program], namespace)
            answers.append(to_answer(namespace["execute_command"](image.copy())))
        except Exception:
            answers.append(None)
    return answers


def run_fresh_processes(programs, images, factory_spec, backend, workers):
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for k, (program, image) in enumerate(zip(programs, images)):
            prog_path, img_path = f"{tmp}/p{k}.py", f"{tmp}/i{k}.png"
            Path(prog_path).write_text(program)
            Image.fromarray(image).save(img_path)
            jobs.append([sys.executable, "-c", FRESH_RUNNER, prog_path, img_path, factory_spec, backend])
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")

        def one(cmd):
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60).returncode

        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            codes = list(pool.map(one, jobs))
        return time.perf_counter() - start, codes


def workload(args):
    """(tools?, factory, backend, images, programs, one program per (program, image) pair,
    the image of each pair)."""
    tools = have_tools()
    factory, backend = (("envs.tools:build_namespace", "shapes-cv") if tools
                        else (PLAIN_FACTORY, "plain"))
    images, scene_objs = scenes(args.images, args.seed)
    programs = build_programs(args.programs, scene_objs[0], args.seed, tools)
    pair_programs = [p for p in programs for _ in images]
    pair_images = [img for _ in programs for img in images]
    return tools, factory, backend, images, programs, pair_programs, pair_images


def pool_only(args) -> int:
    """One warm-pool measurement of the checkout at --tree; prints one JSON line."""
    _, factory, backend, images, _, pair_programs, pair_images = workload(args)
    kwargs = {} if args.max_tasks is None else {"max_tasks_per_worker": args.max_tasks}
    with Executor(timeout_s=10, workers=args.workers, backend=backend, cache=False,
                  namespace_factory=factory, **kwargs) as ex:
        ex.wait_ready()
        ex.run(pair_programs[:len(images)], pair_images[:len(images)])  # first use
        c0, p0, t0 = children_cpu(), time.process_time(), time.perf_counter()
        results = ex.run(pair_programs, pair_images)
        wall = time.perf_counter() - t0
        parent_cpu = time.process_time() - p0
        stats = dict(ex.stats)
    # Worker CPU is counted once the workers are reaped (start-up included, which the
    # first-use run above also pays in both arms alike).
    cpu = parent_cpu + children_cpu() - c0
    print(json.dumps({"ms_per_run": 1000 * wall / len(results),
                      "parent_cpu_ms_per_run": 1000 * parent_cpu / len(results),
                      "cpu_ms_per_run": 1000 * cpu / len(results),
                      "statuses": dict(Counter(r.status for r in results)), "stats": stats}))
    return 0


def baseline_tree(ref: str, tmp: str) -> str:
    if os.path.isdir(ref):
        return ref
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
    return tmp


def compare(args) -> dict:
    """Warm-pool arms of --baseline and of this checkout, alternated, in subprocesses."""
    arms = [("baseline", args.baseline_tree, None), ("this", str(ROOT), None)]
    if args.fork_arm:
        arms.append(("this, max_tasks_per_worker=1", str(ROOT), 1))
    times: dict = {name: [] for name, _, _ in arms}
    cpus: dict = {name: [] for name, _, _ in arms}
    for _ in range(args.rounds):
        for name, tree, max_tasks in arms:
            cmd = [sys.executable, __file__, "--pool-only", "--tree", tree,
                   "--programs", str(args.programs), "--images", str(args.images),
                   "--workers", str(args.workers), "--seed", str(args.seed)]
            if max_tasks is not None:
                cmd += ["--max-tasks", str(max_tasks)]
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            times[name].append(row["ms_per_run"])
            cpus[name].append(row["cpu_ms_per_run"])
    med = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
    cpu = {name: sorted(v)[len(v) // 2] for name, v in cpus.items()}
    print(f"warm pool, {args.workers} worker(s), baseline {args.baseline} vs this checkout "
          f"({args.rounds} alternating rounds, medians; machine load "
          f"{os.getloadavg()[0]:.1f}):")
    for name in times:
        print(f"  {name:34s} {med[name]:6.2f} ms/run wall, {cpu[name]:6.2f} ms CPU/run  "
              f"(all rounds: {', '.join(f'{t:.2f}' for t in times[name])})")
    for name in list(times)[1:]:
        print(f"  ratio {name} / baseline: {med[name] / med['baseline']:5.2f}x wall, "
              f"{cpu[name] / cpu['baseline']:5.2f}x CPU   (target <= 1.5x)")
    return med


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--fresh-sample", type=int, default=40,
                        help="pairs timed with a fresh process each (then extrapolated)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="40 programs, 12 fresh-process runs")
    parser.add_argument("--baseline", metavar="REF",
                        help="also time the warm pool of this git revision or checkout "
                             "directory, alternating with this one, and print the ratio")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (--baseline)")
    parser.add_argument("--fork-arm", action="store_true",
                        help="with --baseline: also time this checkout with a fresh child "
                             "per program (max_tasks_per_worker=1)")
    parser.add_argument("--pool-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--max-tasks", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.programs, args.fresh_sample = 40, 12
    if args.pool_only:
        return pool_only(args)
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            args.baseline_tree = baseline_tree(args.baseline, tmp)
            compare(args)
        return 0

    tools, factory, backend, images, programs, pair_programs, pair_images = workload(args)
    n = len(pair_programs)
    print(f"executor benchmark: {len(programs)} programs x {len(images)} images = {n} runs; "
          f"namespace {factory} ({'real tools' if tools else 'no tools'}); "
          f"{os.cpu_count()} CPUs")

    timings, cpu = {}, {}
    results_by_mode = {}
    startup_cpu = worker_startup_cpu(factory, backend)
    for workers in sorted({1, args.workers}):
        t0, c0 = time.perf_counter(), children_cpu()
        with Executor(timeout_s=10, workers=workers, backend=backend, cache=False,
                      namespace_factory=factory) as ex:
            ex.wait_ready()
            startup = time.perf_counter() - t0
            t0, p0 = time.perf_counter(), time.process_time()
            results = ex.run(pair_programs, pair_images)
            timings[f"pool{workers}"] = time.perf_counter() - t0
            parent = time.process_time() - p0
            layers = ex.sandbox_layers
        # CPU of parent and workers together, minus the workers' start-up.
        cpu[f"pool{workers}"] = parent + children_cpu() - c0 - workers * startup_cpu
        results_by_mode[workers] = results
        print(f"  warm pool, {workers} worker(s): {timings[f'pool{workers}']:7.2f} s "
              f"({1000 * timings[f'pool{workers}'] / n:6.2f} ms/run, "
              f"{1000 * cpu[f'pool{workers}'] / n:5.2f} ms CPU/run; "
              f"start-up {startup:.2f} s not included)")
    print(f"  sandbox layers: {', '.join(layers)}")

    # Warm up like a worker does (imports, first tool call) on an image outside
    # the benchmark, so the per-image tool caches start cold in both modes.
    run_in_process(pair_programs[:1], [np.full_like(images[0], 128)], factory, backend)
    t0, p0 = time.perf_counter(), time.process_time()
    inproc_answers = run_in_process(pair_programs, pair_images, factory, backend)
    timings["inproc"] = time.perf_counter() - t0
    cpu["inproc"] = time.process_time() - p0
    print(f"  in-process exec, no isolation: {timings['inproc']:7.2f} s "
          f"({1000 * timings['inproc'] / n:6.2f} ms/run, {1000 * cpu['inproc'] / n:5.2f} ms CPU/run)")

    rng = random.Random(args.seed)
    sample = rng.sample(range(n), min(args.fresh_sample, n))
    fresh_time, codes = run_fresh_processes([pair_programs[k] for k in sample],
                                            [pair_images[k] for k in sample], factory, backend,
                                            args.workers)
    per_run = fresh_time / len(sample)
    timings["fresh"] = per_run * n
    print(f"  fresh process per run, {args.workers} at a time: {timings['fresh']:7.2f} s "
          f"({1000 * per_run:6.2f} ms/run; measured on {len(sample)} runs, extrapolated to {n})")

    pool_main = timings[f"pool{args.workers}"]
    print("ratios")
    print(f"  fresh process / warm pool ({args.workers} workers): "
          f"{timings['fresh'] / pool_main:6.1f}x faster   (target >= 10x)")
    print(f"  warm pool (1 worker) / in-process exec:  {timings['pool1'] / timings['inproc']:6.2f}x "
          f"wall time (target <= 2x; the parent's bookkeeping overlaps the worker)")
    print(f"  CPU per run, warm pool (1 worker) / in-process: "
          f"{cpu['pool1'] / cpu['inproc']:6.2f}x (parent + worker CPU, start-up excluded)")
    if args.workers != 1:
        print(f"  warm pool ({args.workers} workers) / in-process exec: "
              f"{pool_main / timings['inproc']:6.2f}x")
    statuses = Counter(r.status for r in results_by_mode[args.workers])
    agree = sum(r.answer == a for r, a in zip(results_by_mode[args.workers], inproc_answers)) / n
    print(f"statuses: {dict(statuses)}; answers equal to in-process exec: {100 * agree:.1f}%; "
          f"fresh-process runs exiting non-zero (program errors): "
          f"{sum(c != 0 for c in codes)}/{len(codes)}")
    print(json.dumps({k: round(v, 4) for k, v in timings.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
