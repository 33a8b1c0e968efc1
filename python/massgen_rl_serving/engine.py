"""The transformers backend of `serve`: model loading and a batched decoding loop.

The loop is ours rather than `model.generate` so that each sequence of a batch can have its own
max_tokens, stop strings, stop token ids and random generator (a seeded request samples the same
tokens whatever it is batched with), finished sequences leave the batch (their KV cache rows are
dropped), and the logprob of every chosen token is read from the very distribution it was drawn from.

Batches are left-padded: positions come from the attention mask, so padding changes nothing.

Every row of a batch runs on the same weights: the base model, or one LoRA adapter loaded beside it
(lora.py; the batch key says which), re-applied before each forward step.

Imported lazily by server.py and app.py (it imports torch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from massgen_rl_common.model_folder import ModelFolder
from massgen_rl_common.protocol import ScriptError

from .adapters import BatchKey
from .batching import ShuttingDown
from .lora import LoraWeights
from .openai_api import Completion, SamplingKey
from .prompt_logprobs import score_prompt
from .sampling import Row, new_generator, sampling_logprobs
from .tokens import ChatTokens

_SHORT_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}  # the names --weights-type uses


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ScriptError("--device cuda was asked for but torch sees no CUDA device")
    return device


class Engine(ChatTokens):
    def __init__(self, model: Any, tokenizer: Any, device: str, folder: ModelFolder, base_path: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.folder = folder
        self.base_path = base_path  # the base model's folder (or hub id): every adapter must be one of its
        self.lora = LoraWeights(model, device)
        self.tok_lock = threading.Lock()
        self.cancel = threading.Event()  # set at shutdown: a running batch stops at its next token
        eos = getattr(model.generation_config, "eos_token_id", None)
        eos_ids = set(eos if isinstance(eos, list) else [eos])
        eos_ids.add(tokenizer.eos_token_id)
        self.eos_ids = frozenset(i for i in eos_ids if isinstance(i, int))
        if not self.eos_ids:
            raise ScriptError("the model defines no end-of-sequence token (eos_token_id)")
        pad = tokenizer.pad_token_id
        self.pad_id = pad if isinstance(pad, int) else min(self.eos_ids)
        text_config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        context = getattr(text_config, "max_position_embeddings", None)
        tok_max = getattr(tokenizer, "model_max_length", None)
        if not isinstance(context, int) or context <= 0:
            context = tok_max if isinstance(tok_max, int) and 0 < tok_max < 1_000_000 else 4096
        self.context_len = int(context)

    def describe(self) -> dict[str, Any]:
        dtype = str(self.model.dtype).removeprefix("torch.")
        return {
            "engine": "transformers",
            "weights": _SHORT_DTYPES.get(dtype, dtype),
            "threads": torch.get_num_threads(),
        }

    # -- embeddings (any thread) -----------------------------------------------------------------

    EMBED_BATCH = 16

    @property
    def embedding_size(self) -> int:
        config = self.model.config
        return int((config.get_text_config() if hasattr(config, "get_text_config") else config).hidden_size)

    @property
    def embed_max_tokens(self) -> int:
        return self.context_len

    @torch.inference_mode()
    def embed(self, inputs: Sequence[list[int]], adapter: str | None = None) -> Any:
        """The mean over each input's tokens of the last hidden state (numpy, float32, not normalized). Runs
        as a change of the model (the generation thread waits between two steps, then re-applies its adapter)."""
        import numpy as np

        out = []
        with self.lora.guard.change():
            self.lora.activate(adapter)
            for start in range(0, len(inputs), self.EMBED_BATCH):
                chunk = inputs[start : start + self.EMBED_BATCH]
                width = max(len(ids) for ids in chunk)
                ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for b, row in enumerate(chunk):  # right padding: causal attention keeps it out of the real tokens
                    ids[b, : len(row)] = torch.tensor(row, dtype=torch.long)
                    mask[b, : len(row)] = 1
                ids, mask = ids.to(self.device), mask.to(self.device)
                hidden = (
                    self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
                    .hidden_states[-1]
                    .to(torch.float32)
                )
                weights = mask.unsqueeze(-1).to(torch.float32)
                out.append(((hidden * weights).sum(dim=1) / weights.sum(dim=1)).cpu().numpy())
        return np.concatenate(out)

    # -- generation (the generation thread only) -------------------------------------------------

    def run_batch(self, key: BatchKey, jobs: Sequence[list[Row]]) -> list[list[Completion]]:
        """Batcher entry point: every job is the list of rows of one request."""
        flat = [row for rows in jobs for row in rows]
        done = self.generate(key.sampling, flat, key.adapter)
        out, i = [], 0
        for rows in jobs:
            out.append(done[i : i + len(rows)])
            i += len(rows)
        return out

    def _forward(
        self,
        input_ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        adapter: str | None,
        every_position: bool = False,
    ) -> torch.Tensor:
        """The last position's logits (float32); `every_position`: those of every position (prompt_logprobs)."""
        with self.lora.guard.step():  # an adapter load or drop waits for this step, and this step for it
            self.lora.activate(adapter)
            out = self.model(
                input_ids=input_ids,
                attention_mask=mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=0 if every_position else 1,
            )
        return out.logits if every_position else out.logits[:, -1, :].to(torch.float32)

    @torch.inference_mode()
    def generate(self, key: SamplingKey, rows: Sequence[Row], adapter: str | None = None) -> list[Completion]:
        """`adapter`: the slot of the LoRA adapter every row runs on (None: the base model)."""
        from transformers import DynamicCache

        batch = len(rows)
        width = max(len(r.prompt_ids) for r in rows)
        input_ids = torch.full((batch, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for b, row in enumerate(rows):  # left padding
            input_ids[b, width - len(row.prompt_ids) :] = torch.tensor(row.prompt_ids, dtype=torch.long)
            mask[b, width - len(row.prompt_ids) :] = 1
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(dim=-1) - 1).clamp(min=0)
        generators = None if key.greedy else [new_generator(r.seed, self.device) for r in rows]
        want_top = max(r.top_logprobs for r in rows)

        ids: list[list[int]] = [[] for _ in rows]
        lps: list[list[float]] = [[] for _ in rows]
        tops: list[list[list[tuple[int, float]]]] = [[] for _ in rows]
        finish: list[str] = ["length"] * batch
        cut: list[int | None] = [None] * batch
        active = list(range(batch))  # row index of each position in the live batch

        cache = DynamicCache(config=self.model.config)
        scored = [r for r, row in enumerate(rows) if row.prompt_logprobs is not None and row.index == 0]
        logits = self._forward(input_ids, mask, positions, cache, adapter, every_position=bool(scored))
        prompt_scores: dict[int, list[dict[str, Any] | None]] = {}
        if scored:
            for r in scored:  # left padding: the row's prompt is the last len(prompt) positions
                row = rows[r]
                at = width - len(row.prompt_ids)
                top = row.prompt_logprobs or 0
                prompt_scores[r] = [None, *score_prompt(self, row.prompt_ids, logits[r, at : width - 1], 0, top)]
            logits = logits[:, -1, :].to(torch.float32)
        last_pos = positions[:, -1:]
        while True:
            if self.cancel.is_set():
                raise ShuttingDown("the server is shutting down")
            logprobs = sampling_logprobs(logits, key)
            if generators is None:
                chosen = logprobs.argmax(dim=-1)
            else:
                probs = logprobs.exp()
                chosen = torch.cat(
                    [torch.multinomial(probs[b], 1, generator=generators[r]) for b, r in enumerate(active)]
                )
            chosen_lp = logprobs.gather(-1, chosen[:, None]).squeeze(-1).tolist()
            top_values = top_ids = None
            if want_top:
                top_values, top_ids = logprobs.topk(want_top, dim=-1)
                top_values, top_ids = top_values.tolist(), top_ids.tolist()
            tokens = chosen.tolist()

            keep: list[int] = []
            for b, r in enumerate(active):
                row, token = rows[r], tokens[b]
                ids[r].append(token)
                lps[r].append(chosen_lp[b])
                top = None
                if row.top_logprobs and top_ids is not None and top_values is not None:
                    top = [
                        (t, v)
                        for t, v in zip(top_ids[b][: row.top_logprobs], top_values[b][: row.top_logprobs])
                        if v != float("-inf")
                    ]
                    tops[r].append(top)
                if self._finished(row, ids[r], token, finish, cut, r):
                    continue
                keep.append(b)
            for b, r in enumerate(active):
                if rows[r].stream is not None:
                    rows[r].stream.events.put(
                        (
                            rows[r].index,
                            tokens[b],
                            chosen_lp[b],
                            tops[r][-1] if rows[r].top_logprobs and tops[r] else None,
                            finish[r] if b not in keep else None,
                            cut[r],
                        )
                    )
            if not keep:
                break
            step = chosen
            if len(keep) < len(active):  # drop finished sequences from the batch and the KV cache
                index = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(index)
                mask, last_pos, step = mask[index], last_pos[index], step[index]
                active = [active[b] for b in keep]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=-1)
            last_pos = last_pos + 1
            logits = self._forward(step[:, None], mask, last_pos, cache, adapter)

        done = self._completions(rows, ids, lps, tops, finish, cut)
        for r, entries in prompt_scores.items():
            done[r].prompt_logprobs = entries
        return done

    def _finished(self, row: Row, ids: list[int], token: int, finish: list[str], cut: list[int | None], r: int) -> bool:
        """Whether row r stops at `token` (finish[r] and cut[r] set); a streamed row whose client left stops too."""
        if (token in self.eos_ids and not row.ignore_eos) or token in row.stop_token_ids:
            finish[r] = "stop"
        elif row.stop and (hits := [i for i in (self.decode(ids).find(s) for s in row.stop) if i >= 0]):
            finish[r], cut[r] = "stop", min(hits)
        elif len(ids) >= row.max_tokens:
            finish[r] = "length"
        elif row.stream is not None and row.stream.cancelled.is_set():
            finish[r] = "cancelled"
        else:
            return False
        return True

    def _completions(
        self,
        rows: Sequence[Row],
        ids: list[list[int]],
        lps: list[list[float]],
        tops: list[list[list[tuple[int, float]]]],
        finish: list[str],
        cut: list[int | None],
    ) -> list[Completion]:
        results = []
        for r, row in enumerate(rows):
            text = self.decode(ids[r])
            if cut[r] is not None:
                text = text[: cut[r]]
            completion = Completion(token_ids=ids[r], text=text, finish_reason=finish[r])
            if row.want_logprobs:
                completion.logprobs = lps[r]
                completion.tokens = self.token_texts(ids[r])
                if row.top_logprobs:
                    completion.top_logprobs = [
                        list(zip(self.token_texts([t for t, _ in step_top]), [v for _, v in step_top]))
                        for step_top in tops[r]
                    ]
            results.append(completion)
        return results


def load_engine(folder: ModelFolder, device: str, on_progress: Callable[[str, str], None]) -> Engine:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = pick_device(device)
    if device == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    else:
        dtype = torch.float32
    source = folder.base if folder.adapter else str(folder.path)
    assert source is not None
    on_progress(
        "load",
        f"loading {'base model ' if folder.adapter else ''}{source} ({device}, {str(dtype).removeprefix('torch.')})",
    )
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    except OSError as exc:
        hint = "; pass --base DIR (everything runs offline)" if folder.adapter else ""
        raise ScriptError(f"cannot load the model from {source}: {exc}{hint}") from exc
    tokenizer_source = str(folder.path) if (folder.path / "tokenizer_config.json").is_file() else source
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    if folder.adapter and len(tokenizer) > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(len(tokenizer))
    if not tokenizer.chat_template:
        raise ScriptError(f"the tokenizer in {tokenizer_source} has no chat template")
    model.to(device)
    model.eval()
    # An adapter folder's adapter is loaded beside the base by the server (unmerged, like any adapter
    # loaded later), so that it can be swapped for another adapter of the same base without a restart.
    return Engine(model, tokenizer, device, folder, source)
