#include "worker/data.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/text.hpp"

namespace ddpbisect::worker {

namespace {
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// A standard normal value from two hashed uniforms (Box-Muller).
float gaussian(uint64_t key) {
  double u1 = (static_cast<double>(splitmix(key) >> 11) + 1.0) / 9007199254740993.0;
  double u2 = static_cast<double>(splitmix(key ^ 0x5bd1e995ull) >> 11) / 9007199254740992.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}
}  // namespace

DataSet::DataSet(const Dataset& spec) : spec_(spec) {
  classification_ = spec.task == "classification";
  classes_ = spec.classes;
  if (spec.kind == "synthetic") {
    features_ = spec.features;
    size_ = spec.samples;
  } else if (spec.kind == "csv") {
    std::ifstream in(spec.path);
    if (!in) throw std::runtime_error("cannot open data set " + spec.path);
    std::string line;
    int64_t lineno = 0;
    bool header_seen = false;
    while (std::getline(in, line)) {
      ++lineno;
      if (trim(line).empty() || line[0] == '#') continue;
      auto cells = split(line, ',');
      // A header row (column names, every cell not a number) is skipped; one number among
      // words is a data row with a typo, and is refused below.
      if (size_ == 0 && !header_seen && is_csv_header(cells)) {
        header_seen = true;
        continue;
      }
      if (features_ == 16 && size_ == 0) features_ = static_cast<int64_t>(cells.size()) - 1;
      if (static_cast<int64_t>(cells.size()) != features_ + 1 || features_ < 1)
        throw std::runtime_error(spec.path + ":" + std::to_string(lineno) + ": expected " +
                                 std::to_string(features_ + 1) + " columns, found " +
                                 std::to_string(cells.size()));
      for (const auto& c : cells) {
        try {
          file_rows_.push_back(std::stof(c));
        } catch (const std::exception&) {
          throw std::runtime_error(spec.path + ":" + std::to_string(lineno) + ": not a number: '" +
                                   c + "'");
        }
      }
      ++size_;
    }
  } else {  // binary
    std::ifstream in(spec.path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open data set " + spec.path);
    char magic[4];
    uint32_t header[3];
    in.read(magic, 4);
    in.read(reinterpret_cast<char*>(header), sizeof header);
    if (!in || std::string(magic, 4) != "DDPB" || header[0] != 1)
      throw std::runtime_error(spec.path +
                               ": not a ddpbisect binary data set (magic DDPB, version 1)");
    size_ = header[1];
    features_ = header[2];
    file_rows_.resize(static_cast<size_t>(size_ * (features_ + 1)));
    in.read(reinterpret_cast<char*>(file_rows_.data()),
            static_cast<std::streamsize>(file_rows_.size() * sizeof(float)));
    if (!in)
      throw std::runtime_error(spec.path + ": truncated: header announces " +
                               std::to_string(size_) + " samples");
  }
  if (spec.kind != "synthetic" && spec.samples > 0) size_ = std::min(size_, spec.samples);
  int64_t outs = classification_ ? classes_ : 1;
  for (int64_t i = 0; i < features_ * outs; ++i)
    weights_.push_back(gaussian(spec.seed * 7919 + static_cast<uint64_t>(i) + 0xabcdefull) /
                       std::sqrt(static_cast<float>(features_)));
}

void DataSet::sample(int64_t index, float* x, float* y) const {
  if (!file_rows_.empty()) {
    const float* row = &file_rows_[static_cast<size_t>(index * (features_ + 1))];
    std::copy(row, row + features_, x);
    *y = row[features_];
    return;
  }
  for (int64_t j = 0; j < features_; ++j)
    x[j] = gaussian((spec_.seed << 32) ^ (static_cast<uint64_t>(index) * 131071 + j));
  int64_t outs = classification_ ? classes_ : 1;
  int64_t best = 0;
  float best_v = -1e30f, v0 = 0;
  for (int64_t c = 0; c < outs; ++c) {
    float v = 0;
    for (int64_t j = 0; j < features_; ++j) v += weights_[c * features_ + j] * x[j];
    if (c == 0) v0 = v;
    if (v > best_v) best_v = v, best = c;
  }
  *y = classification_ ? static_cast<float>(best) : std::tanh(v0);
}

std::pair<torch::Tensor, torch::Tensor> DataSet::batch(const std::vector<int64_t>& indices) const {
  auto n = static_cast<int64_t>(indices.size());
  torch::Tensor x = torch::empty({n, features_});
  torch::Tensor y = torch::empty({n});
  float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (indices[i] < 0 || indices[i] >= size_)
      throw std::out_of_range("sample index " + std::to_string(indices[i]) +
                              " is outside the data set (" + std::to_string(size_) + " samples)");
    sample(indices[i], xp + i * features_, yp + i);
  }
  if (classification_) y = y.to(torch::kLong);
  return {x, y};
}

std::vector<int64_t> shard_indices(const std::vector<int64_t>& subset, int64_t rank, int64_t world,
                                   bool drop_last, bool pad) {
  auto n = static_cast<int64_t>(subset.size());
  int64_t total = n;
  if (drop_last)
    total = (n / world) * world;
  else if (pad && n > 0)
    total = ((n + world - 1) / world) * world;
  std::vector<int64_t> out;
  for (int64_t i = rank; i < total; i += world) out.push_back(subset[static_cast<size_t>(i % n)]);
  return out;
}

}  // namespace ddpbisect::worker
