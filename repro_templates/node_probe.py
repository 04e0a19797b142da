# ddpbisect's probes (standard library only; torch is imported when present), run as
# `python -c <this file> [versions]`:
# - `versions`: one JSON object with what torch.utils.collect_env reports (report.md's environment);
# - else by `ddpbisect doctor` on every node through the spec's launcher, in the role
#   DDPBISECT_DOCTOR_ROLE names. As the master it binds DDPBISECT_DOCTOR_MASTER (addr:port) and
#   answers time queries until killed; as a node it prints one `DDPBISECT_DOCTOR {json}` line:
#   hostname, versions, memory, disk, the paths of DDPBISECT_DOCTOR_PATHS (a JSON list), the
#   communication variables, and whether the master is reachable and how far its clock is.
import json
import os
import socket
import subprocess
import sys
import time


def versions():
    import platform
    r = {"python": platform.python_version(), "python_executable": sys.executable}
    try:
        import torch
        r["torch"] = torch.__version__
        r["cuda"] = getattr(torch.version, "cuda", None)
        r["cuda_available"] = bool(torch.cuda.is_available())
        r["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        try:
            v = torch.cuda.nccl.version() if r["cuda_available"] else None
            r["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else v
        except Exception:
            r["nccl"] = None
        r["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        r["gloo"] = bool(torch.distributed.is_available() and torch.distributed.is_gloo_available())
    except Exception as e:
        r["torch_error"] = repr(e)
    return r


def emit(r):
    sys.stdout.write("DDPBISECT_DOCTOR " + json.dumps(r) + "\n")
    sys.stdout.flush()


def serve(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, port))
        s.listen(64)
    except OSError as e:
        emit({"role": "master", "hostname": socket.gethostname(), "bind_error": e.strerror or str(e),
              "errno": e.errno})
        return
    emit({"role": "master", "hostname": socket.gethostname(), "listening": True})
    deadline = time.time() + 600
    s.settimeout(1.0)
    while time.time() < deadline:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        with c:
            c.settimeout(5)
            f = c.makefile("rw")
            for line in f:
                f.write("%.6f\n" % time.time())
                f.flush()


def gpu_driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.split("\n")[0].strip() if out.returncode == 0 else None
    except Exception:
        return None


def clock_to(addr, port):
    master = {"addr": addr, "port": port}
    try:
        best = None
        with socket.create_connection((addr, port), timeout=5) as c:
            c.settimeout(5)
            f = c.makefile("rw")
            for _ in range(5):
                t1 = time.time()
                f.write("t\n")
                f.flush()
                t2 = float(f.readline())
                t3 = time.time()
                if best is None or t3 - t1 < best[0]:
                    best = (t3 - t1, t2 - (t1 + t3) / 2)
        master.update(reachable=True, rtt_s=best[0], offset_s=best[1])
    except Exception as e:
        master.update(reachable=False, error=repr(e))
    return master


def node(addr, port):
    r = {"role": "node", "hostname": socket.gethostname()}
    r.update(versions())
    r["gpu_driver"] = gpu_driver()
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
        r["mem_available_bytes"] = int(info["MemAvailable"].split()[0]) * 1024
    except Exception:
        r["mem_available_bytes"] = None
    try:
        st = os.statvfs(os.getcwd())
        r["disk_free_bytes"] = st.f_bavail * st.f_frsize
        r["cwd"] = os.getcwd()
    except Exception:
        r["disk_free_bytes"] = None
    paths = {}
    for p in json.loads(os.environ.get("DDPBISECT_DOCTOR_PATHS", "[]")):
        paths[p] = {"exists": os.path.exists(p), "readable": os.access(p, os.R_OK),
                    "dir": os.path.isdir(p)}
    r["paths"] = paths
    r["variables"] = {k: v for k, v in os.environ.items()
                      if k.startswith(("NCCL_", "TORCH_", "GLOO_"))
                      or k in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")}
    r["master"] = clock_to(addr, port)
    r["time"] = time.time()
    emit(r)


def main():
    role = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DDPBISECT_DOCTOR_ROLE", "node")
    if role == "versions":
        print(json.dumps(versions()))
        return
    addr, _, port = os.environ.get("DDPBISECT_DOCTOR_MASTER", "127.0.0.1:0").rpartition(":")
    if role == "master":
        serve(addr, int(port))
    else:
        node(addr, int(port))


main()
