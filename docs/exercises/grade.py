#!/usr/bin/env python3
"""Grades a submission to one of Spora's exercises and says what is wrong in plain words.

    python3 docs/exercises/grade.py EXERCISE SUBMISSION [--spora PATH]
                                    [--time-limit SECONDS] [--memory-limit MB]

EXERCISE is one of logcosh, ring, dense, strategy (docs/exercises/EXERCISE.md states each
task). The grader prints three lines and an explanation:

    exercise: logcosh (a custom_grad for log(cosh(x)))
    submission: logcosh.sp
    verdict: wrong answer
      logcosh(-1000.0) printed inf; log(cosh(-1000.0)) is 999.306853. ...

The verdicts: pass, syntax error, type error, wrong answer, wrong derivative, rejected (the
submission breaks a rule of the exercise), runtime error, time limit exceeded, memory limit
exceeded, output limit exceeded, crashed (spora died of a signal). Exit status 0 for pass, 1
for every other verdict, 2 when the grader cannot run (an unknown exercise, no spora binary).

spora is found by --spora, else $SPORA, else `spora` on the PATH, else the build of the
checkout this file is in (build/bin/spora).

Every run of spora happens in a child process, in a fresh temporary folder, with
  - a wall-clock limit (--time-limit, default 20 s per run; the child's whole process group
    is killed when it is reached) and a CPU-time limit (RLIMIT_CPU, twice the wall clock),
  - an address-space limit (--memory-limit, default 2048 MB, RLIMIT_AS; for a spora built
    with AddressSanitizer, whose shadow memory needs more address space than that, the same
    figure goes to ASAN_OPTIONS as max_allocation_size_mb and hard_rss_limit_mb),
  - a limit of 16 MB on what it writes (its output goes to files; RLIMIT_FSIZE),
  - one thread for OpenMP and OpenBLAS, and no core dumps,
so a submission that loops forever, allocates without bound or prints without end gets a
verdict instead of hanging or exhausting the machine. This is not a security sandbox: the
submission runs with the rights of the user who runs the grader.
"""
import argparse
import json
import math
import mmap
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_SOURCE_BYTES = 200_000
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
HARNESS_MARK = "# ---- the grader's test (not your code) ----"


class Verdict(Exception):
    """The end of grading: a verdict and its explanation (lines)."""

    def __init__(self, verdict, *lines):
        super().__init__(verdict)
        self.verdict = verdict
        self.lines = [l for l in lines if l is not None]


# ---- running spora under limits ---------------------------------------------------------------


class Run:
    def __init__(self, rc, out, err, timed_out):
        self.rc, self.out, self.err, self.timed_out = rc, out, err, timed_out

    @property
    def signal(self):
        return -self.rc if self.rc is not None and self.rc < 0 else None


def instrumented(binary):
    """Whether spora was built with AddressSanitizer, whose shadow memory needs far more address
    space than any RLIMIT_AS a grader would set."""
    try:
        with open(binary, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(b"__asan_init") != -1
    except (OSError, ValueError):
        return False


class Runner:
    def __init__(self, spora, time_limit, memory_mb, workdir):
        self.spora, self.time_limit, self.memory_mb, self.workdir = spora, time_limit, memory_mb, workdir
        self.asan = instrumented(spora)

    def run(self, args):
        out_path = os.path.join(self.workdir, ".stdout")
        err_path = os.path.join(self.workdir, ".stderr")
        memory = self.memory_mb * 1024 * 1024
        cpu = int(2 * self.time_limit) + 1

        asan = self.asan

        def limits():
            if not asan:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT_BYTES, OUTPUT_LIMIT_BYTES))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        if asan:  # the sanitizer's own limits instead (an allocation beyond them throws bad_alloc)
            options = (f"max_allocation_size_mb={self.memory_mb}:hard_rss_limit_mb={self.memory_mb}:"
                       "allocator_may_return_null=1:detect_leaks=0")
            env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), options) if o)
        timed_out = False
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            p = subprocess.Popen([self.spora] + args, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=err, env=env, preexec_fn=limits,
                                 start_new_session=True)
            try:
                p.wait(timeout=self.time_limit)
            except subprocess.TimeoutExpired:
                timed_out = True
            try:  # the child and anything it started (a compiler, mpirun)
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()
        return Run(p.returncode, read_text(out_path), read_text(err_path), timed_out)

    def run_checked(self, args, what):
        """Runs spora. A limit reached or a crash becomes the verdict; any other run, failed or
        not, is returned for the exercise to read."""
        r = self.run(args)
        if r.timed_out or r.signal == signal.SIGXCPU:
            raise Verdict("time limit exceeded",
                          f"{what} did not finish within {self.time_limit:g} s: an endless loop, "
                          "or a computation far larger than the exercise needs.")
        if r.signal == signal.SIGXFSZ:
            raise Verdict("output limit exceeded",
                          f"{what} printed more than {OUTPUT_LIMIT_BYTES // (1024 * 1024)} MB.")
        if r.rc != 0 and out_of_memory(r.err):
            raise Verdict("memory limit exceeded",
                          f"{what} tried to use more than {self.memory_mb} MB of memory (a tensor "
                          "far larger than the exercise needs?).")
        if r.signal is not None:
            try:
                name = signal.Signals(r.signal).name
            except ValueError:
                name = str(r.signal)
            raise Verdict("crashed",
                          f"spora was killed by signal {name} while running {what}. This is a "
                          "bug in spora (unbounded recursion is one known cause); the last lines "
                          "it wrote were:", *indent(tail(r.err, 8)))
        return r


