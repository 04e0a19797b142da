// outcome.json as its readers take it: diagnosis' inputs (`explain` on a trial folder) and the
// reports (the rank timelines of report.html, the headline from the minimal trial's diagnosis).
// "$DIR" in the input stands for the trial folder. Whatever the bytes, nothing throws or
// crashes, and the reports carry no markup from the file.
#include "diagnose/diagnosis.hpp"
#include "fuzz_util.hpp"
#include "report_fixture.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::reset_scratch();
  const auto trial = fuzz::scratch() / "trial";
  fuzz::write_tree(trial,
                   {{"outcome.json", std::string(reinterpret_cast<const char*>(data), size)}});
  if (PathInputs read = inputs_from_paths({trial.string()}); !read.error) diagnose(read.input);
  const ReportInputs report = fuzz::fixture_report(fuzz::scratch().string(), trial.string());
  reduction_headline(report.result);
  summary_text(report);
  fuzz::render_all_reports(report);
  return 0;
}
