"""Serve a model folder (or a LoRA adapter) over an OpenAI-compatible HTTP API.

    python -m massgen_rl_serving --model DIR [--served-name NAME] [--base DIR] [--adapter-name NAME]
        [--host H] [--port N] [--device auto|cpu|cuda] [--max-batch-size N] [--batch-window-ms MS]
        [--engine auto|llama.cpp|transformers|vllm] [--weights-type bf16|f16|f32|q8_0] [--threads N]
        [--kv-cache-tokens N] [--kv-cache-layout per-sequence|shared] [--no-prefix-cache]
        [--max-body-bytes N] [--max-header-bytes N] [--max-headers N] [--max-connections N]
        [--max-connections-per-client N] [--request-timeout-s S] [--write-timeout-s S]

Engines: `auto` takes vLLM when it is installed and a CUDA GPU is present, else llama.cpp on the CPU when
llama-cpp-python is installed (massgen-rl doctor --fix builds it), else transformers. llama.cpp serves a GGUF
copy of the weights (bf16 by default; f32 reproduces the transformers engine's logprobs to ~1e-3) with
continuous batching: a request joins the running batch at its next step. Its KV cache is split per sequence
by default (each sequence's prompt and completion fit in --kv-cache-tokens / --max-batch-size cells, the
context length the server reports), and a prompt that starts like an earlier or running one feeds only the
rest (prefix_cache.py; --no-prefix-cache turns it off); `shared` lets one request use the whole cache, at a
slower decode. transformers batches requests
that arrive together with the same sampling settings, and runs each batch to its end.

Events on stdout (the JSON-lines protocol): `progress` while loading (stages `load`, `adapter`, `warmup`,
or `vllm`), then `ready {host, port, base_url, model, backend, device, pid, adapter, adapter_name, base,
max_batch_size}` once the server answers (`base`: the base model's folder; `adapter_name`: the lora_name
of --model's adapter), and `done {requests, batches, batch_sizes}` after a clean shutdown on SIGTERM or
SIGINT (exit code 0). Startup failures are `error` events (exit code 1).

HTTP (llama.cpp and transformers engines):
  GET  /health                200 {"status": "ok", "model": NAME} (503 while shutting down)
  GET  /v1/models             {"object": "list", "data": [served, *adapters]}: first the served NAME
                              {"id", "object": "model", "root": the weights NAME gives new requests,
                              "parent": the base folder when that is an adapter, "adapter": its
                              lora_name or null, "max_model_len", ...}, then one card per loaded
                              adapter {"id": lora_name, "root": its folder, "parent": the base folder,
                              "adapter": lora_name}
  POST /v1/chat/completions   OpenAI chat completions: messages, model, temperature (0 = greedy), top_p,
                              max_tokens / max_completion_tokens, n, seed, stop, logprobs, top_logprobs,
                              stream and stream_options.include_usage (server-sent events: a role chunk,
                              content or tool-call deltas, finish_reason, a usage chunk, `data: [DONE]`;
                              logprobs and token_ids per chunk when asked; n > 1 streams every choice),
                              tools, tool_choice (none, auto, required, {type: function, function: {name}}),
                              parallel_tool_calls, response_format (json_object, json_schema), plus vLLM's
                              return_token_ids, stop_token_ids, ignore_eos and prompt_logprobs (not
                              with stream: each prompt token's logprob, rank and text, top-level). usage has
                              prompt_tokens_details.cached_tokens: prompt tokens found in the KV cache
                              (llama.cpp prefix reuse, docs/serving.md).
                              `model` is NAME (the default adapter, or the base model) or a loaded
                              adapter's lora_name.
                              Errors are OpenAI-style {"error": {message, type, param, code}}: 400 for
                              malformed JSON or invalid fields (param: the top-level field at fault),
                              404 for a name it does not serve; an error after a stream began is sent as a
                              `data: {"error": ...}` event. Unknown fields are ignored, as vLLM does.
  POST /v1/embeddings         OpenAI embeddings: model, input (a string, strings, token ids or arrays of them),
                              encoding_format (float, base64); each vector the mean over the input's tokens
                              of the last hidden state (after the final norm), L2-normalized, on the weights
                              `model` names (llama.cpp: a second context with mean pooling on the loaded
                              model, made on the first request; 4096 tokens an input at most). dimensions
                              other than the hidden size is a 400 (param: dimensions): these vectors do not
                              shorten. Embeddings run between two generation steps.
  GET  /stats                 {"requests", "batches", "batch_sizes": {requests per batch: count},
                              "adapters": [{name, path, state, in_flight, default}], "threads", llama.cpp:
                              "lanes" (batchers on their own contexts: one per adapter running at once),
                              "compactions", "prefix_cache", "prefix_cache_kept",
                              "prefix_cache_reused_tokens", "prefix_cache_reused_requests", ...,
                              cumulative for a caller's deltas: "conversions", "convert_s" (GGUF conversions
                              and their seconds); llama.cpp: "prefill_tokens", "decode_tokens" (tokens fed),
                              "decode_steps" (steps that decoded a row), "step_s", "prefill_s", "decode_s"
                              (step seconds, split by the step's share of prompt vs decode tokens)}
  POST /threads               {threads}: llama.cpp only (400 on transformers): decode on that many threads
                              from the next step on; answers {threads}. A run's servers divide the cores
                              this way (src/serving/share-cores.ts) instead of each spinning on all of them.

Limits (llama.cpp and transformers engines; docs/serving.md): a body over --max-body-bytes (32 MiB) is a 413;
a request line and headers over --max-header-bytes (64 KiB) or --max-headers (100) a 431; JSON that is not UTF-8,
holds a lone surrogate escape or nests more than 100 levels a 400. Past --max-connections (1024) open connections,
or --max-connections-per-client (512) from one address, a new one gets a 503 with Retry-After from the accepting
thread. A request must arrive whole within --request-timeout-s (60) of its first byte (the body: 408; else a
close), and a kept-alive connection is closed after that long idle; a response its client leaves unread for
--write-timeout-s (60) once 256 KiB are queued is cut off, and a stream's rows leave the batch as on a disconnect.
Every refusal, http.server's own included (a malformed request line: 400, another method: 405), is OpenAI-shaped
and closes the connection.

Runtime LoRA adapters (llama.cpp and transformers engines; the first two are vLLM's own endpoints and answers):
  POST /v1/load_lora_adapter    {lora_name, lora_path}: loads a PEFT LoRA adapter of the served base model
                                beside it, unmerged; requests for `model: lora_name` then run on it. 400 for
                                a name already loaded ("The lora adapter 'x' has already been loaded."),
                                the served name, a folder without adapter_config.json, an adapter of
                                another base model (its base_model_name_or_path) or with another tokenizer.
  POST /v1/unload_lora_adapter  {lora_name}: new requests can no longer name it (404 "cannot be found" for
                                an unknown one; 400 while it is the default); requests already running
                                on it finish on it, and its weights are dropped after the last one
                                (the answer's `in_flight` says how many were left). llama.cpp: when
                                its folder is gone by then, its cached GGUF copy is deleted too.
  POST /v1/set_default_adapter  {lora_name | null}: what NAME gives NEW requests: that adapter, or (null)
                                the base model; answers {model, lora_name, root, previous}. This is how
                                a deploy swaps the weights behind NAME: load, set default, unload previous.
A request takes its weights when it is admitted and keeps them to the end whatever changes meanwhile;
a batch never mixes weights (rows are batched by sampling settings and adapter), and a load or drop
waits only for the forward step running at that moment (lora.py). --model ADAPTER starts the server on
its base with that adapter loaded under --adapter-name and set as the default.

Tool calls (docs/serving.md): a model whose chat template renders tools and `<tool_call>` gets them through
its template; any other (the bundled SmolLM2) through the generic format of tool_calls.py: the tools in the
system prompt, each call written as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, parsed back
into `tool_calls` (finish_reason `tool_calls`). On llama.cpp a grammar built from the tools' JSON Schemas
(grammar.py) constrains the call from its first token when tool_choice is required or names a function, and
from `<tool_call>` on when it is auto, so every call is valid; response_format decodes under the schema's
grammar (llama.cpp only: 400 on transformers). Token ids and logprobs cover the call's text like any other.
Every response has a non-standard `massgen_rl` field: {batch_id, batch_requests, batch_sequences,
queue_ms, generate_ms}. With return_token_ids, `prompt_token_ids` is top-level and each choice has
`token_ids` (the completion's tokens, including the end-of-sequence token, as vLLM does);
`usage.completion_tokens` counts the same tokens, and logprobs hold one entry per such token.

If vLLM is importable and a CUDA GPU is present (and --device is not cpu), vLLM's own OpenAI server is
launched instead (see vllm_backend.py); the events are the same. Started on an adapter, it has vLLM's
runtime LoRA endpoints on (room for a second adapter), but not /v1/set_default_adapter: NAME stays on
the adapter it started with.

Modules: `server` (the flags and the engines' lifecycles), `engines` (which engine), `app` (the routes and
request handling), `http_server` (the threaded HTTP server and its handler), `openai_api` (the wire format),
`errors` (`ApiError`, the OpenAI-style refusal every module raises),
`sampling` (rows, seeds, the sampled distribution), `batching` (micro-batching), `engine` (the transformers
decoding loop), `llama_engine` (the llama.cpp engine), `llama_context` (llama.cpp's bindings), `chat` (a
request made ready: template, rows, grammar), `chat_stream` and `text_stream` (streamed chunks), `tool_calls`
and `request_tools` (the tool format and fields), `grammar` (llama.cpp's grammar sampler as a token filter),
`continuous` and `seq` (continuous batching), `gguf_files` (GGUF copies of model and adapter folders) and
`digest_cache` (their content hashes kept between starts),
`llama_setup` (builds llama-cpp-python), `probe` (doctor's tokens/s), `agreement` (served vs trainer
logprobs), `adapters` (which weights each name gets, in-flight holds), `lora` (PEFT adapters in the model,
changed between forward steps), `lora_routes` (the runtime LoRA endpoints), `http_transport`, `limits` and
`json_body` (what HTTP may bring in), `embeddings_api` and `llama_embed` (/v1/embeddings), `vllm_backend` (launching and supervising vLLM), `lifecycle` (signals,
parent watch), `models` (the default model: provisioning and a smoke test); `__main__` runs `server`.
The protocol, config parsing and model folders come from massgen_rl_common.
"""

import os

# Nothing may come from the Hugging Face Hub (as in massgen_rl_common): set before any module of this package
# imports huggingface_hub, which reads it once at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
