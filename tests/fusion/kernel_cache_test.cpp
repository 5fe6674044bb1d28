// The kernel cache's safety: the directory is private (created 0700, the user's own, not a
// symbolic link; without HOME a per-user directory in the temp directory), an entry is loaded
// only when its bytes have the SHA-256 recorded beside it (a planted, corrupted, truncated,
// foreign or linked .so is rebuilt, never loaded), and names from programs are sanitised before
// they reach generated source.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "backends/codegen/cache.h"
#include "backends/codegen/hash.h"
#include "semantics/ir/parser.h"
#include "semantics/passes/fusion.h"
#include "tests/fusion/fusion_testing.h"
#include "tests/scoped_env.h"

namespace spora::fusion_testing {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("spora_kernel_cache_" + name + "_" + std::to_string(::getpid()))) {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

unsigned mode_of(const fs::path& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

// A translation unit that is cheap to compile. Each test uses its own `variant` (a define in
// the flags, so its own cache name): glibc's dlopen returns an object already loaded under the
// same path, so a path is loaded at most once per process.
const std::string kGenuine =
    "extern \"C\" int spora_genuine(const void* const*, void* const*, int) { return 7; }\n";
codegen::CompileOptions options(const fs::path& dir, const std::string& variant) {
  codegen::CompileOptions o = codegen::default_compile_options();
  o.cache_dir = dir.string();
  o.flags = "-O0 -fPIC -shared -w -DSPORA_CACHE_TEST_VARIANT=" + variant;
  return o;
}

// A shared object exporting spora_planted(), built with the test's compiler at `path`; its
// bytes.
std::string plant(const fs::path& path, const codegen::CompileOptions& o) {
  std::string error;
  EXPECT_TRUE(codegen::private_cache_dir(path.parent_path().string(), &error)) << error;
  const fs::path src = path.parent_path() / "planted.cpp";
  write(src, "extern \"C\" int spora_planted() { return 666; }\n");
  const std::string cmd =
      o.compiler + " -O0 -fPIC -shared -w -o '" + path.string() + "' '" + src.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove(src);
  return read(path);
}

// compile_cpp of kGenuine: the object it loaded was built from kGenuine, not the planted one.
void expect_rebuilt(const codegen::CompileOptions& o, const std::string& planted) {
  codegen::reset_compile_stats();
  std::string error;
  auto lib = codegen::compile_cpp(kGenuine, o, &error);
  ASSERT_TRUE(lib) << error;
  EXPECT_EQ(lib->find("spora_planted"), nullptr);
  const codegen::KernelLibrary::Fn genuine = lib->find("spora_genuine");
  ASSERT_NE(genuine, nullptr);
  EXPECT_EQ(genuine(nullptr, nullptr, 1), 7);
  const auto stats = codegen::compile_stats();
  EXPECT_EQ(stats.rejected, 1u);
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.cache_hits, 0u);
  const std::string now = read(lib->path());
  EXPECT_NE(now, planted);
  EXPECT_EQ(read(codegen::digest_path(lib->path())), codegen::sha256_hex(now) + "\n");
}

TEST(KernelCache, Sha256GivesTheStandardDigests) {
  EXPECT_EQ(codegen::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(codegen::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(codegen::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(codegen::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(KernelCache, APlantedObjectWithoutItsDigestIsRebuiltNotLoaded) {
  TempDir dir("planted");
  const auto o = options(dir.path, "planted");
  const std::string planted = plant(codegen::kernel_cache_path(kGenuine, o), o);
  ASSERT_FALSE(planted.empty());
  expect_rebuilt(o, planted);
}

TEST(KernelCache, ACorruptedOrTruncatedObjectIsRebuilt) {
  TempDir dir("corrupted");
  {
    const auto o = options(dir.path, "corrupted");
    const fs::path path = codegen::kernel_cache_path(kGenuine, o);
    std::string bytes = plant(path, o);
    ASSERT_TRUE(codegen::record_digest(path, bytes));
    bytes[bytes.size() / 2] ^= 0x40;  // one bit flipped after the digest was recorded
    fs::remove(path);
    write(path, bytes);
    expect_rebuilt(o, bytes);
  }
  {
    const auto o = options(dir.path, "truncated");
    const fs::path path = codegen::kernel_cache_path(kGenuine, o);
    const std::string bytes = plant(path, o);
    ASSERT_TRUE(codegen::record_digest(path, bytes));
    fs::resize_file(path, bytes.size() / 2);
    expect_rebuilt(o, bytes.substr(0, bytes.size() / 2));
  }
}

// The control of the tests above: the recorded digest is what decides.
TEST(KernelCache, AnObjectWithItsRecordedDigestIsLoaded) {
  TempDir dir("recorded");
  const auto o = options(dir.path, "recorded");
  const fs::path path = codegen::kernel_cache_path(kGenuine, o);
  ASSERT_TRUE(codegen::record_digest(path, plant(path, o)));
  codegen::reset_compile_stats();
  std::string error;
  auto lib = codegen::compile_cpp(kGenuine, o, &error);
  ASSERT_TRUE(lib) << error;
  EXPECT_NE(lib->find("spora_planted"), nullptr);
  EXPECT_EQ(codegen::compile_stats().compiles, 0u);
  EXPECT_EQ(codegen::compile_stats().cache_hits, 1u);
  EXPECT_EQ(codegen::compile_stats().rejected, 0u);
}

TEST(KernelCache, AWritableLinkedOrForeignObjectIsRebuilt) {
  TempDir dir("foreign");
  {
    // Others may write it: its digest proves nothing.
    const auto o = options(dir.path, "group_writable");
    const fs::path path = codegen::kernel_cache_path(kGenuine, o);
    const std::string bytes = plant(path, o);
    ASSERT_TRUE(codegen::record_digest(path, bytes));
    fs::permissions(path, fs::perms(0775));
    expect_rebuilt(o, bytes);
  }
  {
    // A symbolic link to an object elsewhere, with the right digest beside the link.
    const auto o = options(dir.path, "linked");
    const fs::path path = codegen::kernel_cache_path(kGenuine, o);
    const fs::path elsewhere = dir.path / "elsewhere.so";
    const std::string bytes = plant(elsewhere, o);
    ASSERT_TRUE(codegen::record_digest(path, bytes));
    fs::create_symlink(elsewhere, path);
    expect_rebuilt(o, bytes);
    EXPECT_EQ(read(elsewhere), bytes) << "the link's target is left alone";
  }
  if (::geteuid() == 0) {
    // Another user's file.
    const auto o = options(dir.path, "foreign_owner");
    const fs::path path = codegen::kernel_cache_path(kGenuine, o);
    const std::string bytes = plant(path, o);
    ASSERT_TRUE(codegen::record_digest(path, bytes));
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    expect_rebuilt(o, bytes);
  }
}

TEST(KernelCache, TheDirectoryIsCreatedPrivate) {
  TempDir dir("created");
  const fs::path cache = dir.path / "a" / "kernels";
  std::string error;
  ASSERT_TRUE(codegen::private_cache_dir(cache.string(), &error)) << error;
  EXPECT_EQ(mode_of(cache), 0700u);
  struct stat st;
  ASSERT_EQ(::lstat(cache.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  // A directory of the user's that others could only read is made private.
  const fs::path readable = dir.path / "readable";
  fs::create_directories(readable);
  fs::permissions(readable, fs::perms(0755));
  ASSERT_TRUE(codegen::private_cache_dir(readable.string(), &error)) << error;
  EXPECT_EQ(mode_of(readable), 0700u);
}

TEST(KernelCache, AWritableLinkedOrForeignDirectoryIsRefused) {
  TempDir dir("refused");
  std::string error;
  const fs::path shared = dir.path / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms(01777));
  EXPECT_FALSE(codegen::private_cache_dir(shared.string(), &error));
  EXPECT_NE(error.find("may be written by others (mode 1777"), std::string::npos) << error;
  EXPECT_NE(error.find(shared.string()), std::string::npos) << error;
  EXPECT_EQ(mode_of(shared), 01777u) << "a refused directory is left as it was";
  // compile_cpp refuses it too, with the same message, and writes nothing there.
  codegen::reset_compile_stats();
  std::string compile_error;
  EXPECT_FALSE(codegen::compile_cpp(kGenuine, options(shared, "shared"), &compile_error));
  EXPECT_EQ(compile_error, error);
  EXPECT_EQ(codegen::compile_stats().failures, 1u);
  EXPECT_TRUE(fs::is_empty(shared));

  const fs::path target = dir.path / "target";
  ASSERT_TRUE(codegen::private_cache_dir(target.string(), &error)) << error;
  const fs::path link = dir.path / "link";
  fs::create_directory_symlink(target, link);
  EXPECT_FALSE(codegen::private_cache_dir(link.string(), &error));
  EXPECT_NE(error.find("is a symbolic link"), std::string::npos) << error;

  const fs::path file = dir.path / "file";
  write(file, "x");
  EXPECT_FALSE(codegen::private_cache_dir(file.string(), &error));
  EXPECT_NE(error.find("is not a directory"), std::string::npos) << error;

  if (::geteuid() == 0) {
    const fs::path foreign = dir.path / "foreign";
    ASSERT_TRUE(codegen::private_cache_dir(foreign.string(), &error)) << error;
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(codegen::private_cache_dir(foreign.string(), &error));
    EXPECT_NE(error.find("belongs to uid 65534, not to this user (uid 0)"), std::string::npos)
        << error;
  }
}

TEST(KernelCache, WithoutHomeTheCacheIsAPrivatePerUserTempDirectory) {
  TempDir tmp("tmp");
  fs::create_directories(tmp.path);
  fs::permissions(tmp.path, fs::perms(01777));  // a shared temp directory
  ScopedEnv a("SPORA_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt),
      c("HOME", std::nullopt), d("TMPDIR", tmp.path.string());
  const codegen::CompileOptions o = codegen::default_compile_options();
  const fs::path own = tmp.path / ("spora-" + std::to_string(::geteuid()));
  EXPECT_EQ(o.cache_dir, own.string());
  std::string error;
  codegen::CompileOptions quick = options(own, "no_home");
  auto lib = codegen::compile_cpp(kGenuine, quick, &error);
  ASSERT_TRUE(lib) << error;
  EXPECT_EQ(fs::path(lib->path()).parent_path(), own);
  EXPECT_EQ(mode_of(own), 0700u);
  if (::geteuid() == 0) {
    // Someone else made the per-user name first: refused, never shared.
    ASSERT_EQ(::chown(own.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(codegen::compile_cpp(kGenuine, options(own, "no_home_2"), &error));
    EXPECT_NE(error.find("belongs to uid 65534"), std::string::npos) << error;
  }
}

TEST(KernelCache, NamesFromProgramsAreSanitisedInGeneratedSource) {
  EXPECT_EQ(codegen::source_identifier("main"), "main");
  EXPECT_EQ(codegen::source_identifier("a.b-c d\n$9_"), "a_b_c_d__9_");
  EXPECT_EQ(codegen::source_identifier(""), "_");
  EXPECT_EQ(codegen::source_comment("domain [2,3]\n#x\\"), "domain [2,3]_#x_");

  setup();
  auto m = ir::parse_module(R"(
graph @main(%x: f32[4096]) -> f32[4096] {
  %a = constant 1.5 : f32
  %b = mul(%x, %a) : f32[4096]
  %y = tanh(%b) : f32[4096]
  return %y
}
)");
  passes::fuse_operators(*m);
  ir::Graph* fused = nullptr;
  for (const auto& g : m->graphs())
    if (passes::is_fused_graph(*g)) fused = g.get();
  ASSERT_NE(fused, nullptr);
  fused->name = "evil\n#include </etc/passwd>\nint x; //";
  const std::string listing = codegen::kernel_listing(*m, true, false);
  EXPECT_EQ(listing.find("#include </etc/passwd>"), std::string::npos) << listing;
  EXPECT_NE(listing.find("// ---- @evil__include___etc_passwd__int_x____ ----\n"),
            std::string::npos)
      << listing;

  // A plan's description is a comment: it cannot end the line or continue it.
  auto groups = codegen::fused_groups(*m);
  ASSERT_EQ(groups.size(), 1u);
  passes::KernelPlan plan = groups[0].plan;
  plan.describe = "rows \\\nint planted_text;";
  for (const std::string& text : {codegen::emit_cpp(plan).text, codegen::emit_cuda(plan).text}) {
    std::istringstream lines(text);
    std::string line;
    size_t seen = 0;
    while (std::getline(lines, line)) {
      EXPECT_TRUE(line.empty() || line.back() != '\\') << line;
      if (line.find("planted_text") != std::string::npos) {
        ++seen;
        EXPECT_EQ(line, "// rows __int planted_text;");
      }
    }
    EXPECT_EQ(seen, 1u) << text;
  }
}

}  // namespace
}  // namespace spora::fusion_testing
