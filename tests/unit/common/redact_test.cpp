#include "common/redact.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(Redact, SecretNamesLoseTheirValues) {
  EXPECT_EQ(redact_value("HF_TOKEN", "hf_abc"), "<redacted>");
  EXPECT_EQ(redact_value("aws_secret_access_key", "x"), "<redacted>");
  EXPECT_EQ(redact_value("DB_PASSWORD", "x"), "<redacted>");
  EXPECT_EQ(redact_value("NCCL_DEBUG", "INFO"), "INFO");
}

TEST(Redact, CredentialsInsideValues) {
  EXPECT_EQ(redact_value("CMD", "train.py --lr 3 token=abc123 --x"),
            "train.py --lr 3 token=<redacted> --x");
  EXPECT_EQ(redact_value("URL", "https://alice:hunter2@store:8080/x"),
            "https://alice:<redacted>@store:8080/x");
  EXPECT_EQ(redact_value("X", "password: hunter2"), "password: <redacted>");
  EXPECT_EQ(redact_value("X", "no secrets here"), "no secrets here");
}
