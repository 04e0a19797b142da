#include "reduce/result.hpp"

namespace ddpbisect {

const char* to_string(ReductionStatus status) {
  switch (status) {
    case ReductionStatus::Reduced:
      return "reduced";
    case ReductionStatus::BudgetExhausted:
      return "budget_exhausted";
    case ReductionStatus::NotReproduced:
      return "not_reproduced";
  }
  return "not_reproduced";
}

}  // namespace ddpbisect
