func.func @softmax(%logits: tensor<?x1000xf32>) -> tensor<?x1000xf32> {
  %0 = attn.softmax %logits : tensor<?x1000xf32>
  return %0 : tensor<?x1000xf32>
}
