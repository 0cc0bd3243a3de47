// A program of a separate project, built against an installed oneside.
#include <cstdio>

#include <oneside/oneside.hpp>

int main(int argc, char** argv) {
  oneside::runtime rt(argc, argv);
  const int sum = oneside::allreduce(oneside::world(), rt.rank() + 1, oneside::op::sum);
  if (rt.rank() == 0) std::printf("consumer: %d ranks, sum %d\n", rt.size(), sum);
  return sum == rt.size() * (rt.size() + 1) / 2 ? 0 : 1;
}
