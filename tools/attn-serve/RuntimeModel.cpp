//===- RuntimeModel.cpp - the scheduler's model over libattnrt ------------===//

#include "RuntimeModel.h"

namespace attn::serve {

std::unique_ptr<RuntimeModel> RuntimeModel::create(const attnrt_model *model, int slots,
                                                   std::string &error) {
  std::unique_ptr<RuntimeModel> result(new RuntimeModel(model));
  // One group: its sessions' caches share a buffer, so attnrt_decode_batch
  // runs any subset of them as one compiled batch (each weight read once).
  std::vector<attnrt_session *> group(static_cast<size_t>(slots), nullptr);
  char message[1024];
  if (attnrt_session_create_group(model, slots, group.data(), message, sizeof(message)) !=
      ATTNRT_OK) {
    error = message;
    return nullptr;
  }
  result->sessions = std::move(group);
  result->batch.reserve(result->sessions.size());
  return result;
}

RuntimeModel::~RuntimeModel() {
  for (attnrt_session *session : sessions)
    attnrt_session_free(session);
}

int64_t RuntimeModel::vocabSize() const { return attnrt_model_vocab_size(model); }

int64_t RuntimeModel::contextSize() const { return attnrt_model_max_seq(model); }

void RuntimeModel::reset(int slot) { attnrt_session_reset(sessions[static_cast<size_t>(slot)]); }

bool RuntimeModel::prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
                           std::string &error) {
  char message[1024];
  if (attnrt_prefill(sessions[static_cast<size_t>(slot)], tokens, n, logits, 0, message,
                     sizeof(message)) == ATTNRT_OK)
    return true;
  error = message;
  return false;
}

bool RuntimeModel::decode(const int *slots, const int32_t *tokens, int64_t n, float *logits,
                          std::string &error) {
  batch.clear();
  for (int64_t i = 0; i < n; ++i)
    batch.push_back(sessions[static_cast<size_t>(slots[i])]);
  char message[1024];
  if (attnrt_decode_batch(batch.data(), tokens, n, logits, message, sizeof(message)) == ATTNRT_OK)
    return true;
  error = message;
  return false;
}

std::unique_ptr<RuntimeText> RuntimeText::create(const attnrt_tokenizer *tokenizer,
                                                 const std::vector<int32_t> &prompt,
                                                 std::string &error) {
  std::unique_ptr<RuntimeText> result(new RuntimeText(tokenizer));
  char message[1024];
  result->detokenizer = attnrt_detokenizer_create(tokenizer, 1, message, sizeof(message));
  if (!result->detokenizer) {
    error = message;
    return nullptr;
  }
  // The prompt's text is not returned: only the spacing it sets matters.
  for (int32_t id : prompt)
    if (attnrt_tokenizer_piece(tokenizer, id) &&
        !attnrt_detokenizer_step(result->detokenizer, id, nullptr, message, sizeof(message))) {
      error = message;
      return nullptr;
    }
  return result;
}

RuntimeText::~RuntimeText() { attnrt_detokenizer_free(detokenizer); }

bool RuntimeText::isEnd(int32_t token) const {
  return attnrt_tokenizer_is_eos(tokenizer, token) != 0;
}

bool RuntimeText::step(int32_t token, std::string &text, std::string &error) {
  // A model may have more ids than its tokenizer (a vocabulary padded for
  // speed); such a token has no text.
  if (!attnrt_tokenizer_piece(tokenizer, token))
    return true;
  char message[1024];
  size_t length = 0;
  const char *piece =
      attnrt_detokenizer_step(detokenizer, token, &length, message, sizeof(message));
  if (!piece) {
    error = message;
    return false;
  }
  text.append(piece, length);
  return true;
}

bool RuntimeText::flush(std::string &text, std::string &error) {
  char message[1024];
  size_t length = 0;
  const char *rest = attnrt_detokenizer_flush(detokenizer, &length, message, sizeof(message));
  if (!rest) {
    error = message;
    return false;
  }
  text.append(rest, length);
  return true;
}

} // namespace attn::serve
