"""Whether a benchmark may time now: the machine idle and the lake still.

An engine comparison is only as good as its conditions: a server writing to the lake
(feeds, a compaction, a job's publish) or any other work on the two cores shifts one
engine's runs and not the other's. Before timing, each comparison script prints the load
and checks both, over a few seconds:

- the machine: the CPU time spent over the window, from /proc/stat, must stay under a
  tenth of a core (the load average alone lags by a minute);
- the lake: no table's Delta log may gain a version over the window.

Either failing refuses the run (exit 3) with what to do, unless --force is given: stop
`wxlake serve` (and any `wxlake ingest`/`jobs`) on the lake and wait for the machine to
settle; a lake no process writes to is quiescent (Delta snapshots make a changing lake
readable, but its writers still take the cores).
"""
import os
import statistics
import sys
import time


def _cpu_busy():
    """Busy and total jiffies of all CPUs since boot."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _log_versions(lake):
    """The latest Delta log entry of every table under the lake (by directory)."""
    versions = {}
    for root, dirs, files in os.walk(lake):
        if os.path.basename(root) == "_delta_log":
            commits = [f for f in files if f.endswith(".json")]
            versions[os.path.dirname(root)] = max(commits, default="")
            dirs.clear()
    return versions


def require_quiet(lake, force=False, window_s=3.0, max_busy_cores=0.10):
    """Prints the load, then refuses (exit 3) unless the machine and `lake` stay quiet
    over `window_s` seconds (or `force`)."""
    load = os.getloadavg()
    print(f"load average before timing: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min)", flush=True)
    before_versions = _log_versions(lake)
    b0, t0 = _cpu_busy()
    time.sleep(window_s)
    b1, t1 = _cpu_busy()
    cores = os.cpu_count() or 1
    busy_cores = (b1 - b0) / max(t1 - t0, 1) * cores
    changed = sorted(d for d, v in _log_versions(lake).items() if before_versions.get(d) != v)
    print(f"over {window_s:.0f} s: {busy_cores:.2f} of {cores} cores busy; "
          f"{len(changed)} table(s) of the lake committed", flush=True)
    problems = []
    if busy_cores > max_busy_cores:
        problems.append(f"the machine is busy ({busy_cores:.2f} cores over {window_s:.0f} s, more than "
                        f"{max_busy_cores:.2f}): a build, a server or a test run shares the cores")
    if changed:
        problems.append("the lake is changing (new Delta versions of " + ", ".join(changed[:3])
                        + ("..." if len(changed) > 3 else "") + "): stop `wxlake serve` and any ingest or job on it")
    if problems and not force:
        sys.exit("not quiescent, refusing to time: " + "; ".join(problems) + ". Wait, or pass --force.")
    for p in problems:
        print(f"WARNING (--force): {p}", flush=True)


def spread(times):
    """`best / median / worst, spread %` of a list of run times."""
    best, worst = min(times), max(times)
    med = statistics.median(times)
    return f"{best:.2f} / {med:.2f} / {worst:.2f} s, spread {100 * (worst - best) / best:.0f} %"
