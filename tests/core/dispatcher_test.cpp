#include <gtest/gtest.h>

#include <functional>

#include "kiln/kiln.h"
#include "src/dispatch/dispatcher.h"

using namespace kiln;

TEST(Dispatcher, KeySetPicksHighestPriority) {
  DispatchKeySet keys{DispatchKey::CPU, DispatchKey::Autograd};
  EXPECT_EQ(keys.highest(), DispatchKey::Autograd);
  EXPECT_EQ(keys.remove(DispatchKey::Autograd).highest(), DispatchKey::CPU);
  EXPECT_EQ(DispatchKeySet({DispatchKey::Meta, DispatchKey::Trace}).highest(), DispatchKey::Trace);
}

TEST(Dispatcher, FallbackForAKeyRunsAndCanRedispatch) {
  int calls = 0;
  dispatch::set_fallback(DispatchKey::Subclass,
                         [&](const OpDef& op, Stack& args, Stack& out, DispatchKeySet keys) {
                           ++calls;
                           dispatch::redispatch(op, args, out, keys.remove(DispatchKey::Subclass));
                         });
  Tensor t = zeros({2, 2});
  {
    dispatch::IncludeKeysGuard include(DispatchKey::Subclass);
    Tensor c = t.clone();
    EXPECT_EQ(c.numel(), 4);
  }
  EXPECT_EQ(calls, 1);
  Tensor d = t.clone();  // guard gone: no handler call
  EXPECT_EQ(calls, 1);
  {
    dispatch::IncludeKeysGuard include(DispatchKey::Subclass);
    dispatch::ExcludeKeysGuard exclude(DispatchKey::Subclass);
    Tensor e = t.clone();
  }
  EXPECT_EQ(calls, 1);
  dispatch::set_fallback(DispatchKey::Subclass, nullptr);
}

TEST(Dispatcher, KeyWithoutHandlerFallsThrough) {
  dispatch::IncludeKeysGuard include(DispatchKey::Vmap);
  Tensor t = ones({3});
  EXPECT_EQ(t.clone().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Dispatcher, UnsupportedDtypeIsDTypeErrorNamingOp) {
  try {
    arange(0, 5, 1, TensorOptions(kBool));
    FAIL() << "expected DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("arange"), std::string::npos) << e.what();
  }
}

TEST(Dispatcher, InplaceOpsBumpTheSharedVersionCounter) {
  Tensor t = zeros({4});
  Tensor v = t.slice(0, 1, 3);
  const uint32_t before = t.version();
  v.fill_(2);
  EXPECT_EQ(t.version(), before + 1);
  EXPECT_EQ(v.version(), before + 1);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 2, 2, 0}));
}

TEST(Dispatcher, UnknownOpNameIsValueError) { EXPECT_THROW(op_id("no_such_op"), ValueError); }

TEST(Allocator, ReusesFreedBlocks) {
  void* p = nullptr;
  {
    Tensor t = empty({1000});
    p = t.data_ptr();
  }
  Tensor u = empty({1000});
  EXPECT_EQ(u.data_ptr(), p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(u.data_ptr()) % 64, 0u);
}

TEST(SmallVector, GrowsPastInlineCapacityAndCopies) {
  SmallVector<int64_t, 2> v{1, 2};
  v.push_back(3);
  v.insert(0, 0);
  EXPECT_EQ(v.size(), 4u);
  SmallVector<int64_t, 2> w = v;
  w.erase(1);
  EXPECT_EQ(std::vector<int64_t>(w.begin(), w.end()), (std::vector<int64_t>{0, 2, 3}));
  SmallVector<int64_t, 2> m = std::move(w);
  EXPECT_EQ(m.size(), 3u);
}

TEST(Dispatcher, AnUndefinedTensorWhereTheSchemaTakesOneRaisesNamingTheOp) {
  const Tensor undefined, x = ones({2});
  for (auto call : std::vector<std::function<void()>>{
           [&] { (void)(x - undefined); }, [&] { (void)(undefined * x); },
           [&] { (void)undefined.exp(); }, [&] { (void)x.index_select(0, undefined); },
           [&] { (void)x.add_(undefined); }}) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("is an undefined tensor"), std::string::npos)
          << e.what();
    } catch (const Error& e) {
      // An op with no defined tensor at all finds no backend first.
      EXPECT_NE(std::string(e.what()).find("no backend"), std::string::npos) << e.what();
    }
  }
  // An optional Tensor argument may be undefined: a linear layer without bias.
  EXPECT_EQ(linear(ones({1, 2}), ones({3, 2}), Tensor()).sizes().vec(),
            (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(conv2d(ones({1, 1, 3, 3}), ones({2, 1, 2, 2})).sizes().vec(),
            (std::vector<int64_t>{1, 2, 2, 2}));
}
