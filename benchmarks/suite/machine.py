"""The machine a report was measured on: CPU model and flags, cores, memory, compiler, library
versions, the git commit and whether the tree was clean."""
import os
import platform
import re
import subprocess

# Debian packages whose versions change what the suite measures.
PACKAGES = ["libopenblas0", "libopenblas-dev", "libdnnl-dev", "libopenmpi-dev", "openmpi-bin", "libsimgrid-dev",
            "libbenchmark-dev", "libantlr4-runtime-dev", "libfmt-dev", "libyaml-cpp-dev", "g++",
            "python3-torch", "dataset-fashion-mnist"]


def _run(cmd, cwd=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def cpu():
    model, flags, sockets, physical = None, [], set(), set()
    try:
        with open("/proc/cpuinfo") as f:
            phys = None
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and model is None:
                    model = value
                elif key == "flags" and not flags:
                    flags = value.split()
                elif key == "physical id":
                    phys = value
                    sockets.add(value)
                elif key == "core id":
                    physical.add((phys, value))
    except OSError:
        pass
    return {"model": model or platform.processor() or "unknown", "flags": flags,
            "logical_cores": os.cpu_count(), "physical_cores": len(physical) or None,
            "sockets": len(sockets) or None,
            "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}


def memory_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def compiler(build):
    """The C++ compiler of the build (CMakeCache.txt) and its version line, and the build type."""
    cache = os.path.join(build, "CMakeCache.txt")
    cxx, build_type = None, None
    if os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_CXX_COMPILER:"):
                    cxx = line.split("=", 1)[1].strip()
                elif line.startswith("CMAKE_BUILD_TYPE:"):
                    build_type = line.split("=", 1)[1].strip()
    version = _run([cxx or "c++", "--version"])
    return {"path": cxx, "version": version.splitlines()[0] if version else None,
            "build_type": build_type}


def packages():
    out = {}
    for p in PACKAGES:
        v = _run(["dpkg-query", "-W", "-f=${Version}", p])
        if v:
            out[p] = v
    mpi = _run(["mpirun", "--version"])
    if mpi:
        out["mpirun"] = mpi.splitlines()[0]
    return out


def git(root):
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "clean": status == "" if status is not None else None,
            "describe": _run(["git", "describe", "--always", "--dirty"], cwd=root)}


def load_average():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def describe(root, build):
    c = cpu()
    return {"host": platform.node(), "cpu": c["model"], "cpu_flags": c["flags"],
            "cores": {k: c[k] for k in ("logical_cores", "physical_cores", "sockets", "affinity_cores")},
            "memory_bytes": memory_bytes(), "kernel": platform.release(),
            "os": _os_release(), "python": platform.python_version(),
            "compiler": compiler(build), "libraries": packages(), "git": git(root),
            "load_average_at_start": load_average()}


def _os_release():
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'^PRETTY_NAME="?([^"\n]*)', f.read(), re.M)
            return m.group(1) if m else None
    except OSError:
        return None


def busy_cpu_seconds():
    """CPU-seconds the whole machine has been busy (user, nice, system, irq, softirq in /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:8]]
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def own_cpu_seconds():
    """CPU-seconds of this process and of its finished children (the tools the suite ran)."""
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class BackgroundMeter:
    """Cores other processes used while the suite measured: the machine's busy CPU time less the
    suite's own (this process and its children), over the wall time (0 on a quiet machine)."""

    def __init__(self):
        import time
        self._time = time.time
        self.t0, self.busy0, self.own0 = time.time(), busy_cpu_seconds(), own_cpu_seconds()

    def cores(self):
        busy = busy_cpu_seconds()
        wall = self._time() - self.t0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        return round(max(0.0, (busy - self.busy0) - (own_cpu_seconds() - self.own0)) / wall, 2)
