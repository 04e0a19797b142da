#include "report/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/json_util.hpp"
#include "common/redact.hpp"
#include "common/text.hpp"
#include "report/headline.hpp"
#include "report/report.hpp"

namespace ddpbisect {

using nlohmann::json;

namespace {

std::string num(double v, int decimals = 1) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(decimals);
  os << v;
  return os.str();
}

// A round step for about `count` ticks over [0, span]: 1, 2 or 5 times a power of ten.
double nice_step(double span, int count = 5) {
  if (!(span > 0)) return 1;
  const double raw = span / count;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// How an environment value reads: text as is, a list one per line, null as "(unknown)".
std::string env_text(const json& v) {
  if (v.is_null()) return "(unknown)";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    if (v.empty()) return "none";
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : "\n") + env_text(e);
    return s;
  }
  if (v.is_object()) {
    std::string s;
    for (const auto& [k, e] : v.items()) s += (s.empty() ? "" : "\n") + k + ": " + env_text(e);
    return s.empty() ? "none" : s;
  }
  if (v.is_number_float()) return format_number(v.get<double>());
  return json_text(v);
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #dde;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f8}code,pre{font:12.5px ui-monospace,monospace}pre{background:#f6f7fa;padding:10px;overflow:auto;border:1px solid #e3e5ee}
.cause{font-size:16px;background:#fff2f0;border-left:4px solid #d93025;padding:8px 12px;margin:10px 0}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
svg text{font:11px system-ui,sans-serif}td code{white-space:pre-wrap}
)";

// The colour and label of a rank's end, from the trial outcome and its diagnosis.
struct RankEnd {
  std::string status;  // root_cause | echo | failed | stopped | passed | running
  std::string colour;
  std::string label;
};

RankEnd rank_end(const json& rank, const json& diag_rank) {
  const std::string killed = json_field(rank, "killed_by", "");
  const bool primary = json_field(diag_rank, "primary", false);
  const std::optional<int> echo_of = json_get<int>(json_member(diag_rank, "echo_of"));
  const std::string category = json_field(diag_rank, "category", "");
  const std::optional<int> exit_code = json_get<int>(json_member(rank, "exit_code"));
  if (primary) return {"root_cause", "#d93025", "root cause: " + category};
  if (echo_of)
    return {"echo", "#f29900", category + " (echo of rank " + std::to_string(*echo_of) + ")"};
  if (!killed.empty()) return {"stopped", "#80868b", "stopped by ddpbisect (" + killed + ")"};
  if (const json& signal = json_member(rank, "signal"); signal.is_string())
    return {"failed", "#a142f4", signal.get<std::string>()};
  if (exit_code && *exit_code != 0)
    return {"failed", "#a142f4", "exit " + std::to_string(*exit_code)};
  if (exit_code) return {"passed", "#188038", "exited 0"};
  return {"running", "#80868b", "did not end"};
}

// One trial's ranks as horizontal bars on a shared time axis.
void timeline(std::ostringstream& h, const std::string& id, const std::string& title,
              const json& outcome) {
  h << "<h3>" << markup_escape(title) << "</h3>\n";
  if (!outcome.is_object() || !outcome.contains("ranks")) {
    h << "<p>(the trial's outcome.json is missing)</p>\n";
    return;
  }
  // Read with checks: a field missing or of another type draws as unknown.
  const json ranks = json_field(outcome, "ranks", json::array());
  const json diag_ranks = json_field(json_member(outcome, "diagnosis"), "ranks", json::array());
  auto diag_of = [&](int rank) {
    for (const auto& d : diag_ranks)
      if (json_field(d, "rank", -1) == rank) return d;
    return json(nullptr);
  };
  double span = std::max(0.001, json_field(outcome, "duration_s", 0.0));
  for (const auto& r : ranks) span = std::max(span, json_field(r, "end_s", 0.0));
  const double step = nice_step(span);
  span = step * std::ceil(span / step - 1e-9);  // the axis ends on a round tick
  const int left = 70, width = 640, row = 26, top = 22;
  const int height = top + row * static_cast<int>(ranks.size()) + 30;
  auto x = [&](double t) { return left + width * std::clamp(t / span, 0.0, 1.0); };
  h << "<svg id=\"" << id << "\" class=\"timeline\" width=\"1060\" height=\"" << height
    << "\" viewBox=\"0 0 1060 " << height << "\" role=\"img\" aria-label=\"" << markup_escape(title)
    << "\">\n";
  for (double t = 0; t <= span + step / 2; t += step) {  // time axis, round ticks
    h << "<line x1=\"" << num(x(t)) << "\" y1=\"" << top - 6 << "\" x2=\"" << num(x(t))
      << "\" y2=\"" << height - 24 << "\" stroke=\"#e3e5ee\"/><text class=\"tick\" x=\""
      << num(x(t)) << "\" y=\"" << height - 10 << "\" text-anchor=\"middle\">"
      << format_number(t, 3) << " s</text>\n";
  }
  if (const json& hang = json_member(outcome, "hang_declared_s"); hang.is_number()) {
    double t = hang.get<double>();
    h << "<line class=\"hang-declared\" x1=\"" << num(x(t)) << "\" y1=\"" << top - 10 << "\" x2=\""
      << num(x(t)) << "\" y2=\"" << height - 24
      << "\" stroke=\"#d93025\" stroke-dasharray=\"4 3\"/><text x=\"" << num(x(t) + 3) << "\" y=\""
      << top - 10 << "\" fill=\"#d93025\">hang declared</text>\n";
  }
  int i = 0;
  for (const auto& r : ranks) {
    int rank = json_field(r, "rank", i);
    RankEnd end = rank_end(r, diag_of(rank));
    double y = top + row * i++;
    double t0 = json_field(r, "start_s", 0.0);
    const double end_s = json_field(r, "end_s", -1.0);
    double t1 = end_s >= 0 ? end_s : span;
    h << "<g class=\"rank-row\" data-rank=\"" << rank << "\" data-status=\"" << end.status
      << "\">\n<text x=\"4\" y=\"" << num(y + 15) << "\">rank " << rank << " (n"
      << json_field(r, "node", 0) << ")</text>\n";
    h << "<rect x=\"" << num(x(t0)) << "\" y=\"" << num(y + 5) << "\" width=\""
      << num(std::max(1.0, x(t1) - x(t0)))
      << "\" height=\"14\" rx=\"3\" fill=\"#c6dafc\"><title>rank " << rank << ": " << num(t0, 3)
      << " s to " << num(t1, 3) << " s, " << json_field<int64_t>(r, "heartbeats", 0)
      << " steps</title></rect>\n";
    for (const auto& t : json_field(r, "step_times_s", json::array()))
      if (t.is_number())
        h << "<line class=\"step\" x1=\"" << num(x(t.get<double>())) << "\" y1=\"" << num(y + 5)
          << "\" x2=\"" << num(x(t.get<double>())) << "\" y2=\"" << num(y + 19)
          << "\" stroke=\"#1a73e8\"/>\n";
    h << "<circle class=\"end\" cx=\"" << num(x(t1)) << "\" cy=\"" << num(y + 12)
      << "\" r=\"6\" fill=\"" << end.colour << "\"><title>" << markup_escape(end.label)
      << "</title></circle>\n<text x=\"" << left + width + 14 << "\" y=\"" << num(y + 15)
      << "\" fill=\"" << end.colour << "\">" << markup_escape(end.label) << "</text>\n</g>\n";
  }
  h << "</svg>\n";
}

// A configuration's size relative to the job as specified, in percent: the mean over the reducible
// dimensions of the fraction kept.
double relative_size(const json& c, const TrialConfig& o) {
  auto frac = [](double v, double full) { return full > 0 ? v / full : (v > 0 ? 1.0 : 0.0); };
  const double steps = json_field(json_member(c, "params"), "steps", 0.0);
  double o_steps = o.params.count("steps") ? static_cast<double>(o.params.at("steps")) : 0;
  double sum = frac(json_field(c, "world_size", 0.0), o.world_size()) +
               frac(json_field(c, "sample_count", 0.0), static_cast<double>(o.samples.size())) +
               frac(static_cast<double>(json_field(c, "components", json::array()).size()),
                    static_cast<double>(o.components.size())) +
               frac(static_cast<double>(json_field(c, "features", json::array()).size()),
                    static_cast<double>(o.features.size())) +
               frac(steps, o_steps);
  return 100.0 * sum / 5.0;
}

void reduction_trace(std::ostringstream& h, const ReportInputs& in) {
  const ReductionResult& r = in.result;
  struct Dot {
    int64_t trial;
    double size;
    std::string colour, what;
  };
  std::vector<Dot> dots;
  int64_t n = 0;
  for (const TrialMark& t : r.trials) {  // as the reducer judged them
    std::string colour = "#188038", what = "passed";
    if (t.status == TrialStatus::Fail) {
      colour = t.target ? "#d93025" : "#f29900";
      what = t.target ? "the target failure" : "a different failure";
    } else if (t.status != TrialStatus::Pass) {
      colour = "#80868b";
      what = to_string(t.status);
    }
    dots.push_back({++n, relative_size(t.config.to_json(), r.job), colour, what});
  }
  double top_size = 100;
  for (const auto& d : dots) top_size = std::max(top_size, d.size);
  const double size_step = nice_step(top_size, 4);
  top_size = size_step * std::ceil(top_size / size_step - 1e-9);
  const int left = 50, width = 900, height = 240, top = 12;
  int64_t trials = std::max<int64_t>(n, 1);
  auto x = [&](double t) { return left + width * (t - 0.5) / static_cast<double>(trials); };
  auto y = [&](double s) { return top + (height - top - 30) * (1.0 - s / top_size); };
  h << "<svg id=\"reduction-trace\" width=\"1000\" height=\"" << height << "\" viewBox=\"0 0 1000 "
    << height << "\" role=\"img\" aria-label=\"configuration size per trial\">\n";
  for (double sz = 0; sz <= top_size + size_step / 2; sz += size_step)
    h << "<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << num(y(sz))
      << "\" y2=\"" << num(y(sz)) << "\" stroke=\"#e3e5ee\"/><text class=\"tick\" x=\"" << left - 6
      << "\" y=\"" << num(y(sz) + 4) << "\" text-anchor=\"end\">" << format_number(sz, 1)
      << "%</text>\n";
  // The trial axis: round trial numbers under the dots.
  const int64_t trial_step = std::max<int64_t>(1, std::llround(nice_step(trials, 10)));
  for (int64_t t = trial_step; t <= trials; t += trial_step)
    h << "<line x1=\"" << num(x(static_cast<double>(t))) << "\" x2=\""
      << num(x(static_cast<double>(t))) << "\" y1=\"" << num(y(0)) << "\" y2=\"" << num(y(0) + 4)
      << "\" stroke=\"#80868b\"/><text class=\"tick trial-tick\" x=\""
      << num(x(static_cast<double>(t))) << "\" y=\"" << num(y(0) + 15)
      << "\" text-anchor=\"middle\">" << t << "</text>\n";
  h << "<text x=\"" << left + width / 2 << "\" y=\"" << height - 2
    << "\" text-anchor=\"middle\">trial number (1 to " << n << ")</text>\n";
  std::string path;
  for (const auto& t : r.trace) {  // the accepted reductions, as a staircase
    json c = t.config.to_json();
    std::string pt = num(x(static_cast<double>(t.trial))) + "," + num(y(relative_size(c, r.job)));
    path += (path.empty() ? "M" : " H" + num(x(static_cast<double>(t.trial))) + " L") + pt;
  }
  if (!path.empty())
    h << "<path class=\"accepted\" d=\"" << path << " H" << left + width
      << "\" fill=\"none\" stroke=\"#d93025\" stroke-width=\"1.5\" opacity=\"0.6\"/>\n";
  for (const auto& d : dots)
    h << "<circle class=\"trial\" cx=\"" << num(x(static_cast<double>(d.trial))) << "\" cy=\""
      << num(y(d.size)) << "\" r=\"3.5\" fill=\"" << d.colour << "\"><title>trial " << d.trial
      << ": " << format_number(d.size, 1) << "% of the job, " << d.what << "</title></circle>\n";
  h << "</svg>\n<p class=\"legend\"><span><i class=\"sw\" style=\"background:#d93025\"></i>target "
       "failure</span><span><i class=\"sw\" style=\"background:#f29900\"></i>different "
       "failure</span><span><i class=\"sw\" style=\"background:#188038\"></i>passed</span><span><i "
       "class=\"sw\" style=\"background:#80868b\"></i>infra / interrupted</span> Size: the mean "
       "kept fraction of ranks, samples, components, features and steps.</p>\n";
}

}  // namespace

