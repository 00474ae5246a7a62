// The byte model the breadth suites judge copies and memsets by can fail: the wrong results a
// driver could produce (the last slice or row dropped, the row padding written, the box at the
// wrong offset, rows a pitch apart read with another pitch, a 16-bit element where a 32-bit one
// belongs) each leave bytes that CountModelMismatches reports, and the right result none.
#include "suites/hostkinds/host_kinds.h"

#include <gtest/gtest.h>

#include <cstring>

#include "fixtures/outcome.h"

namespace pagelock {
namespace kinds {
namespace {

constexpr unsigned char kGuard = 0xA5;

// A 3D copy of a 13x5x3 box from an odd-pitched source into a guard-filled destination, and what
// it would leave if done as `wrong` says.
struct Copy {
  Layout sl{13 + 29, 5 + 2, 3 + 1}, dl{13 + 7, 5 + 1, 3 + 2};
  Pos sp{3, 1, 1}, dp{5, 0, 1};
  Box b{13, 5, 3};
  std::vector<unsigned char> src = PatternBytes(sl.bytes(), 1234);
  std::vector<unsigned char> Result(Box box, Pos at, Layout read_as) const {
    std::vector<unsigned char> out(dl.bytes(), kGuard);
    ModelCopy(&out, read_as, at, src, sl, sp, box);
    return out;
  }
  size_t Mismatches(const std::vector<unsigned char>& actual) const {
    std::vector<unsigned char> want(dl.bytes(), kGuard);
    ModelCopy(&want, dl, dp, src, sl, sp, b);
    return CountModelMismatches(actual.data(), want, dl, nullptr);
  }
};

TEST(ByteModelTest, EveryWrongCopyLeavesBytesTheModelReports) {
  PAGELOCK_RULE("R90");
  const Copy c;
  EXPECT_EQ(c.Mismatches(c.Result(c.b, c.dp, c.dl)), 0u) << "the right copy";
  EXPECT_GT(c.Mismatches(c.Result(Box{c.b.w, c.b.h, c.b.d - 1}, c.dp, c.dl)), 0u) << "last slice dropped";
  EXPECT_GT(c.Mismatches(c.Result(Box{c.b.w, c.b.h - 1, c.b.d}, c.dp, c.dl)), 0u) << "last row dropped";
  EXPECT_GT(c.Mismatches(c.Result(Box{c.b.w - 1, c.b.h, c.b.d}, c.dp, c.dl)), 0u) << "last byte of each row dropped";
  EXPECT_GT(c.Mismatches(c.Result(Box{c.b.w + 2, c.b.h, c.b.d}, c.dp, c.dl)), 0u) << "row padding written";
  EXPECT_GT(c.Mismatches(c.Result(c.b, Pos{0, 0, 0}, c.dl)), 0u) << "destination offset ignored";
  EXPECT_GT(c.Mismatches(c.Result(c.b, Pos{c.dp.x + 1, c.dp.y, c.dp.z}, c.dl)), 0u) << "offset counted in other units";
  Layout other_pitch = c.dl;
  other_pitch.pitch -= 2;
  EXPECT_GT(c.Mismatches(c.Result(c.b, c.dp, other_pitch)), 0u) << "rows written with the wrong pitch";
  Layout other_rows = c.dl;
  other_rows.rows -= 1;
  EXPECT_GT(c.Mismatches(c.Result(c.b, c.dp, other_rows)), 0u) << "slices written with the wrong slice height";
}

TEST(ByteModelTest, EveryWrongFillLeavesBytesTheModelReports) {
  PAGELOCK_RULE("R92,R93");
  const Layout l{24 + 20, 3 + 2, 1};
  const Pos at{4, 1, 0};
  const Box b{24, 3, 1};
  const uint32_t value = 0x1234ABCDu;
  std::vector<unsigned char> want(l.bytes(), kGuard);
  ModelFill(&want, l, at, b, &value, 4);
  auto mismatches = [&](Box box, const void* elem, size_t elem_size, Pos p) {
    std::vector<unsigned char> got(l.bytes(), kGuard);
    ModelFill(&got, l, p, box, elem, elem_size);
    return CountModelMismatches(got.data(), want, l, nullptr);
  };
  EXPECT_EQ(mismatches(b, &value, 4, at), 0u) << "the right fill";
  const uint16_t low = static_cast<uint16_t>(value);
  EXPECT_GT(mismatches(b, &low, 2, at), 0u) << "a 16-bit element repeated where a 32-bit one belongs";
  EXPECT_GT(mismatches(Box{b.w + 4, b.h, 1}, &value, 4, at), 0u) << "the pitch padding written";
  EXPECT_GT(mismatches(Box{b.w, b.h - 1, 1}, &value, 4, at), 0u) << "the last row left out";
  EXPECT_GT(mismatches(b, &value, 4, Pos{0, 1, 0}), 0u) << "the start offset ignored";
  std::string where;
  std::vector<unsigned char> one_byte = want;
  one_byte[l.At(at.x + b.w, at.y, 0)] = 0;  // the first padding byte of the first row
  EXPECT_EQ(CountModelMismatches(one_byte.data(), want, l, &where), 1u);
  EXPECT_NE(where.find("row 1, byte 28"), std::string::npos) << where;
}

// A byte-swapped, dropped or repeated element byte is only visible if the four bytes differ
// from each other and from the fill around them, whatever the generator gave.
TEST(ElementValueTest, FourBytesDifferFromEachOtherAndFromTheFillForAnyDraw) {
  PAGELOCK_RULE("R92,R93");
  const uint64_t draws[] = {0, ~uint64_t{0}, 0xA5A5A5A5u, 0x0101010101010101ull,
                            0x123456789abcdef0ull, 0xfffefdfcull};
  for (const unsigned char avoid : {0x00, 0xA5, 0xff}) {
    for (const uint64_t d : draws) {
      const uint32_t v = ElementValue(d, avoid);
      unsigned char b[4];
      std::memcpy(b, &v, 4);
      for (int i = 0; i < 4; ++i) {
        EXPECT_NE(b[i], avoid) << "draw " << d << ", byte " << i;
        for (int j = 0; j < i; ++j) EXPECT_NE(b[i], b[j]) << "draw " << d << ", bytes " << j << " and " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kinds
}  // namespace pagelock
