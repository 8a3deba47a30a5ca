//===- attn-inspect-sample.cpp - a synthetic attn-inspect report ----------===//
//
//   attn-inspect-sample --write-sample DIR [LAYERS HEADS TOKENS HIDDEN]
//
// Writes the report of makeSampleData (default 2 layers, 3 heads, 12
// tokens, hidden 4) to DIR, for check-page.sh to render without a model.
//
//===----------------------------------------------------------------------===//

#include "SampleData.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace attn::inspect;

int main(int argc, char **argv) {
  if ((argc != 3 && argc != 7) || std::strcmp(argv[1], "--write-sample") != 0) {
    std::fputs("usage: attn-inspect-sample --write-sample DIR "
               "[LAYERS HEADS TOKENS HIDDEN]\n",
               stderr);
    return 1;
  }
  int64_t shape[4] = {2, 3, 12, 4};
  for (int k = 0; argc == 7 && k < 4; ++k) {
    shape[k] = std::atoll(argv[3 + k]);
    if (shape[k] < 1) {
      std::fprintf(stderr, "attn-inspect-sample: error: '%s' is not >= 1\n", argv[3 + k]);
      return 1;
    }
  }
  InspectData data = test::makeSampleData(shape[0], shape[1], shape[2], shape[3]);
  std::string error;
  if (!writeReport(data, argv[2], error)) {
    std::fprintf(stderr, "attn-inspect-sample: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
