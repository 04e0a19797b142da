#include "probe/node_probe.hpp"

#include "common/text.hpp"

namespace ddpbisect {

namespace {
// What torch.utils.collect_env reports, as a function both probes share.
const char* kVersions = R"(def versions():
    import platform, sys
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
)";
}  // namespace

std::string versions_probe_script() {
  return std::string("import json\n") + kVersions + "print(json.dumps(versions()))\n";
}

std::string node_probe_script() {
  return std::string("import json, os, socket, subprocess, sys, time\n") + kVersions + R"(
def emit(r):
    sys.stdout.write("DDPBISECT_DOCTOR " + json.dumps(r) + "\n")
    sys.stdout.flush()

role = os.environ.get("DDPBISECT_DOCTOR_ROLE", "node")
addr, _, port = os.environ.get("DDPBISECT_DOCTOR_MASTER", "127.0.0.1:0").rpartition(":")
if role == "master":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, int(port)))
        s.listen(64)
    except OSError as e:
        emit({"role": "master", "hostname": socket.gethostname(), "bind_error": e.strerror or str(e),
              "errno": e.errno})
        sys.exit(0)
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
    sys.exit(0)

r = {"role": "node", "hostname": socket.gethostname()}
r.update(versions())
try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=10)
    r["gpu_driver"] = out.stdout.split("\n")[0].strip() if out.returncode == 0 else None
except Exception:
    r["gpu_driver"] = None
try:
    with open("/proc/meminfo") as f:
        info = dict(l.split(":", 1) for l in f if ":" in l)
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
                  if k.startswith(("NCCL_", "TORCH_", "GLOO_")) or k in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")}
master = {"addr": addr, "port": int(port)}
try:
    best = None
    with socket.create_connection((addr, int(port)), timeout=5) as c:
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
r["master"] = master
r["time"] = time.time()
emit(r)
)";
}

nlohmann::json parse_probe_line(const std::string& output) {
  nlohmann::json found = nullptr;
  for (const auto& line : split(output, '\n')) {
    if (!starts_with(line, "DDPBISECT_DOCTOR ")) continue;
    auto j = nlohmann::json::parse(line.substr(17), nullptr, false);
    if (!j.is_discarded()) found = j;
  }
  return found;
}

}  // namespace ddpbisect
