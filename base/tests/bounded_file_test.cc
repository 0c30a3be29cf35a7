// readBoundedFile: a file within the limit is read whole; a larger one, a device without end
// (/dev/zero) and a directory are refused with the path and the limit, without reading them.
#include "base/bounded_file.h"

#include <gtest/gtest.h>

#include <fstream>

namespace tsr {
namespace {

std::string tempPath(const std::string& name) { return ::testing::TempDir() + "/bounded_file_" + name; }

TEST(BoundedFile, ReadsAFileWithinTheLimit) {
  std::string path = tempPath("small");
  std::ofstream(path) << "localhost slots=2\n";
  auto text = readBoundedFile(path, 100, "hostfile");
  ASSERT_TRUE(text.isOk()) << text.status().toString();
  EXPECT_EQ(text.value(), "localhost slots=2\n");
}

TEST(BoundedFile, RefusesAFileOverTheLimit) {
  std::string path = tempPath("large");
  std::ofstream(path) << std::string(101, 'x');
  auto text = readBoundedFile(path, 100, "hostfile");
  ASSERT_FALSE(text.isOk());
  EXPECT_NE(text.status().message().find("hostfile '" + path + "' is too large (101 bytes; the limit is 100 bytes)"),
            std::string::npos)
      << text.status().message();
}

TEST(BoundedFile, StopsReadingADeviceWithoutEnd) {
  auto text = readBoundedFile("/dev/zero", 1 << 20, "topology XML file");
  ASSERT_FALSE(text.isOk());
  EXPECT_NE(text.status().message().find("'/dev/zero' is too large (the limit is 1048576 bytes)"), std::string::npos)
      << text.status().message();
}

TEST(BoundedFile, NamesAMissingFileAndADirectory) {
  auto missing = readBoundedFile(tempPath("missing"), 100, "hostfile");
  EXPECT_NE(missing.status().message().find("cannot be read: No such file"), std::string::npos)
      << missing.status().message();
  auto directory = readBoundedFile(::testing::TempDir(), 100, "hostfile");
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos) << directory.status().message();
}

}  // namespace
}  // namespace tsr
