// RunScenarios: baseline and drained at once, each in a child process.
//
// ns-3 keeps one simulator per process (event list, node list, attribute
// defaults are globals), so two runs in one process can only take turns.
// The runs are independent: fork() one child per run, let each build and
// run its scenario in its own copy of the process (copy-on-write: the
// parent's RunInput is already there, nothing to send), and read back what
// RunOutput holds over a pipe. On 2 cores that halves the wall time.
//
// Process handling is confined to this file. A child only runs ns-3 and
// writes to its pipe, then _exit()s: no destructors, no atexit handlers, no
// logger, no other thread (a forked child has only the forking thread). The
// parent forks under the ns-3 mutex, so no in-process run is half-built in
// the copy. Children die with the parent (PR_SET_PDEATHSIG) and are killed
// (SIGKILL, by pid) when `stop` fires.
//
// Wire format, child to parent, host byte order (same binary both ends):
//   'P' double                      progress 0..1
//   'R' u64 n, n doubles            flow_done_s
//       PacketRunStats scalars      simulated_s, wall_s, packets_sent, ecn_marks, drops
//       u64 m, m PacketLinkStats    links (trivially copyable)
//   'E' i32 code, u64 n, n chars    an Error
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "sim/packet/packet_run.h"

namespace drainwise::sim::packet_internal {

namespace {

static_assert(std::is_trivially_copyable_v<PacketLinkStats>);

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

template <class T>
void Put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string EncodeOutput(const RunOutput& o) {
  std::string out(1, 'R');
  Put(out, static_cast<uint64_t>(o.flow_done_s.size()));
  out.append(reinterpret_cast<const char*>(o.flow_done_s.data()), o.flow_done_s.size() * sizeof(double));
  Put(out, o.stats.simulated_s);
  Put(out, o.stats.wall_s);
  Put(out, o.stats.packets_sent);
  Put(out, o.stats.ecn_marks);
  Put(out, o.stats.drops);
  Put(out, static_cast<uint64_t>(o.stats.links.size()));
  out.append(reinterpret_cast<const char*>(o.stats.links.data()), o.stats.links.size() * sizeof(PacketLinkStats));
  return out;
}

std::string EncodeError(const Error& e) {
  std::string out(1, 'E');
  Put(out, static_cast<int32_t>(e.code));
  Put(out, static_cast<uint64_t>(e.message.size()));
  out += e.message;
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
    std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

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

[[noreturn]] void ChildMain(int fd, pid_t parent, const RunInput& in, const PacketOptions& options) {
  // Killed when the forking thread ends; and if the parent already went
  // between fork() and here, nobody would read the answer.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
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
  auto out = RunScenarioLocked(in, options, {}, progress);
  const std::string msg = out ? EncodeOutput(*out) : EncodeError(out.error());
  const bool ok = WriteAll(fd, msg.data(), msg.size());
  ::close(fd);
  ::_exit(ok ? 0 : 1);
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
      auto out = RunScenario(*ins[i], options, stop, [&](double f) {
        if (progress) progress((static_cast<double>(i) + f) / static_cast<double>(ins.size()));
      });
      if (!out) return tl::unexpected(out.error());
      outs.push_back(std::move(*out));
    }
    return outs;
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "packet simulation cancelled");
  std::vector<Child> children(ins.size());
  {
    std::lock_guard<std::mutex> lock(Ns3Mutex());
    for (size_t i = 0; i < ins.size(); ++i) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        KillAll(children);
        for (Child& c : children) {
          if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
          if (c.fd >= 0) ::close(c.fd);
        }
        return MakeError(ErrorCode::kInternal, fmt::format("packet runs: pipe: {}", std::strerror(errno)));
      }
      const pid_t parent = ::getpid();
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        for (size_t j = 0; j < i; ++j) ::close(children[j].fd);  // only the parent reads its siblings
        ChildMain(fds[1], parent, *ins[i], options);
      }
      ::close(fds[1]);
      if (pid < 0) {
        const int err = errno;
        ::close(fds[0]);
        KillAll(children);
        for (Child& c : children) {
          if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
          if (c.fd >= 0) ::close(c.fd);
        }
        return MakeError(ErrorCode::kInternal, fmt::format("packet runs: fork: {}", std::strerror(err)));
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
