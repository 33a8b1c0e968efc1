"""The LoRA adapters a `serve` process holds beside its base model, and which weights each model name gets.

Clients name an adapter (`model: <lora_name>`) or the served name, which routes to the default adapter
(or to the base model when there is none). A request takes its adapter when it is admitted and holds it
until its response is built, so changing the default or unloading an adapter never changes the weights
of a request already running: an unloaded adapter leaves the name table at once and is dropped from the
model when its last request finishes (`release` hands it back to the caller for that).

No torch here: the model side is engine.py and lora.py; this is plain bookkeeping under one lock.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .openai_api import SamplingKey


@dataclass(frozen=True)
class BatchKey:
    """What the rows of one batch share: sampling settings and weights (the adapter's slot, None for the base)."""

    sampling: SamplingKey
    adapter: str | None = None


@dataclass(eq=False)
class Adapter:
    name: str
    slot: str  # the adapter's name inside the model (client names may hold characters PEFT module keys cannot)
    path: str
    state: str = "loading"  # loading -> loaded -> unloading (-> dropped)
    in_flight: int = 0
    requests: int = 0  # admitted on these weights since the adapter was loaded


class Adapters:
    def __init__(self, served_name: str) -> None:
        self.served_name = served_name
        self.default: Adapter | None = None  # what the served name routes to; None: the base model
        self._by_name: dict[str, Adapter] = {}
        self._draining: list[Adapter] = []
        self._slots = itertools.count(1)
        self._lock = threading.Lock()

    # -- requests --------------------------------------------------------------------------------

    def acquire(self, model: str) -> Adapter | None:
        """The adapter a request for `model` runs on (None: the base model), held until release()."""
        with self._lock:
            if model == self.served_name:
                adapter = self.default
            else:
                adapter = self._by_name.get(model)
                if adapter is None or adapter.state != "loaded":
                    names = ", ".join(f"`{n}`" for n in self._names())
                    raise ApiError(
                        404,
                        f"The model `{model}` does not exist. This server serves {names}.",
                        param="model",
                        code="model_not_found",
                    )
            if adapter is not None:
                adapter.in_flight += 1
                adapter.requests += 1
            return adapter

    def release(self, adapter: Adapter | None) -> Adapter | None:
        """Ends a request's hold; returns the adapter when it was unloaded and this was its last request."""
        if adapter is None:
            return None
        with self._lock:
            adapter.in_flight -= 1
            return self._drained(adapter)

    # -- the runtime LoRA endpoints ----------------------------------------------------------------

    def reserve(self, name: str, path: str) -> Adapter:
        """A slot for an adapter about to be loaded (then commit() or cancel())."""
        with self._lock:
            if name == self.served_name:
                raise ApiError(
                    400, f"'{name}' is the served model name; give the adapter another lora_name", param="lora_name"
                )
            if name in self._by_name:
                raise ApiError(400, f"The lora adapter '{name}' has already been loaded.", param="lora_name")
            adapter = Adapter(name, f"lora{next(self._slots)}", path)
            self._by_name[name] = adapter
            return adapter

    def commit(self, adapter: Adapter) -> None:
        with self._lock:
            adapter.state = "loaded"

    def cancel(self, adapter: Adapter) -> None:
        with self._lock:
            if self._by_name.get(adapter.name) is adapter:
                del self._by_name[adapter.name]

    def set_default(self, name: str | None) -> tuple[Adapter | None, Adapter | None]:
        """Routes the served name to adapter `name` (None: the base model) for new requests: (new, previous)."""
        with self._lock:
            adapter = None if name is None else self._loaded(name)
            previous, self.default = self.default, adapter
            return adapter, previous

    def unload(self, name: str) -> tuple[Adapter, bool]:
        """Takes an adapter out of the name table: (it, whether it can be dropped from the model now)."""
        with self._lock:
            adapter = self._loaded(name)
            if adapter is self.default:
                raise ApiError(
                    400,
                    f"The lora adapter '{name}' is what `{self.served_name}` serves; route it "
                    "elsewhere first (POST /v1/set_default_adapter)",
                    param="lora_name",
                )
            del self._by_name[name]
            adapter.state = "unloading"
            self._draining.append(adapter)
            return adapter, self._drained(adapter) is not None

    # -- reading -----------------------------------------------------------------------------------

    def loaded(self) -> list[Adapter]:
        with self._lock:
            return [a for a in self._by_name.values() if a.state == "loaded"]

    def stats(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "name": a.name,
                    "path": a.path,
                    "state": a.state,
                    "in_flight": a.in_flight,
                    "requests": a.requests,
                    "default": a is self.default,
                }
                for a in [*self._by_name.values(), *self._draining]
            ]

    def _names(self) -> list[str]:
        return [self.served_name, *(n for n, a in self._by_name.items() if a.state == "loaded")]

    def _loaded(self, name: str) -> Adapter:
        adapter = self._by_name.get(name)
        if adapter is None or adapter.state != "loaded":
            raise ApiError(
                404, f"The lora adapter '{name}' cannot be found.", param="lora_name", code="model_not_found"
            )
        return adapter

    def _drained(self, adapter: Adapter) -> Adapter | None:
        if adapter.state == "unloading" and adapter.in_flight == 0:
            adapter.state = "dropped"
            self._draining.remove(adapter)
            return adapter
        return None


def lora_body(body: Any, *, need_path: bool = False, nullable: bool = False) -> tuple[str | None, str | None]:
    """(lora_name, lora_path) of a runtime LoRA request, validated."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    name = body.get("lora_name")
    if not (name is None and nullable) and (not isinstance(name, str) or not name.strip()):
        raise ApiError(
            400, f"'lora_name' must be a non-empty string{' or null' if nullable else ''}", param="lora_name"
        )
    path = body.get("lora_path")
    if need_path and (not isinstance(path, str) or not path.strip()):
        raise ApiError(400, "'lora_path' must be the path of a LoRA adapter folder", param="lora_path")
    return name, path if need_path else None
