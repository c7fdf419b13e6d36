// Token ids from the reference tokenizer (npm `tokenizers`, Hugging Face's own library, on the
// checkpoint's tokenizer.json), for the embedding and reranking gates:
//   node hf_token_ids.mjs TOKENIZER_JSON REQUEST_JSON
// REQUEST_JSON is {"texts": [...]}: each text encoded as transformers does for an embedding, with
// the tokenizer's post-processor (Qwen3-Embedding's appends <|endoftext|>); or {"rerank":
// {"instruction", "query", "documents", "max_length"}}: each document's prompt as the
// Qwen3-Reranker model card builds it (prefix and suffix encoded without special tokens added,
// the body truncated to max_length minus their lengths, longest_first). Prints a JSON array of id
// arrays.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('tokenizers');

const [tokenizerPath, requestPath] = process.argv.slice(2);
if (!requestPath) {
  console.error('usage: hf_token_ids.mjs TOKENIZER_JSON REQUEST_JSON');
  process.exit(2);
}
const request = JSON.parse(fs.readFileSync(requestPath, 'utf8'));

const ids = async (tokenizer, text, addSpecialTokens) =>
  (await tokenizer.encode(text, null, { addSpecialTokens })).getIds();

const out = [];
if (request.texts) {
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  for (const text of request.texts) out.push(await ids(tokenizer, text, true));
} else {
  const { instruction, query, documents, max_length: maxLength } = request.rerank;
  const prefix = '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the ' +
    'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n';
  const suffix = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';
  const plain = Tokenizer.fromFile(tokenizerPath);
  const prefixIds = await ids(plain, prefix, false);
  const suffixIds = await ids(plain, suffix, false);
  const body = Tokenizer.fromFile(tokenizerPath);
  body.setTruncation(maxLength - prefixIds.length - suffixIds.length);
  for (const document of documents) {
    const text = `<Instruct>: ${instruction}\n<Query>: ${query}\n<Document>: ${document}`;
    out.push([...prefixIds, ...(await ids(body, text, false)), ...suffixIds]);
  }
}
console.log(JSON.stringify(out));
