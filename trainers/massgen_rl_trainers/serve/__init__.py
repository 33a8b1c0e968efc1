"""Serve a model folder (or a LoRA adapter) over an OpenAI-compatible HTTP API.

    python -m massgen_rl_trainers.serve --model DIR [--served-name NAME] [--base DIR] [--host H] [--port N]
        [--device auto|cpu|cuda] [--max-batch-size N] [--batch-window-ms MS] [--backend auto|transformers|vllm]

Events on stdout (the JSON-lines protocol): `progress` while loading (stages `load`, `adapter`, `warmup`,
or `vllm`), then `ready {host, port, base_url, model, backend, device, pid, adapter, max_batch_size}` once
the server answers, and `done {requests, batches, batch_sizes}` after a clean shutdown on SIGTERM or
SIGINT (exit code 0). Startup failures are `error` events (exit code 1).

HTTP (transformers backend):
  GET  /health                200 {"status": "ok", "model": NAME} (503 while shutting down)
  GET  /v1/models             {"object": "list", "data": [{"id": NAME, "object": "model", ...}]}
  POST /v1/chat/completions   OpenAI chat completions, non-streaming: messages, model, temperature
                              (0 = greedy), top_p, max_tokens / max_completion_tokens, n, seed, stop,
                              logprobs, top_logprobs, plus vLLM's return_token_ids, stop_token_ids and
                              ignore_eos.
                              Errors are OpenAI-style {"error": {message, type, param, code}}: 400 for
                              malformed JSON or invalid fields, 404 for another model's name.
  GET  /stats                 {"requests", "batches", "batch_sizes": {requests per batch: count}, ...}

This server produces text only: `tools` / `tool_choice` are accepted and ignored (the response then
carries the header `X-Massgen-Rl-Tools: ignored`); agents using it should use text tool calling.
Every response has a non-standard `massgen_rl` field: {batch_id, batch_requests, batch_sequences,
queue_ms, generate_ms}. With return_token_ids, `prompt_token_ids` is top-level and each choice has
`token_ids` (the completion's tokens, including the end-of-sequence token, as vLLM does);
`usage.completion_tokens` counts the same tokens, and logprobs hold one entry per such token.

If vLLM is importable and a CUDA GPU is present (and --device is not cpu), vLLM's own OpenAI server is
launched instead (see vllm_backend.py); the events are the same.

Modules: `server` (the flags and both backends' lifecycles), `app` (HTTP routes and request handling),
`openai_api` (the wire format), `batching` (micro-batching), `engine` (the transformers decoding loop),
`vllm_backend` (launching and supervising vLLM), `lifecycle` (signals, parent watch); `__main__` runs `server`.
"""
