#include "process/malloc_huge_pages.h"

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__linux__)
#include <sys/auxv.h>
#include <unistd.h>
#endif

namespace drainwise::process {

void ReexecWithMallocHugePages(char** argv) {
#if defined(__linux__)
  if (const char* opt = std::getenv("DRAINWISE_MALLOC_HUGE_PAGES"); opt && std::strcmp(opt, "0") == 0) return;
  if (::getauxval(AT_SECURE) != 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::string value = tunables ? tunables : "";
  if (value.find("glibc.malloc.hugetlb") != std::string::npos) return;
  value = value.empty() ? "glibc.malloc.hugetlb=1" : value + ":glibc.malloc.hugetlb=1";
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
