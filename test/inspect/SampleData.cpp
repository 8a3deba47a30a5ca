//===- SampleData.cpp - synthetic attn-inspect data for the tests ---------===//

#include "SampleData.h"

#include <algorithm>
#include <cmath>

namespace attn::inspect::test {

InspectData makeSampleData(int64_t layers, int64_t heads, int64_t T, int64_t hidden) {
  const std::vector<std::string> vocabulary = {"<s>",  " The", " cat",        kMarkupPiece, "\n",
                                               "\t\\", " sat", "caf\xc3\xa9", "\xff",       " mat"};
  int64_t V = static_cast<int64_t>(vocabulary.size());
  InspectData data;
  data.model = "sample-model";
  data.prompt = "The cat </script><b>& sat\non the mat";
  data.layers = layers;
  data.heads = heads;
  data.kvHeads = heads;
  data.hidden = hidden;
  data.lensPieces = vocabulary;
  for (int64_t t = 0; t < T; ++t) {
    data.ids.push_back(static_cast<int32_t>(t % V));
    data.pieces.push_back(vocabulary[t % V]);
  }
  data.attention.assign(layers * heads * T * T, 0.0f);
  for (int64_t k = 0; k < layers * heads; ++k)
    for (int64_t i = 0; i < T; ++i) {
      float *row = &data.attention[(k * T + i) * T];
      int64_t kind = k % 4;
      int64_t target = kind == 0 ? std::max<int64_t>(i - 1, 0) : kind == 1 ? 0 : i;
      float uniform = 1.0f / static_cast<float>(i + 1);
      for (int64_t j = 0; j <= i; ++j) {
        float pattern = kind == 2 ? uniform : j == target ? 1.0f : 0.0f;
        row[j] = 0.15f * uniform + 0.85f * pattern;
      }
    }
  for (int64_t r = 0; r <= layers; ++r)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < hidden; ++d)
        data.residual.push_back(static_cast<float>((1 + r) * std::sin(0.7 * t + d)));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < hidden; ++d)
      data.finalNorm.push_back(static_cast<float>(std::cos(0.3 * t + d)));
  for (int64_t l = 0; l <= layers; ++l)
    for (int64_t t = 0; t < T; ++t)
      data.lens.push_back({{static_cast<int32_t>((t + 1 + l) % V), 0.6f},
                           {static_cast<int32_t>((t + 2) % V), 0.3f},
                           {9999, 0.1f}});
  return data;
}

} // namespace attn::inspect::test
