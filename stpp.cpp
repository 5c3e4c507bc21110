#include <memory>
#include <vector>
namespace model {
template <class T>
struct Cache {
  std::vector<T> data;
  void grow(size_t n) { data.resize(n); }
};
}  // namespace model
int main() {
  model::Cache<double> c;
  c.grow(1 << 20);
  auto p = std::make_unique<char[]>(4 << 20);
  return p[0];
}
