// This process's resident set, for tests that check that many operations keep no object each.
#pragma once

#include <cstdio>

namespace oneside::test {

// This process's resident set in KiB (/proc/self/statm), or -1.
inline long resident_kib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0;
  long resident = -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : resident * 4;  // 4 KiB pages
}

}  // namespace oneside::test
