"""Request handling of `serve` (llama.cpp and transformers engines): the routes, independent of the HTTP plumbing
(http_server.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from .adapters import Adapters, BatchKey
from .batching import ShuttingDown
from .chat import prepare
from .errors import ApiError
from .gguf_files import CONVERSIONS
from .lora_routes import LoraRoutes
from .openai_api import SamplingKey, build_response, parse_chat_request

POST_PATHS = (
    "/v1/chat/completions",
    "/v1/embeddings",
    "/v1/load_lora_adapter",
    "/v1/unload_lora_adapter",
    "/v1/set_default_adapter",
    "/threads",
)
MAX_THREADS = 1024


class App:
    """Request handling, independent of the HTTP plumbing."""

    def __init__(self, engine: Any, batcher: Any, name: str, default_max_tokens: int, log_requests: bool) -> None:
        self.engine = engine
        self.batcher = batcher
        self.name = name
        self.adapters = Adapters(name)
        self.lora = LoraRoutes(engine, self.adapters)
        self.default_max_tokens = default_max_tokens
        self.log_requests = log_requests
        self.created = int(time.time())
        self.stopping = False
        self.requests = 0
        self.failures = 0
        self.in_flight = 0  # POSTs being handled, responses not yet written
        self._lock = threading.Lock()

    def track(self, delta: int) -> None:
        with self._lock:
            self.in_flight += delta

    def drain(self, timeout_s: float) -> None:
        """Wait (briefly) until every handled request has written its response."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)

    def health(self) -> tuple[int, dict[str, Any]]:
        if self.stopping:
            return 503, {"status": "stopping", "model": self.name}
        return 200, {"status": "ok", "model": self.name}

    def models(self) -> dict[str, Any]:
        """The served name (root: the weights it gives new requests; adapter: its adapter's name, or null for
        the base model), then each loaded adapter (parent: the base model's folder)."""
        base = self.engine.base_path
        default = self.adapters.default
        card = {
            "object": "model",
            "created": self.created,
            "owned_by": "massgen-rl",
            "max_model_len": self.engine.context_len,
        }
        served = {
            "id": self.name,
            **card,
            "root": default.path if default else base,
            "parent": base if default else None,
            "adapter": default.name if default else None,
        }
        loaded = [
            {"id": a.name, **card, "root": a.path, "parent": base, "adapter": a.name} for a in self.adapters.loaded()
        ]
        return {"object": "list", "data": [served, *loaded]}

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counts = {"requests": self.requests, "failed_requests": self.failures}
        return {
            **counts,
            **self.batcher.stats(),
            "adapters": self.adapters.stats(),
            "threads": self.engine.describe().get("threads"),
            "conversions": CONVERSIONS["count"],
            "convert_s": round(CONVERSIONS["seconds"], 6),
        }

    def threads(self, body: Any) -> dict[str, Any]:
        """POST /threads {threads}: the CPU threads of the llama.cpp engine from its next step on."""
        if not hasattr(self.engine, "set_threads"):
            raise ApiError(400, f"the {self.engine.describe()['engine']} engine has no thread setting", param="threads")
        value = body.get("threads") if isinstance(body, dict) else None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_THREADS:
            raise ApiError(400, f"threads must be a whole number from 1 to {MAX_THREADS}", param="threads")
        self.engine.set_threads(value)
        return {"threads": value}

    def chat(self, body: Any) -> tuple[Any, dict[str, str]]:
        """A response body, or for `stream: true` an iterator of chunks (the request runs while it is read)."""
        adapter = None
        try:
            self._admit()
            req = parse_chat_request(body, self.name)
            adapter = self.adapters.acquire(req.model)  # the weights it runs on, whatever changes meanwhile
            if req.stream:
                held, adapter = adapter, None  # released when the stream ends
                return self._stream(req, held), {}
            prepared = prepare(self.engine, req, adapter.slot if adapter else None, self.default_max_tokens)
            completions, info = self._submit(prepared)
        except Exception:
            self._failed()
            raise
        finally:
            self._release(adapter)
        return build_response(req, prepared.prompt_ids, completions, debug=info.as_dict()), {}

    def embeddings(self, body: Any) -> dict[str, Any]:
        """POST /v1/embeddings: mean-pooled, L2-normalized last hidden states, on the weights `model` names."""
        from .embeddings_api import (
            build_embeddings_response,
            check_dimensions,
            input_ids,
            normalized,
            parse_embeddings_request,
        )

        adapter = None
        try:
            self._admit()
            req = parse_embeddings_request(body)
            adapter = self.adapters.acquire(req.model)
            check_dimensions(req, self.engine.embedding_size)
            ids = input_ids(self.engine, req.inputs, self.engine.embed_max_tokens)
            vectors = normalized(self.engine.embed(ids, adapter.slot if adapter else None))
        except Exception:
            self._failed()
            raise
        finally:
            self._release(adapter)
        return build_embeddings_response(req, req.model, vectors, sum(len(x) for x in ids))

    def _admit(self) -> None:
        """Counts a request; refuses it while the server shuts down."""
        with self._lock:
            self.requests += 1
        if self.stopping:
            raise ApiError(503, "the server is shutting down")

    def _stream(self, req: Any, adapter: Any) -> Iterator[dict[str, Any]]:
        from .chat_stream import stream_chunks
        from .sampling import Stream

        try:
            stream = Stream()
            prepared = prepare(self.engine, req, adapter.slot if adapter else None, self.default_max_tokens, stream)
            refused = self.batcher.too_many(req.n) if hasattr(self.batcher, "too_many") else None
            if refused is not None:  # before the stream starts, rather than as an error event
                raise refused
            job = self.batcher.submit_stream(prepared.key, prepared.rows, stream)
        except ShuttingDown as exc:
            self._release(adapter)
            raise ApiError(503, str(exc)) from None
        except BaseException:
            self._release(adapter)
            raise
        return self._chunks(stream_chunks(self.engine, req, prepared.prompt_ids, stream, job), stream, adapter)

    def _chunks(self, chunks: Iterator[dict[str, Any]], stream: Any, adapter: Any) -> Iterator[dict[str, Any]]:
        try:
            yield from chunks
        except BaseException:
            self._failed()
            raise
        finally:  # the client went away, or the stream ended: its rows leave the batch at the next step
            stream.cancelled.set()
            self._release(adapter)

    def _failed(self) -> None:
        with self._lock:
            self.failures += 1

    def _release(self, adapter: Any) -> None:
        dropped = self.adapters.release(adapter)
        if dropped is not None:  # unloaded while this request ran, and this was its last request
            self.lora.drop(dropped)

    def _submit(self, prepared: Any) -> tuple[Any, Any]:
        try:
            return self.batcher.submit(prepared.key, len(prepared.rows), prepared.rows)
        except ShuttingDown as exc:
            raise ApiError(503, str(exc)) from None

    def warmup(self) -> None:
        """One short greedy generation through the batcher, on the weights the served name gives."""
        from .sampling import Row

        slot = self.adapters.default.slot if self.adapters.default else None
        rows = [Row(self.engine.prompt_ids([{"role": "user", "content": "Hi"}]), 1)]
        self.batcher.submit(BatchKey(SamplingKey(True, 0.0, 1.0), slot), 1, rows)

    def post(self, path: str, body: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """A POST_PATHS route, the body decoded."""
        if path == "/v1/chat/completions":
            return self.chat(body)
        if path == "/v1/embeddings":
            return self.embeddings(body), {}
        routes = {
            "/v1/load_lora_adapter": self.lora.load,
            "/v1/unload_lora_adapter": self.lora.unload,
            "/v1/set_default_adapter": self.lora.set_default,
            "/threads": self.threads,
        }
        if self.stopping:
            raise ApiError(503, "the server is shutting down")
        return routes[path](body), {}
