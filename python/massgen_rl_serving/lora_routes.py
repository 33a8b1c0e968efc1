"""The runtime LoRA endpoints of `serve` (transformers backend), vLLM's plus one of ours:

POST /v1/load_lora_adapter    {lora_name, lora_path}   load an adapter of the served base beside it
POST /v1/unload_lora_adapter  {lora_name}              unload it (dropped once its requests finish)
POST /v1/set_default_adapter  {lora_name | null}       what the served name gives new requests
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from massgen_rl_common.model_folder import resolve_base
from massgen_rl_common.protocol import ScriptError, log

from .adapters import Adapter, Adapters, lora_body
from .errors import ApiError


class LoraRoutes:
    def __init__(self, engine: Any, adapters: Adapters) -> None:
        self.engine = engine
        self.adapters = adapters

    def load(self, body: Any) -> dict[str, Any]:
        name, path = lora_body(body, need_path=True)
        assert name is not None and path is not None
        return self.add(name, path)

    def add(self, name: str, path: str, check_base: bool = True) -> dict[str, Any]:
        """Loads adapter `name` from `path`; check_base False: the caller vouches for its base (--base)."""
        merged = getattr(self.engine, "merged", None)
        if merged:  # its weights are no longer the base an adapter was trained on
            raise ApiError(
                409,
                f"this server serves the adapter {merged} merged into its base weights and loads no other adapter; "
                "serve it unmerged (without --merge-adapter) to load adapters beside it",
                param="lora_path",
            )
        adapter = self.adapters.reserve(name, path)
        try:
            folder = check_adapter_folder(Path(path), self.engine.base_path if check_base else None)
            check_tokenizer(folder, self.engine)
            adapter.path = str(folder)
            self.engine.lora.load(adapter.slot, str(folder))
        except ApiError:
            self.adapters.cancel(adapter)
            raise
        except Exception as exc:
            self.adapters.cancel(adapter)
            raise ApiError(
                400,
                f"cannot load the LoRA adapter '{name}' from {path}: {type(exc).__name__}: {exc}",
                param="lora_path",
            ) from None
        self.adapters.commit(adapter)
        log(f"serve: loaded the LoRA adapter '{name}' from {folder}")
        return {
            "status": "ok",
            "message": f"Success: LoRA adapter '{name}' added successfully.",
            "lora_name": name,
            "root": str(folder),
        }

    def unload(self, body: Any) -> dict[str, Any]:
        name, _ = lora_body(body)
        assert name is not None
        adapter, now = self.adapters.unload(name)
        if now:
            self.drop(adapter)
        else:
            log(f"serve: unloaded the LoRA adapter '{name}'; dropped after its {adapter.in_flight} running request(s)")
        return {
            "status": "ok",
            "message": f"Success: LoRA adapter '{name}' removed successfully.",
            "lora_name": name,
            "in_flight": 0 if now else adapter.in_flight,
        }

    def set_default(self, body: Any) -> dict[str, Any]:
        name, _ = lora_body(body, nullable=True)
        model = body.get("model")
        if model is not None and model != self.adapters.served_name:
            raise ApiError(
                404,
                f"The model `{model}` does not exist. This server serves `{self.adapters.served_name}`.",
                param="model",
                code="model_not_found",
            )
        adapter, previous = self.adapters.set_default(name)
        log(
            f"serve: `{self.adapters.served_name}` now serves {f'the LoRA adapter {name!r}' if adapter else 'the base model'}"
        )
        return {
            "status": "ok",
            "model": self.adapters.served_name,
            "lora_name": adapter.name if adapter else None,
            "root": adapter.path if adapter else self.engine.base_path,
            "previous": previous.name if previous else None,
        }

    def drop(self, adapter: Adapter) -> None:
        """Takes an unloaded adapter's weights out of the model (its last request has finished)."""
        self.engine.lora.drop(adapter.slot)
        log(f"serve: dropped the LoRA adapter '{adapter.name}'")


def check_adapter_folder(path: Path, base: str | None) -> Path:
    """The adapter folder, resolved; a 400 unless it holds a LoRA adapter (of the base model `base`, if given)."""
    folder = path.expanduser().resolve()
    config_file = folder / "adapter_config.json"
    if not config_file.is_file():
        raise ApiError(400, f"{folder} is not a LoRA adapter folder (no adapter_config.json)", param="lora_path")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ApiError(400, f"cannot read {config_file}: {exc}", param="lora_path") from None
    if config.get("peft_type", "LORA") != "LORA":
        raise ApiError(
            400, f"{folder} holds a {config.get('peft_type')} adapter; only LoRA adapters are served", param="lora_path"
        )
    if base is None:
        return folder
    try:
        adapter_base = resolve_base(folder, config, None)
    except ScriptError as exc:
        raise ApiError(
            400,
            f"{exc}".replace("pass --base DIR", "so it cannot be checked against the served base"),
            param="lora_path",
        ) from None
    if adapter_base != base:
        raise ApiError(
            400,
            f"the adapter in {folder} is for the base model {adapter_base}, but this server's base "
            f"model is {base}; serve it with a server started on its base",
            param="lora_path",
        )
    return folder


def check_tokenizer(folder: Path, engine: Any) -> None:
    """An adapter saved with a tokenizer must use the served one (same vocabulary and chat template)."""
    if not (folder / "tokenizer_config.json").is_file():
        return
    from transformers import AutoTokenizer

    try:
        own = AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:
        raise ApiError(400, f"cannot read the tokenizer in {folder}: {exc}", param="lora_path") from None
    with engine.tok_lock:
        size, template = len(engine.tokenizer), engine.tokenizer.chat_template
    if len(own) != size or own.chat_template != template:
        raise ApiError(
            400,
            f"the adapter in {folder} comes with another tokenizer ({len(own)} tokens) than the "
            f"served model's ({size} tokens) or another chat template; serve it with a server "
            "started on it",
            param="lora_path",
        )
