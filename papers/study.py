"""What the studies' run.py scripts share: the CPU's name for their results, and atomic writes
of their outputs (a temporary file in the same folder, then a rename)."""
import json
import os
import platform
import tempfile


def cpu_model():
    """/proc/cpuinfo's model name (or what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def write_text(path, text):
    """Writes `text` to `path` atomically: readers see the old file or the whole new one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path, value):
    write_text(path, json.dumps(value, indent=1) + "\n")


def write_svg(path, lines):
    """An SVG from its element lines, the closing tag added."""
    write_text(path, "\n".join(lines + ["</svg>"]) + "\n")
