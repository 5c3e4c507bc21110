// The plain-data pickle reader: what Python writes with every protocol reads back as the
// same values (Python's own repr, against ours), and everything else is one line of error
// naming the byte and the opcode, never a crash: the opcodes that would import, build or
// call, truncated input of every length, corrupt memo indices, MARKs, lengths and nesting.
#include "monitor/store/reader/torch/pickle_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/reader/reader_test_support.h"
#include "tests/unit/reader/torch_snapshot_test_support.h"

namespace memtap::pickle {
namespace {

// A literal's bytes, NULs included.
template <size_t N>
std::string raw(const char (&text)[N]) {
  return std::string(text, N - 1);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string read_error(const std::string& bytes) {
  Document doc;
  std::string error;
  EXPECT_FALSE(read_pickle(bytes, &doc, &error)) << "read without error";
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  return error;
}

// Python's repr of shortest round-trip floats.
std::string float_repr(double v) {
  char text[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  std::string s = text;
  if (const size_t e = s.find('e'); e != std::string::npos) {
    // 1e+300 as Python writes it; Python keeps two exponent digits at least, as C does.
    return s;
  }
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

std::string text_repr(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The value as Python's repr() writes it (no sets, no self-reference: the test's objects).
std::string repr(const Document& doc, ValueId v) {
  std::string out;
  auto items = [&](const char* open, const char* close) {
    out = open;
    bool first = true;
    doc.visit_items(v, [&](ValueId item) {
      if (!first) out += ", ";
      first = false;
      out += repr(doc, item);
      return true;
    });
    if (doc.kind(v) == Kind::kTuple && doc.item_count(v) == 1) out += ",";
    out += close;
  };
  switch (doc.kind(v)) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return doc.get_bool(v) ? "True" : "False";
    case Kind::kInt: {
      int64_t s;
      uint64_t u;
      if (doc.get_int(v, &s)) return std::to_string(s);
      if (doc.get_uint(v, &u)) return std::to_string(u);
      return "?";
    }
    case Kind::kBigInt:
      return "<big>";
    case Kind::kFloat: {
      double d = 0;
      doc.get_float(v, &d);
      return float_repr(d);
    }
    case Kind::kStr:
      return text_repr(doc.text(v));
    case Kind::kBytes:
      return "b" + text_repr(doc.text(v));
    case Kind::kList:
      items("[", "]");
      return out;
    case Kind::kTuple:
      items("(", ")");
      return out;
    case Kind::kSet:
      return "<set>";
    case Kind::kDict: {
      out = "{";
      bool first = true;
      doc.visit_pairs(v, [&](ValueId key, ValueId value) {
        if (!first) out += ", ";
        first = false;
        out += repr(doc, key) + ": " + repr(doc, value);
        return true;
      });
      return out + "}";
    }
  }
  return "?";
}

TEST(PickleReader, EveryProtocolReadsWhatPythonWrote) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  for (int protocol = 0; protocol <= 5; ++protocol) {
    SCOPED_TRACE("protocol " + std::to_string(protocol));
    const std::string path = dir.file("plain" + std::to_string(protocol) + ".pickle");
    std::string expected =
        test::command_output(test::kPython + " " + test::kExpectScript + " --plain " +
                             std::to_string(protocol) + " " + path);
    ASSERT_FALSE(expected.empty());
    expected.pop_back();  // print's newline
    Document doc;
    std::string error;
    ASSERT_TRUE(read_pickle(file_bytes(path), &doc, &error)) << error;
    EXPECT_EQ(repr(doc, doc.root()), expected);
    // The memo's shared object is one value, referred to twice.
    EXPECT_EQ(doc.find(doc.root(), "shared"), doc.find(doc.root(), "again"));
    EXPECT_EQ(doc.item_count(doc.find(doc.root(), "many")), 2500u);
    EXPECT_EQ(doc.item_count(doc.find(doc.root(), "wide")), 3000u);  // keys and values
  }
}

TEST(PickleReader, BigIntsAndSetsAreKindsOfTheirOwn) {
  // {1: 2**100, 2: -2**70, 3: {1, 2}} with protocol 4 (LONG1, EMPTY_SET, ADDITEMS).
  const std::string bytes =
      raw("\x80\x04}(K\x01\x8a\x0e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00"
          "K\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xc0"
          "K\x03\x8f(K\x01K\x02\x90u.");
  Document doc;
  std::string error;
  ASSERT_TRUE(read_pickle(bytes, &doc, &error)) << error;
  std::vector<ValueId> values;
  doc.visit_pairs(doc.root(), [&](ValueId, ValueId v) {
    values.push_back(v);
    return true;
  });
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(doc.kind(values[0]), Kind::kBigInt);
  EXPECT_EQ(doc.kind(values[1]), Kind::kBigInt);
  int64_t n;
  EXPECT_FALSE(doc.get_int(values[0], &n));
  EXPECT_EQ(doc.kind(values[2]), Kind::kSet);
  EXPECT_EQ(doc.item_count(values[2]), 2u);
}

TEST(PickleReader, RefusesEveryOpcodeThatWouldImportBuildOrCall) {
  const struct {
    uint8_t op;
    const char* name;
    const char* why;
  } kRefused[] = {
      {'c', "GLOBAL", "it would import a name"},
      {0x93, "STACK_GLOBAL", "it would import a name"},
      {'R', "REDUCE", "it would call a function"},
      {'b', "BUILD", "it would build an object"},
      {'i', "INST", "it would build an object"},
      {'o', "OBJ", "it would build an object"},
      {0x81, "NEWOBJ", "it would build an object"},
      {0x92, "NEWOBJ_EX", "it would build an object"},
      {0x82, "EXT1", "it would import a registered name (copyreg extension)"},
      {0x83, "EXT2", "it would import a registered name (copyreg extension)"},
      {0x84, "EXT4", "it would import a registered name (copyreg extension)"},
      {'P', "PERSID", "it would load a persistent object"},
      {'Q', "BINPERSID", "it would load a persistent object"},
      {0x97, "NEXT_BUFFER", "it would take an out-of-band buffer"},
      {0x98, "READONLY_BUFFER", "it would take an out-of-band buffer"},
  };
  for (const auto& r : kRefused) {
    // After a little plain data, so that the offset is not the first byte's.
    std::string bytes =
        "\x80\x05]\x94(K\x01K\x02"
        "e";
    const size_t at = bytes.size();
    bytes += char(r.op);
    bytes += "os\nsystem\n.";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", r.op);
    EXPECT_EQ(read_error(bytes), "byte " + std::to_string(at) + ": refused opcode " + r.name +
                                     " (" + hex + "): " + r.why +
                                     "; memtap reads only plain data (dicts, lists, strings, "
                                     "numbers) from a pickle");
  }
}

TEST(PickleReader, CorruptInputIsOneLineNamingTheByte) {
  EXPECT_EQ(read_error(raw("\x80\x04h\x05.")), "byte 2: BINGET of memo 5, which was never stored");
  EXPECT_EQ(read_error(raw("\x80\x04]K\x01"
                           "e.")),
            "byte 5: APPENDS with no MARK before it");
  EXPECT_EQ(read_error(raw("\x80\x04}(K\x01u.")),
            "byte 6: SETITEMS with an odd number of values (1) for key, value pairs");
  EXPECT_EQ(read_error(raw("\x80\x04}K\x01"
                           "a.")),
            "byte 5: APPEND onto a dict, not a list");
  EXPECT_EQ(read_error(raw("\x80\x04(K\x01K\x02s.")),
            "byte 7: SETITEM needs 3 values on the stack, above the last MARK it has 2");
  EXPECT_EQ(read_error(raw("\x80\x04X\xff\xff\xff\xff")),
            "byte 2: truncated: BINUNICODE needs 4294967295 more bytes, the input ends at byte 7");
  EXPECT_EQ(read_error(raw("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f")),
            "byte 2: truncated: BINUNICODE8 needs 9223372036854775807 more bytes, the input ends "
            "at byte 11");
  EXPECT_EQ(read_error(raw("\x80\x04\x8b\xff\xff\xff\xff.")),
            "byte 2: LONG4 with a negative length");
  EXPECT_EQ(read_error(raw("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x01\x00N.")),
            "byte 2: truncated: a FRAME of 281474976710656 bytes, the input ends at byte 13");
  EXPECT_EQ(read_error(raw("\x80\x04\xff.")),
            "byte 2: unknown opcode 0xff (not a pickle, or a corrupt one)");
  EXPECT_EQ(read_error(raw("\x80\x06N.")),
            "byte 0: pickle protocol 6, newer than memtap reads (2 to 5)");
  EXPECT_EQ(read_error(raw("\x80\x04.")), "byte 2: STOP needs 1 value on the stack, it has 0");
  EXPECT_EQ(read_error(raw("\x80\x04N(.")),
            "byte 4: STOP needs 1 value on the stack, above the last MARK it has 0");
  EXPECT_EQ(read_error(raw("\x80\x04N")),
            "byte 3: truncated: the input ends before the pickle's STOP opcode");
  EXPECT_EQ(read_error("\x80\x04Vabc"),
            "byte 2: truncated: UNICODE's line has no end before byte 6");
  EXPECT_EQ(read_error("\x80\x04V\\u12\n."), "byte 2: UNICODE with a \\u escape cut short");
}

// Nesting a million deep, a million MARKs, a list that holds itself: read without
// recursion, so without a crash; the snapshot reader then finds no snapshot in them.
TEST(PickleReader, DeepNestingAndSelfReference) {
  const size_t n = 1000000;
  std::string deep = "\x80\x04";
  deep.append(n, ']');
  deep.append(n - 1, 'a');
  deep += '.';
  Document doc;
  std::string error;
  ASSERT_TRUE(read_pickle(deep, &doc, &error)) << error;
  EXPECT_EQ(doc.item_count(doc.root()), 1u);

  std::string marks = "\x80\x04";
  marks.append(n, '(');
  marks += '.';
  EXPECT_EQ(read_error(marks), "byte " + std::to_string(n + 2) +
                                   ": STOP needs 1 value on the stack, above the last MARK it "
                                   "has 0");

  // l = []; l.append(l)
  const std::string self =
      raw("\x80\x04]\x94h\x00"
          "a.");
  ASSERT_TRUE(read_pickle(self, &doc, &error)) << error;
  ValueId item = kNoValue;
  doc.visit_items(doc.root(), [&](ValueId v) {
    item = v;
    return true;
  });
  EXPECT_EQ(item, doc.root());
}

// Every prefix of a small snapshot, and prefixes of a large one spread over its length:
// one line of error each, never a crash.
TEST(PickleReader, EveryTruncationIsOneLineOfError) {
  const std::vector<std::string> samples = test::torch_snapshot_samples();
  if (samples.empty()) GTEST_SKIP() << test::kTorchSnapshotDir << " is absent";
  for (const char* name : {"thesis-text-to-SQL__dump_snapshot_expandable.pickle",
                           "unsupervised_finetune_resnet50__dump_snapshot_empty.pickle"}) {
    const std::string whole = file_bytes(test::kTorchSnapshotDir + name);
    ASSERT_GT(whole.size(), 500u) << name;
    for (size_t length = 0; length < whole.size(); ++length) {
      const std::string error = read_error(whole.substr(0, length));
      ASSERT_EQ(error.rfind("byte ", 0), 0u) << name << " cut at " << length << ": " << error;
    }
    Document doc;
    std::string error;
    EXPECT_TRUE(read_pickle(whole, &doc, &error)) << error;
  }
  const std::string large =
      file_bytes(test::kTorchSnapshotDir + "cs336-a2__memory_ctx128_fullstep.pickle");
  ASSERT_GT(large.size(), 3000000u);
  for (size_t k = 1; k < 64; ++k) {
    const size_t length = large.size() * k / 64 + k;  // not on frame boundaries
    ASSERT_EQ(read_error(large.substr(0, length)).rfind("byte ", 0), 0u) << length;
  }
}

}  // namespace
}  // namespace memtap::pickle
