//===- RuntimeModel.h - the scheduler's model over libattnrt ----*- C++ -*-===//
//
// BatchedModel over attnrt sessions (one per slot, created once as one group;
// every decode step is one attnrt_decode_batch call, which runs the decoding
// slots as one compiled batch), and TokenText over an
// attnrt_detokenizer primed with the prompt, as attn-run primes its own, so
// the first generated word keeps the space the whole text would decode to.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_RUNTIMEMODEL_H
#define ATTN_SERVE_RUNTIMEMODEL_H

#include "Scheduler.h"

namespace attn::serve {

class RuntimeModel : public BatchedModel {
public:
  /// Creates `slots` sessions of `model` (which must outlive this); null
  /// with the runtime's message when they cannot be made.
  static std::unique_ptr<RuntimeModel> create(const attnrt_model *model, int slots,
                                              std::string &error);
  ~RuntimeModel() override;

  int64_t vocabSize() const override;
  int64_t contextSize() const override;
  int numSlots() const override { return static_cast<int>(sessions.size()); }
  void reset(int slot) override;
  bool prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
               std::string &error) override;
  bool decode(const int *slots, const int32_t *tokens, int64_t n, float *logits,
              std::string &error) override;

private:
  explicit RuntimeModel(const attnrt_model *model) : model(model) {}

  const attnrt_model *model;
  std::vector<attnrt_session *> sessions;
  std::vector<attnrt_session *> batch;
};

class RuntimeText : public TokenText {
public:
  /// A detokenizer of `tokenizer` (which must outlive this) fed `prompt`.
  static std::unique_ptr<RuntimeText>
  create(const attnrt_tokenizer *tokenizer, const std::vector<int32_t> &prompt, std::string &error);
  ~RuntimeText() override;

  bool isEnd(int32_t token) const override;
  bool step(int32_t token, std::string &text, std::string &error) override;
  bool flush(std::string &text, std::string &error) override;

private:
  explicit RuntimeText(const attnrt_tokenizer *tokenizer) : tokenizer(tokenizer) {}

  const attnrt_tokenizer *tokenizer;
  attnrt_detokenizer *detokenizer = nullptr;
};

} // namespace attn::serve

#endif // ATTN_SERVE_RUNTIMEMODEL_H
