#include "process/malloc_tunables.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__linux__)
#include <sys/auxv.h>
#include <unistd.h>
#endif

namespace drainwise::process {

std::string MallocTunables(const std::string& current) {
  std::string value = current;
  for (const char* t : kMallocTunables) {
    const std::string_view tunable(t);
    const std::string_view name = tunable.substr(0, tunable.find('='));
    if (value.find(name) != std::string::npos) continue;  // the operator's choice (or ours, re-executed)
    if (!value.empty()) value += ':';
    value += tunable;
  }
  return value;
}

void ReexecWithMallocTunables(char** argv) {
#if defined(__linux__)
  if (const char* opt = std::getenv("DRAINWISE_MALLOC_TUNABLES"); opt && std::strcmp(opt, "0") == 0) return;
  if (::getauxval(AT_SECURE) != 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string current = tunables ? tunables : "";
  const std::string value = MallocTunables(current);
  if (value == current) return;
  // This program's path rather than /proc/self/exe itself, which under a
  // tool such as valgrind names the tool.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv(self, argv);
  // Not re-executed (no /proc, say): go on as this process, without the tunable in the environment of children.
  if (tunables) {
    ::setenv("GLIBC_TUNABLES", tunables, 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
#endif
}

}  // namespace drainwise::process
