// RunScenarios: baseline and drained at once, each in a child process.
//
// ns-3 keeps one simulator per process (event list, node list, attribute
// defaults are globals), so two runs in one process can only take turns.
// The runs are independent: one child process per run, each builds and runs
// its scenario, and the parent reads back what RunOutput holds over a pipe
// or socket. On 2 cores that halves the wall time. A child is either
//   - forked (the default): a copy-on-write copy of this process, the
//     parent's RunInput already in it, nothing to send. Only safe in a
//     single-threaded parent: the copy inherits every lock another thread
//     held at fork() time (the CLI, the tests, the benchmarks); or
//   - spawned (PacketOptions::worker_program): posix_spawn of the program's
//     `packet-worker` command, a fresh process that copies nothing, sent
//     its run over a Unix socket (fd 3 in the child). Safe from any thread;
//     the daemon uses it.
//
// Process handling is confined to this file. A forked child only runs ns-3
// and writes to its pipe, then _exit()s: no destructors, no atexit
// handlers, no logger, no other thread (a forked child has only the forking
// thread). The parent forks under the ns-3 mutex, so no in-process run is
// half-built in the copy. Children die with the thread that started them
// (PR_SET_PDEATHSIG) and are killed (SIGKILL, by pid) when `stop` fires.
//
// Wire format, host byte order (the same binary both ends).
// Child to parent:
//   'P' double                      progress 0..1
//   'R' u64 n, n doubles            flow_done_s
//       PacketRunStats scalars      simulated_s, wall_s, packets_sent, ecn_marks, drops
//       u64 m, m PacketLinkStats    links (trivially copyable)
//   'E' i32 code, u64 n, n chars    an Error
// Parent to a spawned child, then the end of the stream (shutdown):
//   'I' u32 kWireVersion, RunSettings (trivially copyable), RunInput's
//       arrays, each as u64 n and n elements (EncodeRun)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "sim/packet/packet_run.h"