def read_text(path):
    with open(path, "rb") as f:
        return f.read(OUTPUT_LIMIT_BYTES).decode("utf-8", "replace")


def out_of_memory(err):
    return any(s in err for s in ("std::bad_alloc", "Cannot allocate memory", "out of memory",
                                  "hard rss limit exhausted", "allocation-size-too-big"))


def tail(text, n):
    lines = [l for l in text.rstrip("\n").split("\n") if l.strip()]
    return lines[-n:]


def head(text, n):
    lines = text.rstrip("\n").split("\n")
    return lines[:n] + (["..."] if len(lines) > n else [])


def indent(lines):
    return ["  " + l for l in lines]


def find_spora(given):
    for candidate in (given, os.environ.get("SPORA"), shutil.which("spora"),
                      os.path.join(HERE, "..", "..", "build", "bin", "spora")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


# ---- numbers in spora's output ----------------------------------------------------------------

NUMBER = re.compile(r"-?(?:inf|nan|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def numbers(line):
    """The numbers of a printed tensor, flat: '[[1.0, -inf], [nan, 2.5]]' -> [1.0, -inf, nan, 2.5]."""
    return [float(t) for t in NUMBER.findall(line)]


def close(a, b, rtol, atol):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def fmt(v):
    return repr(float(v)) if not math.isfinite(v) else f"{v:.6g}"


# ---- the Spora exercises ------------------------------------------------------------------------


def read_source(path, max_bytes=MAX_SOURCE_BYTES):
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise Verdict("rejected", f"cannot read the submission: {e.strerror}.")
    if len(data) > max_bytes:
        raise Verdict("rejected", f"the submission is larger than {max_bytes // 1000} kB; the "
                      "exercise needs a few dozen lines.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Verdict("rejected", "the submission is not UTF-8 text.")


def safe_name(path, extension):
    """The submission's file name for the copy spora reads: letters, digits, _ . - only, not
    starting with - or . (which a command line would take for an option or a hidden file)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path))
    if not name or name[0] in "-.":
        name = "submission_" + name
    return name if name.endswith(extension) else name + extension


def diagnostics(text, student_lines, name):
    """spora's error messages, with a note when they point into the grader's test code."""
    lines = head(text, 14)
    for m in re.finditer(rf"^{re.escape(name)}:(\d+):\d+: error:", text, re.M):
        if int(m.group(1)) > student_lines:
            lines.append(f"(line {m.group(1)} is in the grader's test, after your {student_lines} "
                         "lines: it calls your code as the exercise describes, and that call "
                         "does not fit what you wrote)")
            break
    return indent(lines)


class ProgramExercise:
    """An exercise whose submission is Spora source: definitions the grader's main() calls."""
    harness = ""

    def static_checks(self, src):
        if re.search(r"^\s*def\s+main\s*\(", src, re.M):
            raise Verdict("rejected", "your file defines main(); remove it: the grader appends "
                          "its own main() that calls your code.")

    def grade(self, runner, path):
        src = read_source(path)
        self.static_checks(src)
        name = safe_name(path, ".sp")
        with open(os.path.join(runner.workdir, name), "w", encoding="utf-8") as f:
            f.write(src)
        r = runner.run_checked(["ir", name, "--stage", "parsed", "-o", "parsed.txt"],
                               "parsing your file")
        if r.rc != 0:
            raise Verdict("syntax error", "spora cannot parse your file:",
                          *diagnostics(r.err, 10**9, name))
        student_lines = src.count("\n") + (0 if src.endswith("\n") else 1)
        program = src + ("" if src.endswith("\n") else "\n") + "\n" + HARNESS_MARK + "\n" + self.harness
        with open(os.path.join(runner.workdir, name), "w", encoding="utf-8") as f:
            f.write(program)
        r = runner.run_checked(["check", name], "checking your program")
        if r.rc != 0:
            raise Verdict("type error", "spora rejects the program before running it:",
                          *diagnostics(r.err, student_lines, name), self.type_hint(r.err))
        r = runner.run_checked(["run", name], "your program")
        if r.rc != 0:
            raise Verdict("runtime error", "the program stopped with an error:",
                          *diagnostics(r.err, student_lines, name))
        lines = [l for l in r.out.split("\n") if l.strip()]
        self.check_output(lines, lambda: self.check_derivatives(runner, name))
        return self.success()

    def type_hint(self, err):
        return None

    def check_derivatives(self, runner, name):
        r = runner.run_checked(["grad-check", name, "--tolerance", "1e-4"],
                               "the finite-difference check")
        if r.rc != 0:
            failed = [l for l in r.out.split("\n") if "FAIL" in l]
            raise Verdict("wrong derivative",
                          "spora grad-check compared the derivatives your code gives with finite "
                          "differences of your function (in f64) and they disagree:",
                          *indent(failed or tail(r.out + r.err, 6)))

    def output_lines(self, lines, n):
        if len(lines) != n:
            raise Verdict("wrong answer", f"the grader's test should print {n} lines and printed "
                          f"{len(lines)}: does your code print? (remove its print calls)",
                          *indent(head("\n".join(lines), 8)))


class LogCosh(ProgramExercise):
    title = "logcosh (a custom_grad for log(cosh(x)))"
    points = [-1000.0, -30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0, 1000.0]
    harness = """def main() {
    let x = [-1000.0, -30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0, 1000.0]
    print(logcosh(x))
    print(grad(fn (v) => sum(logcosh(v)))(x))
    print(logcosh(cast(x, f64)))
}
"""

    def static_checks(self, src):
        super().static_checks(src)
        if not re.search(r"^\s*def\s+logcosh\s*\(", src, re.M):
            raise Verdict("rejected", "your file has no function logcosh; the exercise asks for "
                          "`def logcosh(x)`.")
        if not re.search(r"@custom_grad\s*\(\s*\w+\s*\)\s*(?:#[^\n]*)?\n\s*def\s+logcosh\s*\(", src):
            raise Verdict("rejected", "logcosh has no @custom_grad(...) decorator: the exercise is "
                          "to give it its own derivative (write `@custom_grad(logcosh_bwd)` on "
                          "the line above `def logcosh`).")

    def type_hint(self, err):
        # An f64 and an f32 operand of one shape (or a scalar): a value that became f32 on its own.
        pairs = re.findall(r"(f64|f32)(\[[^\]]*\])? and (f64|f32)(\[[^\]]*\])?", err)
        if any(a != c and (b == d or not b or not d) for a, b, c, d in pairs):
            return ("The grader also calls logcosh on an f64 tensor. A number stays weak and takes "
                    "the tensor's dtype, but a primitive applied to a number, like log(2.0), makes "
                    "an f32 tensor: write the number itself (0.6931471805599453).")
        return None

    @staticmethod
    def reference(x):
        a = abs(x)
        return a + math.log1p(math.exp(-2 * a)) - math.log(2.0)

    def check_output(self, lines, finite_differences):
        self.output_lines(lines, 3)
        values, grads, values64 = (numbers(l) for l in lines)
        for got, what in ((values, "f32"), (grads, "f32"), (values64, "f64")):
            if len(got) != len(self.points):
                raise Verdict("wrong answer", f"logcosh of a tensor of {len(self.points)} {what} "
                              f"values gave {len(got)} values; it must work elementwise and keep "
                              "the shape.", f"  printed: {lines[0]}")
        for x, v in zip(self.points, values):
            want = self.reference(x)
            if not close(v, want, 1e-5, 1e-6):
                hint = (" exp or cosh of a large |x| overflows to inf: rewrite log(cosh(x)) so that "
                        "nothing overflows (hint: cosh(x) = exp(|x|) (1 + exp(-2|x|)) / 2)."
                        if not math.isfinite(v) else "")
                raise Verdict("wrong answer", f"logcosh({x}) printed {fmt(v)}; log(cosh({x})) is "
                              f"{want:.6f}.{hint}")
        for x, v in zip(self.points, values64):
            want = self.reference(x)
            if not close(v, want, 1e-12, 1e-12):
                raise Verdict("wrong answer", f"in f64, logcosh({x}) printed {fmt(v)}; log(cosh({x})) "
                              f"is {want:.15f}. Does your code compute in f32 whatever its input "
                              "(a cast, an f32 constant)? Literals like 2.0 take the input's dtype.")
        for x, g in zip(self.points, grads):
            want = math.tanh(x)
            if not close(g, want, 1e-5, 1e-6):
                raise Verdict("wrong derivative", f"the derivative of logcosh at x = {x} is "
                              f"{fmt(g)}; it should be tanh({x}) = {want:.6f}. Your custom_grad's "
                              "backward function receives (x, out, dout) and returns dout times "
                              "the derivative.")
        finite_differences()

    def success(self):
        return ["logcosh is right at every point, from -1000 to 1000, in f32 and f64, and its "
                "derivative agrees with tanh(x) and with finite differences."]


class Dense(ProgramExercise):
    title = "dense (a Dense layer and a momentum step)"
    x = [[1.0, -2.0, 0.5], [0.3, 0.8, -1.5], [2.0, 0.0, 1.0], [-0.7, 0.4, 0.9]]
    lr, mu, steps = 0.1, 0.9, 3
    harness = """def grader_loss(net, x) = sum(tanh(net(x)))

def main() {
    let net = tree_map(fn (t) => t + 0.25, Dense(3, 2, seed=7))
    let x = [[1.0, -2.0, 0.5], [0.3, 0.8, -1.5], [2.0, 0.0, 1.0], [-0.7, 0.4, 0.9]]
    print(net.w)
    print(net.b)
    print(net(x))
    var p = net
    var v = tree_map(fn (t) => t * 0.0, net)
    for i in range(3) {
        let g = grad(grader_loss)(p, x)
        let (p2, v2) = momentum_step(p, g, v, 0.1, 0.9)
        p = p2
        v = v2
        print(p.w)
        print(p.b)
    }
}
"""

    def static_checks(self, src):
        super().static_checks(src)
        if not re.search(r"^\s*model\s+Dense\s*\(", src, re.M):
            raise Verdict("rejected", "your file has no `model Dense(n_in: int, n_out: int)`.")
        if not re.search(r"^\s*def\s+momentum_step\s*\(", src, re.M):
            raise Verdict("rejected", "your file has no function momentum_step(params, grads, "
                          "velocity, lr, mu).")

    def forward(self, w, b):
        return [[sum(xr[i] * w[i][j] for i in range(3)) + b[j] for j in range(2)] for xr in self.x]

    def gradient(self, w, b):
        z = self.forward(w, b)
        dz = [[1 - math.tanh(v) ** 2 for v in row] for row in z]
        gw = [[sum(self.x[r][i] * dz[r][j] for r in range(4)) for j in range(2)] for i in range(3)]
        gb = [sum(dz[r][j] for r in range(4)) for j in range(2)]
        return gw, gb

    def trajectory(self, w, b, rule):
        """The parameters after each of the steps, under an update rule (w, b, v, g) -> (w, b, v)."""
        vw, vb = [[0.0, 0.0] for _ in range(3)], [0.0, 0.0]
        out = []
        for _ in range(self.steps):
            gw, gb = self.gradient(w, b)
            w, vw = rule(w, vw, gw)
            b, vb = rule([b], [vb], [gb])
            b, vb = b[0], vb[0]
            out.append((w, b))
        return out

    def momentum(self, p, v, g):
        v = [[self.mu * vv + gg for vv, gg in zip(vr, gr)] for vr, gr in zip(v, g)]
        return [[pp - self.lr * vv for pp, vv in zip(pr, vr)] for pr, vr in zip(p, v)], v

    def plain_sgd(self, p, v, g):
        return [[pp - self.lr * gg for pp, gg in zip(pr, gr)] for pr, gr in zip(p, g)], v

    def dampened(self, p, v, g):
        v = [[self.mu * vv + (1 - self.mu) * gg for vv, gg in zip(vr, gr)] for vr, gr in zip(v, g)]
        return [[pp - self.lr * vv for pp, vv in zip(pr, vr)] for pr, vr in zip(p, v)], v

    @staticmethod
    def agree(got, want):
        return len(got) == len(want) and all(close(a, b, 1e-4, 1e-5) for a, b in zip(got, want))

    def check_output(self, lines, finite_differences):
        self.output_lines(lines, 3 + 2 * self.steps)
        w_flat, b, y = numbers(lines[0]), numbers(lines[1]), numbers(lines[2])
        if len(w_flat) != 6 or len(b) != 2:
            raise Verdict("wrong answer", "Dense(3, 2) should have w of shape [3, 2] and b of shape "
                          f"[2]; the grader printed w = {lines[0]} and b = {lines[1]}. Keep the "
                          "parameter declarations of the starter file.")
        w = [w_flat[0:2], w_flat[2:4], w_flat[4:6]]
        want = self.forward(w, b)
        got = numbers(lines[2])
        if not self.agree(got, [v for row in want for v in row]):
            raise Verdict("wrong answer", "net(x) is wrong. For x =", f"  {self.x}",
                          f"and the layer's own w = {lines[0]}, b = {lines[1]},",
                          f"  net(x) printed {lines[2]}",
                          f"  x @ w + b is   {[[round(v, 8) for v in row] for row in want]}")
        finite_differences()  # the gradients the steps use
        steps = [(numbers(lines[3 + 2 * k]), numbers(lines[4 + 2 * k])) for k in range(self.steps)]
        reference = self.trajectory(w, b, self.momentum)
        for k, ((gw, gb), (rw, rb)) in enumerate(zip(steps, reference), 1):
            if self.agree(gw, [v for row in rw for v in row]) and self.agree(gb, rb):
                continue
            lines_out = [f"after step {k} of momentum_step(p, g, v, lr={self.lr}, mu={self.mu}) "
                         f"from v = 0, w is {self.show(gw)} and b is {self.show(gb)};",
                         f"  expected w = {self.show([v for row in rw for v in row])}, "
                         f"b = {self.show(rb)} (PyTorch's SGD with momentum: v = mu v + g, "
                         "p = p - lr v)."]
            for rule, name in ((self.plain_sgd, "plain SGD, p = p - lr g: the velocity is not used"),
                               (self.dampened, "v = mu v + (1 - mu) g: the gradient is dampened")):
                aw, ab = self.trajectory(w, b, rule)[k - 1]
                if self.agree(gw, [v for row in aw for v in row]) and self.agree(gb, ab):
                    lines_out.append(f"What you computed is {name}.")
            if k > 1:
                lines_out.append(f"Step{'s 1 to ' + str(k - 1) + ' were' if k > 2 else ' 1 was'} "
                                 "right: is the velocity you return the one you used?")
            raise Verdict("wrong answer", *lines_out)

    @staticmethod
    def show(vals):
        return "[" + ", ".join(f"{v:.6g}" for v in vals) + "]"

    def success(self):
        return ["Dense computes x @ w + b, its gradients agree with finite differences, and "
                f"{self.steps} momentum steps give PyTorch's SGD-with-momentum parameters."]


# ---- the schedule exercise ----------------------------------------------------------------------


class Ring:
    title = "ring (a ring all-reduce schedule, proved by the symbolic checker)"
    ranks, count = 4, 8
    STEP = re.compile(r"^\s*\d+\s*:\s*(send to|recv from|recv-reduce from)\s+(\d+)\s+"
                      r"(?:input|output|scratch)\[(\d+):(\d+)\]")

    def header(self, src):
        for line in src.split("\n"):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            words = text.split()
            if words[0] != "schedule" or len(words) < 2:
                return None
            keys = dict(w.split("=", 1) for w in words[2:] if "=" in w)
            return words[1], keys
        return None

    def grade(self, runner, path):
        src = read_source(path, 100_000)
        name = safe_name(path, ".sched")
        h = self.header(src)
        if h is not None:
            collective, keys = h
            if collective != "all-reduce":
                raise Verdict("wrong answer", f"your schedule's collective is {collective}; the "
                              "exercise asks for all-reduce (the header `schedule all-reduce "
                              "ranks=4 count=8`).")
            for key, want in (("ranks", self.ranks), ("count", self.count)):
                if keys.get(key) != str(want):
                    raise Verdict("wrong answer", f"the header says {key}={keys.get(key, '(none)')}; "
                                  f"the exercise is an all-reduce with ranks={self.ranks} "
                                  f"count={self.count}.")
        with open(os.path.join(runner.workdir, name), "w", encoding="utf-8") as f:
            f.write(src)
        r = runner.run_checked(["coll", "--schedule", name, "--iters", "1", "--warmup", "0"],
                               "the symbolic checker and the run of your schedule")
        if r.rc != 0:
            message = r.err.strip()
            if "the schedule is wrong:" in message:
                why = message.split("the schedule is wrong:", 1)[1].strip()
                raise Verdict("wrong answer", "the symbolic checker proves your schedule wrong:",
                              f"  {why}")
            if re.search(r":\d+:\d+: error:|error: .*rank section", message):
                raise Verdict("syntax error", "spora cannot read your schedule:",
                              *indent(head(message.replace("spora coll: error: ", ""), 10)))
            raise Verdict("runtime error", "spora coll stopped with an error:",
                          *indent(head(message, 10)))
        if "# Wrong elements       : 0 OK" not in r.out:
            raise Verdict("wrong answer", "the checker accepted the schedule but running it over "
                          "threads gave wrong elements:", *indent(tail(r.out, 3)))
        self.check_ring(src)
        return ["the symbolic checker proves your schedule an all-reduce, it runs correctly over "
                "4 threads, and it is a ring towards rank r - 1 moving 2(p-1)/p n = 12 elements "
                "per rank."]

    def check_ring(self, src):
        rank, sent = None, {}
        for line in src.split("\n"):
            text = line.split("#", 1)[0]
            m = re.match(r"^\s*rank\s+(\d+)", text)
            if m:
                rank = int(m.group(1))
                sent[rank] = 0
                continue
            m = self.STEP.match(text)
            if not m or rank is None:
                continue
            kind, peer, lo, hi = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            left, right = (rank - 1) % self.ranks, (rank + 1) % self.ranks
            if kind == "send to":
                sent[rank] += hi - lo
                if peer != left:
                    raise Verdict("wrong answer", f"rank {rank} sends to rank {peer}; in this ring "
                                  "every rank r sends only to rank r - 1 (rank 0 to rank 3), so "
                                  f"rank {rank} sends to rank {left}.")
            elif peer != right:
                raise Verdict("wrong answer", f"rank {rank} receives from rank {peer}; in this "
                              "ring every rank r receives only from rank r + 1 (rank 3 from rank "
                              f"0), so rank {rank} receives from rank {right}.")
        want = 2 * (self.ranks - 1) * self.count // self.ranks
        for r, n in sorted(sent.items()):
            if n != want:
                raise Verdict("wrong answer", f"rank {r} sends {n} elements in all; a ring all-reduce "
                              f"sends 2(p-1)/p n = {want} per rank: p - 1 blocks of n/p = "
                              f"{self.count // self.ranks} in the reduce-scatter, p - 1 in the "
                              "all-gather.")


# ---- the strategy exercise ----------------------------------------------------------------------


class Strategy:
    title = "strategy (beat data parallelism in the simulator)"
    model = os.path.join(HERE, "strategy", "model.sp")
    cluster = os.path.join(HERE, "strategy", "cluster.yaml")
    batch, devices, device_memory = 4096, 8, 24e9

    def grade(self, runner, path):
        src = read_source(path, 100_000)
        try:
            doc = json.loads(src)
        except json.JSONDecodeError as e:
            raise Verdict("syntax error", f"your strategy is not valid JSON: {e.msg} at line "
                          f"{e.lineno}, column {e.colno}.")
        except RecursionError:
            raise Verdict("syntax error", "your strategy is not JSON the grader can read (nested "
                          "too deeply).")
        if not isinstance(doc, dict):
            raise Verdict("type error", "a strategy is a JSON object with a \"mesh\" and "
                          f"\"layouts\"; yours is a {type(doc).__name__}.")
        mesh = doc.get("mesh")
        if not (isinstance(mesh, list) and mesh and
                all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in mesh)):
            raise Verdict("type error", "\"mesh\" must be a list of positive integers, e.g. "
                          f"[8] or [2, 4]; yours is {json.dumps(mesh)[:80]}.")
        n = math.prod(mesh)
        if n != self.devices:
            raise Verdict("wrong answer", f"your mesh {mesh} has {n} devices; the cluster has "
                          f"{self.devices}, and the strategy must use all of them (data "
                          f"parallelism does).")
        if "layouts" in doc and not (isinstance(doc["layouts"], dict) and
                                     all(isinstance(v, str) for v in doc["layouts"].values())):
            raise Verdict("type error", "\"layouts\" must map names to layout strings, e.g. "
                          "{\"net.l1.w\": \"[-, tp]\"}.")
        name = safe_name(path, ".json")
        with open(os.path.join(runner.workdir, name), "w", encoding="utf-8") as f:
            f.write(src)
        common = ["sim", self.model, "--cluster", self.cluster, "--batch", str(self.batch), "--json"]
        r = runner.run_checked(common + ["--strategy", os.path.join(".", name)],
                               "the simulation of your strategy")
        if r.rc != 0:
            raise Verdict("rejected", "spora sim cannot run your strategy:",
                          *indent(head(r.err.strip().replace("spora sim: error: ", "")
                                       .replace("./" + name, name), 10)))
        mine = json.loads(r.out)
        # Data parallelism two ways: DDP's gradient buckets (--strategy dp) and the partitioned
        # step of a strategy file that cuts only the batch. The faster is the one to beat.
        with open(os.path.join(runner.workdir, ".grader-dp.json"), "w", encoding="utf-8") as f:
            json.dump({"mesh": [self.devices], "axes": ["dp"],
                       "layouts": {"x": "[dp, -]", "y": "[dp]"}}, f)
        t_dp = []
        for args in (["--strategy", "dp", "--ranks", str(self.devices)],
                     ["--strategy", ".grader-dp.json"]):
            r = runner.run_checked(common + args, "the simulation of data parallelism")
            if r.rc != 0:
                raise Verdict("runtime error", "the grader could not simulate data parallelism:",
                              *indent(head(r.err, 10)))
            t_dp.append(json.loads(r.out)["step_seconds"])
        t, best = mine["step_seconds"], min(t_dp)
        if mine.get("peak_memory", 0) > self.device_memory:
            raise Verdict("wrong answer", f"your strategy needs {mine['peak_memory'] / 1e9:.2f} GB "
                          f"per device; a device has {self.device_memory / 1e9:.0f} GB.")
        if not t < best:
            raise Verdict("wrong answer", f"your strategy's simulated step takes {t * 1e3:.3f} ms; "
                          f"data parallelism's takes {best * 1e3:.3f} ms ({t_dp[0] * 1e3:.3f} ms "
                          f"with DDP's gradient buckets, {t_dp[1] * 1e3:.3f} ms partitioned). Find "
                          f"one faster than {best * 1e3:.3f} ms (spora sim prints where the time "
                          "goes).")
        return [f"your strategy's simulated step takes {t * 1e3:.3f} ms, data parallelism's "
                f"{best * 1e3:.3f} ms: {best / t:.2f} times faster."]


EXERCISES = {"logcosh": LogCosh, "ring": Ring, "dense": Dense, "strategy": Strategy}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exercise", help=", ".join(EXERCISES))
    ap.add_argument("submission")
    ap.add_argument("--spora", help="the spora binary")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per run of spora")
    ap.add_argument("--memory-limit", type=int, default=2048, help="MB of address space per run")
    a = ap.parse_args()
    if a.exercise not in EXERCISES:
        print(f"grade.py: unknown exercise '{a.exercise}' (exercises: {', '.join(EXERCISES)})")
        return 2
    spora = find_spora(a.spora)
    if spora is None:
        print("grade.py: no spora binary: build Spora, or give --spora PATH")
        return 2
    exercise = EXERCISES[a.exercise]()
    print(f"exercise: {exercise.title}")
    print(f"submission: {os.path.basename(a.submission)}")
    workdir = tempfile.mkdtemp(prefix="spora-grade-")
    try:
        lines = exercise.grade(Runner(spora, a.time_limit, a.memory_limit, workdir), a.submission)
        verdict = "pass"
    except Verdict as v:
        verdict, lines = v.verdict, v.lines
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"verdict: {verdict}")
    for line in lines:
        print(line if line.startswith("  ") else "  " + line)
    return 0 if verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
