// The worker's model, built from the ordered component list. Any subset of components yields a
// valid model: each block adapts to the width its predecessor produces.
#pragma once

#include <torch/torch.h>

#include <set>
#include <string>
#include <vector>

namespace ddpbisect::worker {

struct ModelShape {
  int64_t features = 16;  // input values per sample (the sequence length)
  int64_t hidden = 32;
  int64_t outputs = 1;
  int64_t vocab = 32;
};

class Block;

class NetImpl : public torch::nn::Module {
 public:
  NetImpl(const std::vector<std::string>& components, const ModelShape& shape);
  // x: [batch, features] -> [batch, outputs]
  torch::Tensor forward(const torch::Tensor& x);

  // Components whose output is computed but not used (their parameters get no gradient).
  void set_unused(const std::string& component) { unused_.insert(component); }
  bool has(const std::string& component) const;
  std::vector<torch::Tensor> batchnorm_buffers();

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> blocks_;
  torch::nn::Embedding embedding_{nullptr};
  torch::nn::Linear head_{nullptr};
  torch::Tensor fixed_projection_;  // when there is no head: a constant map to the outputs
  std::set<std::string> unused_;
  ModelShape shape_;
};
TORCH_MODULE(Net);

}  // namespace ddpbisect::worker
