// ddpbisect-isolate: runs one rank of a trial in the trial's private view of its working folder
// (and of the spec's `workload.state` paths), so that nothing a trial writes there reaches a
// later trial. Every rank's command line is wrapped in it (launch/isolation.cpp), locally and
// behind prefix/ssh/slurm launchers alike: it needs nothing but this program on the host.
//
//   ddpbisect-isolate --dir DIR --cwd CWD [--state PATH]... [--keep PATH] -- PROGRAM ARGS...
//
// Method, best first (the first rank of a trial on a host sets it up, under a lock; the other
// ranks on that host join it, so they share one view at the same paths):
//   overlay: a mount namespace (as root; otherwise inside a new user namespace) in which CWD and
//            every state folder are overlayfs mounts, lower = the real folder, upper and work
//            folders under DIR/<host>/; a state file is a copy bind-mounted over the real one.
//            DIR/<host>/upper* then hold exactly what the trial wrote.
//   copy:    CWD copied to DIR/<host>/copy once, ranks run there; state paths are not isolated.
//            One warning line on stderr names it.
// --keep PATH (the trial folder): a path inside CWD that must stay the real one (bind-mounted
// back over the view). DDPBISECT_ISOLATION=copy forces the copy, =none runs in CWD itself.
// Exit status: PROGRAM's (exec), 127 when it cannot start, 126 on a setup failure no method
// could handle.
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* kMe = "ddpbisect-isolate";

[[noreturn]] void die(int code, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  std::exit(code);
}

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

