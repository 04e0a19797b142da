// The worker's data: a seeded synthetic set or a file (CSV, or the binary format below), the
// trial's sample subset, and DistributedSampler-style sharding across ranks.
//
// Binary format (little-endian): "DDPB" magic, uint32 version (1), uint32 samples, uint32 features,
// then per sample `features` float32 inputs followed by one float32 target.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "spec/spec.hpp"

namespace ddpbisect::worker {

class DataSet {
 public:
  // Loads or prepares the data set; throws std::runtime_error with the file and reason on bad
  // files.
  explicit DataSet(const Dataset& spec);

  int64_t features() const { return features_; }
  int64_t size() const { return size_; }
  int64_t outputs() const { return classification_ ? classes_ : 1; }
  bool classification() const { return classification_; }

  // Inputs [n, features] and targets ([n] float for regression, [n] long for classification).
  std::pair<torch::Tensor, torch::Tensor> batch(const std::vector<int64_t>& indices) const;

 private:
  void sample(int64_t index, float* x, float* y) const;
  Dataset spec_;
  int64_t features_ = 16, size_ = 0, classes_ = 4;
  bool classification_ = false;
  std::vector<float> file_rows_;  // features + 1 floats per sample, for file data sets
  std::vector<float> weights_;    // the synthetic ground-truth projection
};

// This rank's shard of `subset` (ascending indices), as torch's DistributedSampler without shuffle:
// padded by repeating from the start (pad) or truncated (drop_last) to a multiple of the world
// size.
std::vector<int64_t> shard_indices(const std::vector<int64_t>& subset, int64_t rank, int64_t world,
                                   bool drop_last, bool pad);

}  // namespace ddpbisect::worker
