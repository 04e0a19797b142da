#include "worker/model.hpp"

#include <algorithm>
#include <cmath>

#include "worker/phase.hpp"

namespace ddpbisect::worker {

namespace nn = torch::nn;

// A block maps [B, S, width_in] to [B, S, width_out].
class Block : public nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  int64_t width_out = 0;
};

namespace {
class LinearBlock : public Block {
 public:
  LinearBlock(int64_t in, int64_t out) : fc(register_module("fc", nn::Linear(in, out))) {
    width_out = out;
  }
  torch::Tensor forward(const torch::Tensor& x) override { return torch::tanh(fc(x)); }
  nn::Linear fc;
};

class MlpBlock : public Block {
 public:
  MlpBlock(int64_t in, int64_t hidden)
      : fc1(register_module("fc1", nn::Linear(in, 2 * hidden))),
        fc2(register_module("fc2", nn::Linear(2 * hidden, hidden))) {
    width_out = hidden;
  }
  torch::Tensor forward(const torch::Tensor& x) override { return fc2(torch::relu(fc1(x))); }
  nn::Linear fc1, fc2;
};

class Conv1dBlock : public Block {
 public:
  Conv1dBlock(int64_t in, int64_t out)
      : conv(register_module("conv", nn::Conv1d(nn::Conv1dOptions(in, out, 3).padding(1)))) {
    width_out = out;
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::relu(conv(x.transpose(1, 2))).transpose(1, 2);
  }
  nn::Conv1d conv;
};

class LayerNormBlock : public Block {
 public:
  explicit LayerNormBlock(int64_t w)
      : norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({w})))) {
    width_out = w;
  }
  torch::Tensor forward(const torch::Tensor& x) override { return norm(x); }
  nn::LayerNorm norm;
};

class BatchNormBlock : public Block {
 public:
  explicit BatchNormBlock(int64_t w) : norm(register_module("norm", nn::BatchNorm1d(w))) {
    width_out = w;
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return norm(x.transpose(1, 2)).transpose(1, 2);
  }
  nn::BatchNorm1d norm;
};

class DropoutBlock : public Block {
 public:
  explicit DropoutBlock(int64_t w) : drop(register_module("drop", nn::Dropout(0.1))) {
    width_out = w;
  }
  torch::Tensor forward(const torch::Tensor& x) override { return drop(x); }
  nn::Dropout drop;
};

class ResidualBlock : public Block {
 public:
  explicit ResidualBlock(int64_t w) : fc(register_module("fc", nn::Linear(w, w))) { width_out = w; }
  torch::Tensor forward(const torch::Tensor& x) override { return x + fc(torch::relu(x)); }
  nn::Linear fc;
};

class AttentionBlock : public Block {
 public:
  explicit AttentionBlock(int64_t w)
      : qkv(register_module("qkv", nn::Linear(w, 3 * w))),
        out(register_module("out", nn::Linear(w, w))) {
    width_out = w;
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto parts = qkv(x).chunk(3, -1);
    auto scores = torch::matmul(parts[0], parts[1].transpose(1, 2)) /
                  std::sqrt(static_cast<double>(width_out));
    return x + out(torch::matmul(torch::softmax(scores, -1), parts[2]));
  }
  nn::Linear qkv, out;
};

// Blocks that need a wider input than one scalar per position first project to `hidden`.
std::shared_ptr<Block> make_block(const std::string& name, int64_t width, const ModelShape& s) {
  if (name == "linear") return std::make_shared<LinearBlock>(width, s.hidden);
  if (name == "mlp") return std::make_shared<MlpBlock>(width, s.hidden);
  if (name == "conv1d") return std::make_shared<Conv1dBlock>(width, s.hidden);
  if (name == "layernorm") return std::make_shared<LayerNormBlock>(width);
  if (name == "batchnorm") return std::make_shared<BatchNormBlock>(width);
  if (name == "dropout") return std::make_shared<DropoutBlock>(width);
  if (name == "residual") return std::make_shared<ResidualBlock>(width);
  if (name == "attention") return std::make_shared<AttentionBlock>(width);
  throw std::invalid_argument("unknown component '" + name + "'");
}
}  // namespace

NetImpl::NetImpl(const std::vector<std::string>& components, const ModelShape& shape)
    : shape_(shape) {
  int64_t width = 1;  // one value per position
  for (const auto& c : components) {
    if (c == "embedding") {
      embedding_ = register_module("embedding", nn::Embedding(shape.vocab, shape.hidden));
      width = shape.hidden;
    }
  }
  for (const auto& c : components) {
    if (c == "embedding" || c == "head") continue;
    auto block = make_block(c, width, shape);
    register_module(c, block);
    width = block->width_out;
    blocks_.emplace_back(c, block);
  }
  if (std::find(components.begin(), components.end(), "head") != components.end()) {
    head_ = register_module("head", nn::Linear(width, shape.outputs));
  } else {
    // No trainable head: a constant projection keeps the output shape (and the loss) valid.
    fixed_projection_ = register_buffer(
        "fixed_projection", torch::ones({width, shape.outputs}) / static_cast<double>(width));
  }
}

bool NetImpl::has(const std::string& component) const {
  if (component == "embedding") return !embedding_.is_empty();
  if (component == "head") return !head_.is_empty();
  for (const auto& [name, b] : blocks_)
    if (name == component) return true;
  return false;
}

torch::Tensor NetImpl::forward(const torch::Tensor& x) {
  DDPB_PHASE();
  torch::Tensor h;
  if (!embedding_.is_empty()) {
    auto tokens =
        ((x + 2.0) * (shape_.vocab / 4.0)).floor().clamp(0, shape_.vocab - 1).to(torch::kLong);
    h = embedding_(tokens);
    if (unused_.count("embedding")) h = h.detach();
  } else {
    h = x.unsqueeze(-1);
  }
  // An "unused" component runs but its result is detached: its parameters get no gradient, while
  // the blocks before it still do (through a zero-weighted path).
  auto use = [&](const std::string& name, const torch::Tensor& in, const torch::Tensor& out) {
    return unused_.count(name) ? out.detach() + 0.0 * in.sum() : out;
  };
  for (auto& [name, block] : blocks_) h = use(name, h, block->forward(h));
  h = h.mean(1);
  if (!head_.is_empty()) return use("head", h, head_(h));
  return torch::matmul(h, fixed_projection_);
}

std::vector<torch::Tensor> NetImpl::batchnorm_buffers() {
  std::vector<torch::Tensor> out;
  for (auto& [name, block] : blocks_) {
    if (name != "batchnorm") continue;
    for (auto& b : block->named_buffers())
      if (b.key().find("running_") != std::string::npos) out.push_back(b.value());
  }
  return out;
}

}  // namespace ddpbisect::worker