namespace drainwise::sim::packet_internal {

namespace {

static_assert(std::is_trivially_copyable_v<PacketLinkStats>);
static_assert(std::is_trivially_copyable_v<RunSettings>);
static_assert(std::is_trivially_copyable_v<RunLink>);

// Bumped with every change of the parent-to-worker format (a worker checks it).
constexpr uint32_t kWireVersion = 1;

// To a pipe or a socket; on a socket without SIGPIPE when the peer is gone
// (the daemon's sockets and a worker's: an error to return, not a signal).
bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  bool socket = true;
  while (n > 0) {
    ssize_t w = socket ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
    if (w < 0 && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

template <class T>
void Put(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
void PutArray(std::string& out, const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  Put(out, static_cast<uint64_t>(v.size()));
  if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string EncodeOutput(const RunOutput& o) {
  std::string out(1, 'R');
  PutArray(out, o.flow_done_s);
  Put(out, o.stats.simulated_s);
  Put(out, o.stats.wall_s);
  Put(out, o.stats.packets_sent);
  Put(out, o.stats.ecn_marks);
  Put(out, o.stats.drops);
  PutArray(out, o.stats.links);
  return out;
}

std::string EncodeError(const Error& e) {
  std::string out(1, 'E');
  Put(out, static_cast<int32_t>(e.code));
  Put(out, static_cast<uint64_t>(e.message.size()));
  out += e.message;
  return out;
}

std::string EncodeRun(const RunInput& in) {
  std::string out(1, 'I');
  Put(out, kWireVersion);
  Put(out, in.settings);
  PutArray(out, in.is_host);
  PutArray(out, in.links);
  Put(out, static_cast<uint64_t>(in.routes.size()));
  for (const RunRoute& r : in.routes) {
    Put(out, r.node);
    Put(out, r.dst_link);
    PutArray(out, r.next_links);
  }
  Put(out, static_cast<uint64_t>(in.flows.size()));
  for (const RunFlow& f : in.flows) {
    Put(out, f.job_slot);
    Put(out, f.src);
    Put(out, f.dst);
    Put(out, f.src_link);
    Put(out, f.dst_link);
    Put(out, f.connections);
    Put(out, f.bytes);
    Put(out, f.steps);
    PutArray(out, f.preds);
  }
  Put(out, in.initial_cwnd_segments);
  return out;
}

// Reads what the parent has buffered from one child, message by message.
class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  bool Has(size_t n) const { return pos_ + n <= b_.size(); }
  template <class T>
  bool Get(T& v) {
    if (!Has(sizeof v)) return false;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  template <class T>
  bool GetArray(std::vector<T>& v, uint64_t n) {
    if (n > (b_.size() - pos_) / sizeof(T)) return false;
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));  // an empty vector's data() may be null
    pos_ += n * sizeof(T);
    return true;
  }
  template <class T>
  bool GetArray(std::vector<T>& v) {
    uint64_t n = 0;
    return Get(n) && GetArray(v, n);
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

// The run a worker was sent, or nullopt when the message is not one
// (truncated, another version, bytes left over, indices out of range).
std::optional<RunInput> DecodeRun(const std::string& b) {
  Reader r(b);
  RunInput in;
  char tag = 0;
  uint32_t version = 0;
  uint64_t routes = 0, flows = 0;
  if (!r.Get(tag) || tag != 'I' || !r.Get(version) || version != kWireVersion || !r.Get(in.settings) ||
      !r.GetArray(in.is_host) || !r.GetArray(in.links) || !r.Get(routes) || routes > b.size()) {
    return std::nullopt;
  }
  const size_t nodes = in.is_host.size(), links = in.links.size();
  for (const RunLink& l : in.links) {
    if (l.a >= nodes || l.b >= nodes) return std::nullopt;
  }
  in.routes.resize(routes);
  for (RunRoute& route : in.routes) {
    if (!r.Get(route.node) || !r.Get(route.dst_link) || !r.GetArray(route.next_links)) return std::nullopt;
    if (route.node >= nodes || route.dst_link >= links) return std::nullopt;
    for (uint32_t l : route.next_links) {
      if (l >= links) return std::nullopt;
    }
  }
  if (!r.Get(flows) || flows > b.size()) return std::nullopt;
  in.flows.resize(flows);
  for (RunFlow& f : in.flows) {
    if (!r.Get(f.job_slot) || !r.Get(f.src) || !r.Get(f.dst) || !r.Get(f.src_link) || !r.Get(f.dst_link) ||
        !r.Get(f.connections) || !r.Get(f.bytes) || !r.Get(f.steps) || !r.GetArray(f.preds)) {
      return std::nullopt;
    }
    if (f.src >= nodes || f.dst >= nodes || f.src_link >= links || f.dst_link >= links) return std::nullopt;
    for (uint32_t p : f.preds) {
      if (p >= flows) return std::nullopt;
    }
  }
  if (!r.Get(in.initial_cwnd_segments) || r.pos() != b.size()) return std::nullopt;
  return in;
}

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end
  std::string buffer;
  double progress = 0;
  bool eof = false;
  bool answered = false;
  Result<RunOutput> result = MakeError(ErrorCode::kInternal, "no answer");
};

// Consumes the complete messages at the front of the child's buffer.
void Parse(Child& c) {
  for (;;) {
    Reader r(c.buffer);
    char tag = 0;
    if (!r.Get(tag)) return;
    if (tag == 'P') {
      double f = 0;
      if (!r.Get(f)) return;
      c.progress = f;
    } else if (tag == 'R') {
      RunOutput o;
      uint64_t n = 0, m = 0;
      if (!r.Get(n) || !r.GetArray(o.flow_done_s, n)) return;
      if (!r.Get(o.stats.simulated_s) || !r.Get(o.stats.wall_s) || !r.Get(o.stats.packets_sent) ||
          !r.Get(o.stats.ecn_marks) || !r.Get(o.stats.drops) || !r.Get(m) || !r.GetArray(o.stats.links, m)) {
        return;
      }
      c.result = std::move(o);
      c.answered = true;
    } else if (tag == 'E') {
      int32_t code = 0;
      uint64_t n = 0;
      if (!r.Get(code) || !r.Get(n) || !r.Has(n)) return;
      c.result = MakeError(static_cast<ErrorCode>(code), c.buffer.substr(r.pos(), n));
      c.answered = true;
      c.buffer.erase(0, r.pos() + n);
      continue;
    } else {
      c.result = MakeError(ErrorCode::kInternal, fmt::format("packet run child: bad message tag {}", int(tag)));
      c.answered = true;
      c.buffer.clear();
      return;
    }
    c.buffer.erase(0, r.pos());
  }
}

// Runs `in` and writes its progress and its answer on `fd`; false when
// the parent could not be written to. `locked`: the caller holds the ns-3
// mutex (a forked child, whose parent forked under it).
bool AnswerRun(int fd, const RunInput& in, bool locked) {
  int last_percent = -1;
  auto progress = [&](double f) {
    const int percent = static_cast<int>(f * 100);
    if (percent == last_percent) return;
    last_percent = percent;
    std::string msg(1, 'P');
    Put(msg, f);
    WriteAll(fd, msg.data(), msg.size());
  };
  // The parent's stop token is not ours: the parent kills us instead.
  auto out = locked ? RunScenarioLocked(in, {}, progress) : RunScenario(in, {}, progress);
  const std::string msg = out ? EncodeOutput(*out) : EncodeError(out.error());
  return WriteAll(fd, msg.data(), msg.size());
}

[[noreturn]] void ChildMain(int fd, pid_t parent, const RunInput& in) {
  // Killed when the forking thread ends; and if the parent already went
  // between fork() and here, nobody would read the answer.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  const bool ok = AnswerRun(fd, in, /*locked=*/true);
  ::close(fd);
  ::_exit(ok ? 0 : 1);
}

// Starts `program packet-worker` on one end of a new socket, as fd 3 of the
// child (stdin and stdout are /dev/null, so nothing ns-3 prints can reach
// the wire; stderr is ours), and sends it `in`. posix_spawn execs at once
// (glibc: clone(CLONE_VM | CLONE_VFORK)), so the child runs no code of this
// process between the two, whatever another thread holds.
Result<Child> Spawn(const std::string& program, const RunInput& in) {
  auto failed = [&](const char* what, int err) {
    return MakeError(ErrorCode::kInternal,
                     fmt::format("packet runs: {} for {}: {}", what, program, std::strerror(err)));
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return failed("socketpair", errno);
  // The child's end at 4 or above, so that dup2 onto 3 really duplicates
  // it (a dup2 onto itself would keep close-on-exec).
  const int theirs = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
  const int dup_err = errno;
  ::close(sv[1]);
  if (theirs < 0) {
    ::close(sv[0]);
    return failed("fcntl", dup_err);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, theirs, 3);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);  // none of our descriptors, CLOEXEC or not
  // No signal blocked (the calling thread's mask would be inherited), and
  // the usual ones back to their default actions (an ignored one would stay ignored).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string parent = std::to_string(::getpid());
  std::string argv0 = program, command = "packet-worker", fd_flag = "--fd", fd = "3", parent_flag = "--parent";
  char* argv[] = {argv0.data(), command.data(), fd_flag.data(), fd.data(), parent_flag.data(), parent.data(), nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(theirs);
  if (err != 0) {
    ::close(sv[0]);
    return failed("posix_spawn", err);
  }
  Child c;
  c.pid = pid;
  c.fd = sv[0];
  const std::string msg = EncodeRun(in);
  // A worker that goes before reading all of it is reported by the wait in
  // RunScenarios (its exit status), not here. One that stops reading does
  // not hold this thread (and `stop`) for good: after 30 s the send gives
  // up, the worker sees a cut run and answers that it is malformed.
  const timeval send_timeout{30, 0};
  ::setsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  WriteAll(c.fd, msg.data(), msg.size());
  ::shutdown(c.fd, SHUT_WR);
  return c;
}

void KillAll(std::vector<Child>& children) {
  for (Child& c : children) {
    if (c.pid > 0) ::kill(c.pid, SIGKILL);
  }
}

}  // namespace

Result<std::vector<RunOutput>> RunScenarios(const std::vector<const RunInput*>& ins, const PacketOptions& options,
                                            std::stop_token stop, const std::function<void(double)>& progress) {
  std::vector<RunOutput> outs;
  if (!options.parallel_runs || ins.size() < 2) {
    for (size_t i = 0; i < ins.size(); ++i) {
      auto out = RunScenario(*ins[i], stop, [&](double f) {
        if (progress) progress((static_cast<double>(i) + f) / static_cast<double>(ins.size()));
      });
      if (!out) return tl::unexpected(out.error());
      outs.push_back(std::move(*out));
    }
    return outs;
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "packet simulation cancelled");
  std::vector<Child> children(ins.size());
  auto abandon = [&children](Error e) -> Result<std::vector<RunOutput>> {
    KillAll(children);
    for (Child& c : children) {
      if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
      if (c.fd >= 0) ::close(c.fd);
    }
    return tl::unexpected(std::move(e));
  };
  const bool spawn = !options.worker_program.empty();
  {
    // Forking copies ns-3's state: not while a run in this process holds it.
    std::unique_lock<std::mutex> lock(Ns3Mutex(), std::defer_lock);
    if (!spawn) lock.lock();
    for (size_t i = 0; i < ins.size(); ++i) {
      if (spawn) {
        auto c = Spawn(options.worker_program, *ins[i]);
        if (!c) return abandon(c.error());
        children[i] = std::move(*c);
        continue;
      }
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        return abandon(Error{ErrorCode::kInternal, fmt::format("packet runs: pipe: {}", std::strerror(errno))});
      }
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        for (size_t j = 0; j < i; ++j) ::close(children[j].fd);  // only the parent reads its siblings
        ChildMain(fds[1], parent, *ins[i]);
      }
      ::close(fds[1]);
      if (pid < 0) {
        const int err = errno;
        ::close(fds[0]);
        return abandon(Error{ErrorCode::kInternal, fmt::format("packet runs: fork: {}", std::strerror(err))});
      }
      children[i].pid = pid;
      children[i].fd = fds[0];
    }
  }
  bool cancelled = false;
  auto open_children = [&] {
    return std::any_of(children.begin(), children.end(), [](const Child& c) { return !c.eof; });
  };
  while (open_children()) {
    if (stop.stop_requested()) {
      cancelled = true;
      KillAll(children);
      break;
    }
    std::vector<pollfd> pfds;
    std::vector<Child*> polled;
    for (Child& c : children) {
      if (c.eof) continue;
      pfds.push_back({c.fd, POLLIN, 0});
      polled.push_back(&c);
    }
    const int n = ::poll(pfds.data(), pfds.size(), 50);  // ms: how soon `stop` is seen
    if (n < 0 && errno != EINTR) break;
    for (size_t k = 0; n > 0 && k < pfds.size(); ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = *polled[k];
      char chunk[1 << 16];
      const ssize_t got = ::read(c.fd, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        c.eof = true;
        continue;
      }
      c.buffer.append(chunk, static_cast<size_t>(got));
      Parse(c);
    }
    if (progress) {
      double sum = 0;
      for (const Child& c : children) sum += c.answered ? 1.0 : c.progress;
      progress(sum / static_cast<double>(children.size()));
    }
  }
  Result<std::vector<RunOutput>> answer = std::move(outs);
  for (Child& c : children) {
    ::close(c.fd);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!answer) continue;
    if (cancelled) {
      answer = MakeError(ErrorCode::kCancelled, "packet simulation cancelled");
    } else if (!c.answered) {
      answer =
          MakeError(ErrorCode::kInternal,
                    WIFSIGNALED(status) ? fmt::format("packet run child process died of signal {}", WTERMSIG(status))
                                        : fmt::format("packet run child process exited with {} and no result",
                                                      WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    } else if (!c.result) {
      answer = tl::unexpected(c.result.error());
    } else {
      answer->push_back(std::move(*c.result));
    }
  }
  return answer;
}

}  // namespace drainwise::sim::packet_internal

namespace drainwise::sim {

int ServePacketWorker(int fd, int parent_pid) {
  using namespace packet_internal;
  // Killed when the spawning thread ends; gone already: nobody would read.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent_pid) return 1;
  // The run, up to the end of the stream (the parent shuts its side down).
  constexpr size_t kMaxRequestBytes = size_t{1} << 30;  // far above a capped blast radius (a few MB)
  std::string request;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return 1;
    if (got == 0) break;
    request.append(chunk, static_cast<size_t>(got));
    if (request.size() > kMaxRequestBytes) return 1;
  }
  std::optional<RunInput> in = DecodeRun(request);
  if (!in) {
    const std::string msg = EncodeError(Error{
        ErrorCode::kInternal, "packet worker: the run it was sent is malformed or from another build of drainwise"});
    WriteAll(fd, msg.data(), msg.size());
    return 2;
  }
  const bool ok = AnswerRun(fd, *in, /*locked=*/false);
  ::close(fd);
  return ok ? 0 : 1;
}

}  // namespace drainwise::sim