std::string report_html(const ReportInputs& in) {
  const ReductionResult& r = in.result;
  std::ostringstream h;
  const auto& st = r.stats;
  h << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ddpbisect: "
    << markup_escape(in.spec->name) << "</title><style>" << kStyle << "</style></head><body>\n";
  h << "<h1>ddpbisect report: " << markup_escape(in.spec->name) << "</h1>\n<p>Spec <code>"
    << markup_escape(in.spec->file) << "</code>; status <b id=\"status\">" << to_string(r.status)
    << "</b>; " << plural(st.trials + st.replayed, "trial") << " (" << st.replayed
    << " replayed from the journal, " << st.cached << " answered from the cache) in "
    << format_number(r.elapsed_s, 0) << " s.</p>\n";
  if (r.status == ReductionStatus::NotReproduced) {
    h << "<p>" << (r.not_started.empty() ? "No stage failed" : markup_escape(r.not_started))
      << ", so there was nothing to reduce.</p>\n<table><tr><th>configuration</th><th>status</"
         "th></tr>\n";
    for (const auto& [c, status] : r.tried)
      h << "<tr><td>" << markup_escape(describe_config(c) + " (" + c.stage + ")") << "</td><td>"
        << markup_escape(status) << "</td></tr>\n";
    h << "</table></body></html>\n";
    return h.str();
  }
  h << "<div class=\"cause\" id=\"root-cause\"><b id=\"headline\">"
    << markup_escape(reduction_headline(r)) << "</b><br>"
    << markup_escape(redact_value("", r.target.to_string())) << "; failed " << r.confirm_failures
    << " of " << plural(r.confirm_runs, "run") << "</div>\n";
  h << "<table><tr><th></th><th>your job (stage " << markup_escape(in.spec->stages.back().name)
    << ")</th><th>minimal (the job first failed on stage " << markup_escape(r.stage)
    << ")</th></tr>\n";
  for (const auto& row : comparison_rows(r))
    h << "<tr><td>" << markup_escape(row.what) << "</td><td>" << markup_escape(row.original)
      << "</td><td>" << markup_escape(row.minimal) << "</td></tr>\n";
  h << "</table>\n<h2>Reproduce</h2>\n<p>From the folder of this report:</p>\n<pre>cd repro\n"
    << "bash run.sh\n"
    << (in.spec->builtin ? "python3 repro.py\n" : "")
    << "ddpbisect check repro.yaml --expect fail</pre>\n";
  const json& first = r.first_outcome;
  const json& minimal = r.minimal_outcome;
  h << "<h2>Rank timeline</h2>\n<p class=\"legend\"><span><i class=\"sw\" "
       "style=\"background:#d93025\"></i>root cause</span><span><i class=\"sw\" "
       "style=\"background:#f29900\"></i>echo of another rank's failure</span><span><i "
       "class=\"sw\" style=\"background:#80868b\"></i>stopped by ddpbisect</span><span><i "
       "class=\"sw\" style=\"background:#188038\"></i>exited 0</span> Ticks: training steps "
       "(heartbeats).</p>\n";
  timeline(h, "timeline-first", "First failing trial (" + describe_config(r.original) + ")", first);
  timeline(h, "timeline-minimal", "Minimal trial (" + describe_config(r.minimal) + ")", minimal);
  const json d = minimal.is_object() ? minimal.value("diagnosis", json(nullptr)) : json(nullptr);
  if (d.is_object()) {
    h << "<h2>Root-cause traceback</h2>\n<p>" << markup_escape(d.value("explanation", ""))
      << "</p>\n<pre>"
      << markup_escape(root_cause_traceback(d.value("root_cause", json(nullptr)), true))
      << "</pre>\n";
  }
  h << "<h2>Reduction trace</h2>\n";
  reduction_trace(h, in);
  h << "<h2>Environment</h2>\n";
  const json& env = in.environment;
  if (env.is_object() && env.value("collect_env", json(nullptr)).is_string())
    h << "<p><code>python -m torch.utils.collect_env</code>, run by <code>"
      << markup_escape(env_text(env.value("python_probe", json(nullptr)))) << "</code>:</p>\n<pre>"
      << markup_escape(env["collect_env"].get<std::string>()) << "</pre>\n";
  h << "<table>\n";
  for (const auto& [k, v] : env.items()) {
    if (k == "variables" || k == "collect_env") continue;
    h << "<tr><td>" << markup_escape(k) << "</td><td><code>" << markup_escape(env_text(v))
      << "</code></td></tr>\n";
  }
  const json vars = json_field(env, "variables", json::object());  // no probe: none
  for (const auto& [k, v] : vars.items())
    h << "<tr><td><code>" << markup_escape(k) << "</code></td><td><code>"
      << markup_escape(env_text(v)) << "</code></td></tr>\n";
  h << "</table>\n</body></html>\n";
  return h.str();
}

}  // namespace ddpbisect
