// A program of a separate project, built against an installed oneside. The README's first
// program quotes main() from here (style.readme_snippets checks the quote), so what a reader
// copies is built against an installed copy and run by install.find_package.
#include <cstdio>
#include <vector>

#include <oneside/oneside.hpp>

int main(int argc, char** argv) {
  oneside::runtime rt(argc, argv);                // collective open; closes at scope end
  const oneside::team& world = oneside::world();  // world.rank(), world.size()
  const int sum = oneside::allreduce(world, world.rank() + 1, oneside::op::sum);
  oneside::team half = world.split(world.rank() % 2, world.rank());  // sub-team
  std::vector<double> v(1000, world.rank());
  oneside::allreduce(half, v, v, oneside::op::max);  // in place, any contiguous range
  oneside::barrier(world);
  if (rt.rank() == 0) std::printf("consumer: %d ranks, sum %d\n", rt.size(), sum);
  // The highest rank of my parity, in every element.
  const auto last = static_cast<double>(world.size() - 1 - (world.size() - 1 - world.rank()) % 2);
  const bool ok = sum == world.size() * (world.size() + 1) / 2 && v.front() == last &&
                  v.back() == last && half.size() == (world.size() + 1 - world.rank() % 2) / 2;
  return ok ? 0 : 1;
}