bool write_text(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// overlayfs option values: ',' and ':' and '\' would be read as separators.
std::string ovl_escape(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == ',' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool inside(const fs::path& p, const fs::path& dir) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

struct Options {
  fs::path dir, cwd;
  std::vector<fs::path> state, keep;
  std::vector<std::string> argv;
};

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const char* flag) -> std::string {
    if (i + 1 >= argc) die(126, std::string(flag) + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--dir")
      o.dir = value("--dir");
    else if (a == "--cwd")
      o.cwd = value("--cwd");
    else if (a == "--state")
      o.state.emplace_back(value("--state"));
    else if (a == "--keep")
      o.keep.emplace_back(value("--keep"));
    else
      die(126, "unknown argument '" + a + "' (usage: " + kMe +
                   " --dir DIR --cwd CWD [--state PATH]... [--keep PATH]... -- PROGRAM ARGS...)");
  }
  for (; i < argc; ++i) o.argv.emplace_back(argv[i]);
  if (o.dir.empty() || o.cwd.empty() || o.argv.empty())
    die(126, "usage: ddpbisect-isolate --dir DIR --cwd CWD [--state PATH]... -- PROGRAM ARGS...");
  std::error_code ec;
  o.cwd = fs::canonical(o.cwd, ec);
  if (ec) die(126, "no such working folder: " + o.cwd.string());
  for (auto& s : o.state) {
    auto c = fs::canonical(s, ec);
    if (ec) die(126, "no such state path: " + s.string());
    s = c;
  }
  return o;
}

// The namespace a trial's view lives in: joined through any process still in it.
struct Member {
  pid_t pid;
  unsigned long long mnt_ino;
  int userns;  // 1 when the view is in a user namespace of its own
};

std::vector<Member> read_members(const fs::path& file) {
  std::vector<Member> out;
  std::ifstream in(file);
  Member m{};
  while (in >> m.pid >> m.mnt_ino >> m.userns) out.push_back(m);
  return out;
}

// Joins the view of a member still alive; false when none is (or it is not ours).
bool join(const std::vector<Member>& members) {
  for (const auto& m : members) {
    std::string base = "/proc/" + std::to_string(m.pid) + "/ns/";
    int mnt = ::open((base + "mnt").c_str(), O_RDONLY | O_CLOEXEC);
    if (mnt < 0) continue;
    struct stat st {};
    if (::fstat(mnt, &st) != 0 || st.st_ino != m.mnt_ino) {
      ::close(mnt);
      continue;
    }
    if (m.userns) {
      int user = ::open((base + "user").c_str(), O_RDONLY | O_CLOEXEC);
      if (user < 0 || ::setns(user, CLONE_NEWUSER) != 0) {
        if (user >= 0) ::close(user);
        ::close(mnt);
        continue;
      }
      ::close(user);
    }
    int rc = ::setns(mnt, CLONE_NEWNS);
    ::close(mnt);
    if (rc == 0) return true;
    if (m.userns) die(126, errno_text("cannot join the trial's view (setns)"));
  }
  return false;
}

unsigned long long own_mnt_ino() {
  struct stat st {};
  if (::stat("/proc/self/ns/mnt", &st) != 0) return 0;
  return st.st_ino;
}

// A new mount namespace, unprivileged through a user namespace when plain unshare is refused.
// Returns "" or why neither worked; `userns` says which.
std::string new_namespace(int& userns) {
  userns = 0;
  if (::unshare(CLONE_NEWNS) == 0) return "";
  const std::string as_root = errno_text("unshare(CLONE_NEWNS)");
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
    return as_root + "; " + errno_text("unshare(CLONE_NEWUSER|CLONE_NEWNS)");
  userns = 1;
  // Keep our own identity inside (files the trial writes stay ours).
  write_text("/proc/self/setgroups", "deny");
  if (!write_text("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n") ||
      !write_text("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n"))
    return errno_text("writing the user namespace's id maps");
  return "";
}

std::string overlay(const fs::path& lower, const fs::path& upper, const fs::path& work) {
  std::error_code ec;
  fs::create_directories(upper, ec);
  fs::create_directories(work, ec);
  std::string opts = "lowerdir=" + ovl_escape(lower.string()) +
                     ",upperdir=" + ovl_escape(upper.string()) +
                     ",workdir=" + ovl_escape(work.string());
  if (::mount("overlay", lower.c_str(), "overlay", 0, opts.c_str()) != 0)
    return errno_text("mount -t overlay on " + lower.string());
  return "";
}

// Sets up the view in a fresh namespace: "" on success, else why not (the namespace is then
// unusable and the caller falls back).
std::string set_up_view(const Options& o, const fs::path& host_dir, int& userns) {
  // The real folders that must stay visible as they are (the trial folder inside CWD): opened
  // in the new namespace (a bind mount's source must be in it) before the overlay hides them.
  if (auto why = new_namespace(userns); !why.empty()) return why;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return errno_text("making the mounts private");
  std::vector<std::pair<int, fs::path>> kept;
  for (const auto& k : o.keep) {
    std::error_code ec;
    fs::path real = fs::weakly_canonical(k, ec);
    bool under = inside(real, o.cwd);
    for (const auto& s : o.state) under = under || inside(real, s);
    if (!under) continue;
    int fd = ::open(real.c_str(), O_PATH | O_CLOEXEC);
    if (fd >= 0) kept.push_back({fd, real});
  }
  if (auto why = overlay(o.cwd, host_dir / "upper", host_dir / "work"); !why.empty()) return why;
  for (size_t i = 0; i < o.state.size(); ++i) {
    const fs::path& s = o.state[i];
    const std::string n = std::to_string(i);
    if (fs::is_directory(s)) {
      if (auto why = overlay(s, host_dir / ("upper.state" + n), host_dir / ("work.state" + n));
          !why.empty())
        return why;
    } else {
      // A file: a private copy over it (a write replaces the copy, never the real file).
      fs::path copy = host_dir / ("state" + n) / s.filename();
      std::error_code ec;
      fs::create_directories(copy.parent_path(), ec);
      fs::copy_file(s, copy, fs::copy_options::overwrite_existing, ec);
      if (ec) return "copying state file " + s.string() + ": " + ec.message();
      if (::mount(copy.c_str(), s.c_str(), nullptr, MS_BIND, nullptr) != 0)
        return errno_text("bind-mounting the copy of " + s.string());
    }
  }
  for (const auto& [fd, real] : kept) {
    std::string src = "/proc/self/fd/" + std::to_string(fd);
    if (::mount(src.c_str(), real.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return errno_text("keeping " + real.string() + " visible");
    ::close(fd);
  }
  return "";
}

// Copies a folder tree (symbolic links as links), leaving out `skip` (the trial folder when it
// lies inside: a copy must not copy itself).
std::string copy_tree(const fs::path& from, const fs::path& to, const std::vector<fs::path>& skip) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return "creating " + to.string() + ": " + ec.message();
  for (const auto& e : fs::directory_iterator(from, ec)) {
    const fs::path p = e.path();
    bool skipped = false;
    for (const auto& k : skip) skipped = skipped || fs::weakly_canonical(k, ec) == p;
    if (skipped) continue;
    const fs::path dst = to / p.filename();
    if (e.is_symlink(ec))
      fs::copy_symlink(p, dst, ec);
    else if (e.is_directory(ec)) {
      if (auto why = copy_tree(p, dst, skip); !why.empty()) return why;
      continue;
    } else
      fs::copy_file(p, dst, fs::copy_options::overwrite_existing, ec);
    if (ec) return "copying " + p.string() + ": " + ec.message();
  }
  return ec ? "reading " + from.string() + ": " + ec.message() : "";
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "host";
  std::string h = buf;
  for (auto& c : h)
    if (c == '/') c = '_';
  return h;
}

[[noreturn]] void run(const Options& o, const fs::path& cwd) {
  if (::chdir(cwd.c_str()) != 0) die(126, errno_text("chdir " + cwd.string()));
  std::vector<char*> args;
  for (const auto& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  die(127, errno_text("cannot run " + o.argv[0]));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fs::path host_dir = o.dir / host_name();
  std::error_code ec;
  fs::create_directories(host_dir, ec);
  if (ec) die(126, "cannot create " + host_dir.string() + ": " + ec.message());
  const fs::path members_file = host_dir / "members";

  int lock = ::open((host_dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) die(126, errno_text("locking " + host_dir.string()));

  // DDPBISECT_ISOLATION (workload.env): copy forces the fallback, none runs in the real folder.
  const char* forced = std::getenv("DDPBISECT_ISOLATION");
  const std::string force = forced ? forced : "";
  if (force == "none") {
    ::close(lock);
    run(o, o.cwd);
  }

  // Another rank of this trial on this host set the method up already.
  std::ifstream method_in(host_dir / "method");
  std::string method;
  method_in >> method;
  if (method == "copy") {
    ::close(lock);
    run(o, host_dir / "copy");
  }
  if (method == "overlay" && join(read_members(members_file))) {
    int userns = 0;
    {
      auto ms = read_members(members_file);
      userns = ms.empty() ? 0 : ms.front().userns;
    }
    std::ofstream(members_file, std::ios::app)
        << ::getpid() << " " << own_mnt_ino() << " " << userns << "\n";
    ::close(lock);
    run(o, o.cwd);  // the path again: inside the view now
  }

  // The first rank here (or every earlier one is gone): set the view up. A failure part way
  // leaves this process in a private namespace that still shows the real folders: the copy
  // below reads the same files either way.
  int userns = 0;
  std::string why = force == "copy" ? "DDPBISECT_ISOLATION=copy" : set_up_view(o, host_dir, userns);
  if (why.empty()) {
    std::ofstream(members_file, std::ios::app)
        << ::getpid() << " " << own_mnt_ino() << " " << userns << "\n";
    std::ofstream(host_dir / "method") << "overlay\n";
    ::close(lock);
    run(o, o.cwd);  // the path again: inside the view now
  }

  // Fallback: a copy of the working folder (state paths stay shared).
  std::fprintf(stderr,
               "%s: warning: no overlayfs view (%s); this trial runs in a copy of %s at %s%s\n",
               kMe, why.c_str(), o.cwd.c_str(), (host_dir / "copy").c_str(),
               o.state.empty() ? "" : "; workload.state paths are NOT isolated");
  std::vector<fs::path> skip = o.keep;
  skip.push_back(o.dir);
  if (auto why = copy_tree(o.cwd, host_dir / "copy", skip); !why.empty()) die(126, why);
  std::ofstream(host_dir / "method") << "copy\n";
  ::close(lock);
  run(o, host_dir / "copy");
}
