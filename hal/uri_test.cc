#include "hal/uri.h"

#include <gtest/gtest.h>

namespace hal {
namespace {

DeviceUri MustParse(const char* text) {
  auto uri = DeviceUri::Parse(text);
  EXPECT_TRUE(uri.ok()) << text << ": " << uri.status().ToString();
  return uri.ok() ? uri.value() : DeviceUri{};
}

TEST(DeviceUri, DriverOnly) {
  DeviceUri u = MustParse("sim");
  EXPECT_EQ(u.driver, "sim");
  EXPECT_TRUE(u.devices.empty());
  EXPECT_TRUE(u.params.empty());
}

TEST(DeviceUri, Params) {
  DeviceUri u = MustParse("sim://?seed=7&queues=4");
  EXPECT_EQ(u.driver, "sim");
  EXPECT_EQ(u.params.at("seed"), "7");
  EXPECT_EQ(u.GetUint("queues", 1).value(), 4u);
  EXPECT_EQ(u.GetUint("absent", 9).value(), 9u);
}

TEST(DeviceUri, Ordinal) {
  DeviceUri u = MustParse("cuda:0");
  EXPECT_EQ(u.driver, "cuda");
  ASSERT_EQ(u.devices.size(), 1u);
  EXPECT_EQ(u.devices[0], "0");
}

TEST(DeviceUri, Uuid) {
  DeviceUri u = MustParse("cuda://GPU-8a1b2c3d-0000-1111-2222-333344445555");
  ASSERT_EQ(u.devices.size(), 1u);
  EXPECT_EQ(u.devices[0], "GPU-8a1b2c3d-0000-1111-2222-333344445555");
}

TEST(DeviceUri, DeviceList) {
  DeviceUri u = MustParse("amdgpu://0,1");
  EXPECT_EQ(u.driver, "amdgpu");
  EXPECT_EQ(u.devices, (std::vector<std::string>{"0", "1"}));
}

TEST(DeviceUri, PercentEscapes) {
  DeviceUri u = MustParse("sim://?path=%2Ftmp%2Fx&a%20b=c");
  EXPECT_EQ(u.params.at("path"), "/tmp/x");
  EXPECT_EQ(u.params.at("a b"), "c");
}

TEST(DeviceUri, RoundTrip) {
  for (const char* text :
       {"sim", "sim://?queues=4&seed=7", "cuda://0", "amdgpu://0,1?x=%26"}) {
    DeviceUri u = MustParse(text);
    DeviceUri again = MustParse(u.ToString().c_str());
    EXPECT_EQ(u, again) << text << " -> " << u.ToString();
  }
}

TEST(DeviceUri, Errors) {
  for (const char* bad :
       {"", "Sim", "1cuda", "sim:", "cuda:0,", "amdgpu://0,,1", "sim?seed",
        "sim?=1", "sim?a=1&a=2", "sim?a=1&", "sim?a=%zz", "sim?a=%4",
        "sim://?a=b c", "cuda:0#frag", "cuda:/0", "sim!"}) {
    auto u = DeviceUri::Parse(bad);
    EXPECT_FALSE(u.ok()) << "accepted '" << bad << "'";
    if (!u.ok()) {
      EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(DeviceUri, TypedParamErrors) {
  DeviceUri u = MustParse("sim://?queues=x&big=99&flag=maybe");
  EXPECT_EQ(u.GetUint("queues", 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(u.GetUint("big", 1, 1, 64).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(u.GetBool("flag", false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(u.CheckKnownParams({"queues", "big"}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(u.CheckKnownParams({"queues", "big", "flag"}).ok());
}

}  // namespace
}  // namespace hal
