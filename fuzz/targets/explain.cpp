// `explain`'s entry point on a folder of files written from the input (fuzz_util.hpp's packed
// form): a single log, per-rank files, a torchrun --log-dir tree with error.json, or a trial
// folder with outcome.json. A header starting with 'f' gives every file as its own path, as
// `explain a.log b.log` does; otherwise the folder is the one path. Bad input is an error
// message, never an exception or a crash; what is diagnosed renders as `explain` shows it.
#include "common/json_util.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "fuzz_util.hpp"
#include "report/headline.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto tree = fuzz::unpack_tree({reinterpret_cast<const char*>(data), size});
  if (tree.files.size() > 64) return 0;
  fuzz::reset_scratch();
  const auto root = fuzz::scratch() / "logs";
  const auto written = fuzz::write_tree(root, tree.files);
  std::vector<std::string> paths;
  if (!tree.header.empty() && tree.header[0] == 'f') {
    for (const auto& rel : written) paths.push_back((root / rel).string());
  } else {
    paths.push_back(root.string());
  }
  if (paths.empty()) return 0;
  PathInputs read = inputs_from_paths(paths);
  if (read.error) return 0;
  DiagnosisInput& in = read.input;
  in.library_patterns = {"mylib/"};
  Diagnosis d = diagnose(in);
  const nlohmann::json j = d.to_json();
  json_text(j, 2);
  if (!d.failed) return 0;
  fuzz::check(!d.root.category.empty(), "a failure has a category", d.root.message);
  fold_cpp_frames(visible_text(d.root.message.substr(0, 4000)));
  root_cause_headline(j.value("root_cause", nlohmann::json()));
  root_cause_traceback(j.value("root_cause", nlohmann::json()), true);
  d.signature.to_string();
  const Signature back = Signature::from_json(d.signature.to_json());
  fuzz::check(same_failure(d.signature, back, "strict"), "a signature survives its JSON",
              json_text(d.signature.to_json()));
  return 0;
}
