// journal.jsonl as `--resume` reads it (the Oracle's replay) and as report.html draws it (the
// reduction trace): a torn or corrupt line is skipped, never fatal, whatever the bytes; the
// report still renders and carries no markup from the journal.
#include "reduce/journal.hpp"
#include "fuzz_util.hpp"
#include "reduce/oracle.hpp"
#include "report_fixture.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::reset_scratch();
  const auto dir = fuzz::scratch();
  const std::string path = (dir / "journal.jsonl").string();
  fuzz::write_file(path, {reinterpret_cast<const char*>(data), size});
  {
    Journal journal(path, true);
    OracleOptions opt;
    opt.out_dir = dir.string();
    Oracle oracle(fuzz::fixture_spec(), opt, journal, nullptr);
    oracle.elapsed_s();
  }
  fuzz::render_all_reports(fuzz::fixture_report(dir.string(), (dir / "trial").string()));
  return 0;
}
