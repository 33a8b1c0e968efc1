"""`serve` under a seeded fuzz, over loopback: one real llama.cpp server with small limits (so that limit cases are
cheap) gets generated cases of every category in fuzz_runs.py and fuzz_transport.py. Every case ends in an
OpenAI-shaped 4xx naming the field at fault (or a clean close), never a 500 or a traceback; after each batch the
server still answers a small request, and at the end its rows, threads and memory are back within bounds.

FUZZ_CASES=N cases (default 300), FUZZ_SEED=S to replay a run (default 31), FUZZ_CASE=I to run case I alone. The
counts per category are printed (pytest -s) and written to fuzz-counts.json in the test's tmp dir. The named tests
before the fuzz are the defects it found, and the limits, each on its own."""

from __future__ import annotations

import ctypes
import json
import os
import platform
import random
import signal
import struct
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import fuzz_runs
import fuzz_transport
from fuzz_cases import NAME, base, dumps
from fuzz_runs import Ctx, post
from fuzz_support import check, connect, exchange, read_answer, request, source, vm, wait_for
from massgen_rl_common.protocol import ScriptError
from massgen_rl_serving.engines import llama_cpp_available
from massgen_rl_serving.errors import ApiError
from massgen_rl_serving.json_body import decode_body
from massgen_rl_serving.openai_api import parse_chat_request
from massgen_rl_serving.server import ServeArgs, _check
from serve_support import MODEL_DIR, Server

CASES = int(os.environ.get("FUZZ_CASES", "300"))
SEED = int(os.environ.get("FUZZ_SEED", "31"))
WORKERS, BATCH = 4, 12
LIMITS = {
    "max_body_bytes": 256 * 1024,
    "max_header_bytes": 8192,
    "max_headers": 32,
    "max_connections": 64,
    "max_connections_per_client": 8,
    "request_timeout_s": 1.0,
    "write_timeout_s": 1.0,
}
RUNNERS = {
    fuzz_runs.wrong_type: 30,
    fuzz_runs.malformed_json: 10,
    fuzz_runs.invalid_utf8: 4,
    fuzz_runs.lone_surrogate: 4,
    fuzz_runs.deep_json: 4,
    fuzz_runs.unknown_fields: 5,
    fuzz_runs.limits: 8,
    fuzz_transport.huge_body: 4,
    fuzz_transport.huge_headers: 4,
    fuzz_transport.bad_http: 6,
    fuzz_transport.slow_body: 2,
    fuzz_transport.slow_reader: 1,
    fuzz_transport.disconnect: 4,
    fuzz_transport.many_connections: 2,
    fuzz_transport.adapter_swap: 4,
    fuzz_transport.other_routes: 5,
    fuzz_transport.keep_alive: 4,
}

pytestmark = pytest.mark.skipif(
    not (MODEL_DIR / "config.json").is_file() or not llama_cpp_available(),
    reason="needs the default model and llama-cpp-python (massgen-rl doctor --fix)",
)


def start_server() -> Server:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in LIMITS.items()]
    # one decode thread: llama.cpp's threads spin at each step's barrier, and on a busy machine they wait for
    # cores the clients here (and whatever else runs) hold, 10 times slower
    return Server(
        "--model",
        str(MODEL_DIR),
        "--served-name",
        NAME,
        "--engine",
        "llama.cpp",
        "--max-batch-size",
        "4",
        "--kv-cache-tokens",
        "4096",
        "--threads",
        "1",
        "--no-log-requests",
        *flags,
    )


def make_adapter(folder: Path) -> Path:
    """A LoRA adapter of the default model on q_proj of two layers, written as safetensors without torch."""
    hidden = json.loads((MODEL_DIR / "config.json").read_text())["hidden_size"]
    rng, header, data = random.Random(0), {}, b""
    for layer in range(2):
        for part, shape in (("lora_A", [2, hidden]), ("lora_B", [hidden, 2])):
            raw = struct.pack(f"<{2 * hidden}f", *(rng.gauss(0, 0.01) for _ in range(2 * hidden)))
            header[f"base_model.model.model.layers.{layer}.self_attn.q_proj.{part}.weight"] = {
                "dtype": "F32",
                "shape": shape,
                "data_offsets": [len(data), len(data) + len(raw)],
            }
            data += raw
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + data)
    (folder / "adapter_config.json").write_text(
        json.dumps(
            {
                "peft_type": "LORA",
                "task_type": "CAUSAL_LM",
                "r": 2,
                "lora_alpha": 4,
                "target_modules": ["q_proj"],
                "lora_dropout": 0.0,
                "bias": "none",
                "fan_in_fan_out": False,
                "base_model_name_or_path": str(MODEL_DIR),
            }
        )
    )
    return folder


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Ctx]]:
    adapter = make_adapter(tmp_path_factory.mktemp("fuzz") / "fuzz-lora")
    srv = start_server()
    ctx = Ctx(srv.ready["port"], srv.proc.pid, LIMITS, srv.ready["context_tokens"], 4, "fuzz-lora", str(adapter))
    assert (
        check(
            post(
                ctx,
                0,
                json.dumps({"lora_name": ctx.adapter, "lora_path": ctx.adapter_path}).encode(),
                path="/v1/load_lora_adapter",
            )
        )
        == "200"
    )
    assert check(post(ctx, 0, dumps(base(model=ctx.adapter)))) == "200"
    yield srv, ctx
    code, events = srv.stop()
    stderr = "".join(srv.stderr)
    assert code == 0 and events[-1]["event"] == "done", stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-6000:]


def stats(ctx: Ctx) -> dict[str, Any]:
    return json.loads(exchange(ctx.port, request("GET", "/stats")).body)


def serving(ctx: Ctx) -> None:
    """The server still answers a normal small request."""
    answer = exchange(ctx.port, request("POST", "/v1/chat/completions", dumps(base(max_tokens=2, stop=[]))))
    assert answer.status == 200 and answer.json()["usage"]["completion_tokens"] >= 1, answer.body[:500]


# -- what the fuzz found, and the limits, each on its own ---------------------------------------------------------


def test_json_nested_too_deep_is_a_400_not_a_recursion_error(fuzz):
    _, ctx = fuzz
    for depth, param in ((100_000, None), (150, "messages")):
        text = dumps(base()).replace(b'"messages": ', b'"messages": ' + b"[" * depth + b"]" * depth + b', "x": ')
        answer = post(ctx, 1, text)
        assert answer.status == 400 and "more than 100 levels deep" in answer.json()["error"]["message"], answer.body
        assert check(answer) == (f"400:{param}" if param else "400")
    serving(ctx)


def test_a_lone_surrogate_is_a_400_naming_its_field(fuzz):
    """`"\\ud800"` is valid JSON but not text: echoed in an error it broke the UTF-8 encoding of the reply, and the
    connection closed without one (a traceback on stderr)."""
    _, ctx = fuzz
    for name, value in (
        ("model", '"\\ud800"'),
        ("tool_choice", '{"type": "function", "function": {"name": "\\udfff"}}'),
        ("messages", '[{"role": "user", "content": "a\\ud83d"}]'),
    ):
        text = dumps({**base(tools=[]), name: "\x00slot"}).replace(b'"\\u0000slot"', value.encode())
        answer = post(ctx, 2, text)
        assert check(answer) == f"400:{name}" and "lone UTF-16 surrogate" in answer.json()["error"]["message"]
    answer = post(
        ctx, 2, json.dumps({"lora_name": "x"}).encode().replace(b'"x"', b'"\\ud800"'), path="/v1/unload_lora_adapter"
    )
    assert check(answer) == "400:lora_name"
    serving(ctx)


@pytest.mark.parametrize(
    "data, status",
    [
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n{}", 400),  # '²'.isdigit(): int() raised
        (b"GET http://[x HTTP/1.1\r\n\r\n", 404),  # urlsplit raised on the unclosed bracket
        (b"POST http://[x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 404),
        (b"GARBAGE\r\n\r\n", 400),  # http.server's own refusals were HTML, without a status line for one word
        (b"PUT /health HTTP/1.1\r\n\r\n", 405),
        (b"GET /health HTTP/2.0\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n", 431),
        (b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 40 + b"\r\n", 431),
        (b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\n\r\n", 431),  # the request line: was an AttributeError
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 262145\r\n\r\n", 413),
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 262145\r\nExpect: 100-continue\r\n\r\n", 413),
    ],
)
def test_malformed_http_gets_an_openai_shaped_client_error_and_a_close(fuzz, data, status):
    _, ctx = fuzz
    answer = exchange(ctx.port, data, source(3))
    assert answer.status == status and answer.closed or status == 404, (answer.status, answer.body[:300])
    check(answer)
    assert answer.json()["error"]["type"] == "invalid_request_error"


def test_a_get_with_a_body_leaves_the_next_request_on_the_connection_intact(fuzz):
    """The body of a GET was left unread and taken for the next request line (a 400 for the request after it)."""
    _, ctx = fuzz
    with connect(ctx.port, source(6)) as sock:
        sock.sendall(request("GET", "/health", b'{"x": 1}') + request("GET", "/v1/models"))
        first, second = read_answer(sock), read_answer(sock)
    assert (first.status, second.status) == (200, 200) and second.json()["object"] == "list", second.body[:300]
    chunked = (
        b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"
    )
    answer = exchange(ctx.port, chunked, source(6))
    assert answer.status == 411 and answer.closed and check(answer) == "411"


def test_a_request_that_never_arrives_whole_is_cut_off(fuzz):
    """A body trickled a byte at a time gets a 408 once --request-timeout-s is over; a request line that never ends,
    a close. Before, both held their thread for as long as the client liked."""
    _, ctx = fuzz
    data = request("POST", "/v1/chat/completions", dumps(base()))
    for sent, status in ((len(data) - 40, 408), (10, None)):
        started = time.monotonic()
        with connect(ctx.port, source(4), timeout=30) as sock:
            sock.sendall(data[:sent])
            try:
                for byte in data[sent : sent + 6]:
                    time.sleep(0.4)
                    sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = read_answer(sock)
        assert answer.status == status and answer.closed and time.monotonic() - started < 3.5
        if status:
            assert check(answer) == "408" and answer.json()["error"]["code"] == "request_timeout"
    serving(ctx)


def test_a_stream_nobody_reads_frees_its_row(fuzz):
    """A streamed client that stops reading is cut off after --write-timeout-s once the (bounded) send buffer is
    full, and its row leaves the batch as on a disconnect; before, it generated to max_tokens."""
    _, ctx = fuzz
    max_tokens = ctx.context - 60
    body = dumps(base(stream=True, max_tokens=max_tokens, ignore_eos=True, stop=[], logprobs=True, top_logprobs=20))
    steps = stats(ctx)["batches"]  # one decode step per token of the only running row
    with connect(ctx.port, source(5), rcvbuf=4096) as sock:
        sock.sendall(request("POST", "/v1/chat/completions", body))
        assert wait_for(lambda: stats(ctx)["running"] == 1, 30)
        assert wait_for(lambda: stats(ctx)["running"] == 0, 120)
        tokens = stats(ctx)["batches"] - steps
    assert tokens < max_tokens / 2, f"the row ran on for {tokens} of its {max_tokens} tokens while nobody read it"
    serving(ctx)


def test_connections_past_the_limits_get_a_503_without_a_thread(fuzz):
    _, ctx = fuzz
    threads = vm(ctx.pid, "Threads")
    per_client, most = LIMITS["max_connections_per_client"], LIMITS["max_connections"]
    held = []
    try:
        for upto, src, why in (
            (per_client, source(10), "--max-connections-per-client"),
            (most, source(30), "--max-connections"),
        ):
            held += [connect(ctx.port, source(10 + i // per_client), timeout=10) for i in range(len(held), upto)]
            answer = exchange(ctx.port, request("GET", "/health"), src)
            assert answer.status == 503 and answer.closed and answer.headers["retry-after"] == "1", answer.body
            assert check(answer) == "503" and why in answer.json()["error"]["message"]
        assert vm(ctx.pid, "Threads") <= threads + LIMITS["max_connections"] + 2
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: exchange(ctx.port, request("GET", "/health"), source(30)).status == 200, 5)
    serving(ctx)


def test_sigterm_with_requests_in_flight():
    """SIGTERM while streams, plain requests, a half-sent request and an idle connection are open: each gets a clean
    answer (a stream ends with a 503 event and [DONE], a plain request a 503) or a close; the server exits 0."""
    for _ in range(1 + CASES // 2000):
        srv = start_server()
        port, answers = srv.ready["port"], {}
        long = dumps(base(max_tokens=800, ignore_eos=True, stop=[]))
        streamed = dumps(base(max_tokens=800, ignore_eos=True, stop=[], stream=True))

        def send(name: str, data: bytes, src: str) -> None:
            with connect(port, src, timeout=60) as sock:
                sock.sendall(data)
                answers[name] = read_answer(sock)
                if name == "idle":  # answered; then left open until the server goes
                    answers[name] = read_answer(sock)

        clients = {
            "stream0": request("POST", "/v1/chat/completions", streamed),
            "plain0": request("POST", "/v1/chat/completions", long),
            "stream1": request("POST", "/v1/chat/completions", streamed),
            "plain1": request("POST", "/v1/chat/completions", long),
            "idle": request("GET", "/health"),
            "half": request("POST", "/v1/chat/completions", long)[:-20],
        }
        threads = [
            threading.Thread(target=send, args=(name, data, source(60 + i)))
            for i, (name, data) in enumerate(clients.items())
        ]
        for thread in threads:
            thread.start()
        assert wait_for(lambda: json.loads(exchange(port, request("GET", "/stats")).body)["running"] == 4, 30)
        srv.proc.send_signal(signal.SIGTERM)
        try:
            late = exchange(port, request("GET", "/health"), source(70), timeout=10)
        except (ConnectionRefusedError, ConnectionResetError):
            late = None
        code, events = srv.stop()
        for thread in threads:
            thread.join(30)
        stderr = "".join(srv.stderr)
        assert code == 0 and events[-1]["event"] == "done" and "Traceback" not in stderr, stderr[-3000:]
        # before it stopped, while it drains (health's own 503, not an API error), or after
        if late is not None and late.status == 503:
            assert late.json()["status"] == "stopping", late.body
        else:
            assert late is None or check(late, may_close=True) in ("200", "closed")
        for name, answer in answers.items():
            label = check(answer, may_close=True)
            if name.startswith("stream") and not answer.closed:
                events = answer.events()
                assert events[-1] == "[DONE]" and json.loads(events[-2])["error"]["type"] == "service_unavailable"
            elif name.startswith("plain"):
                assert label in ("503", "closed"), label
        assert len(answers) == len(clients), sorted(answers)


TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())


@pytest.mark.skipif(sys.platform != "linux" or TGKILL is None, reason="tgkill: Linux on x86_64 or aarch64")
def test_sigterm_taken_by_another_thread_still_stops_the_server():
    """A process-wide signal may be delivered to any thread; Python runs its handler on the main thread only, the
    next time that thread runs. It waited on an event for an hour at a time, so a SIGTERM that another thread took
    (one shutdown in ten under the fuzz) left the server running."""
    srv = start_server()
    try:
        others = [int(t) for t in os.listdir(f"/proc/{srv.proc.pid}/task") if int(t) != srv.proc.pid]
        assert ctypes.CDLL(None, use_errno=True).syscall(TGKILL, srv.proc.pid, others[-1], signal.SIGTERM) == 0
        assert srv.proc.wait(10) == 0
    finally:
        code, events = srv.stop()
    assert code == 0 and events[-1]["event"] == "done" and events[-1]["signal"] == "SIGTERM"


def test_limit_flags_are_checked():
    for flags, message in (
        ({"max_headers": 101}, "--max-headers"),
        ({"max_connections": 0}, "at least 1"),
        ({"request_timeout_s": 0.0}, "--request-timeout-s"),
        ({"write_timeout_s": float("nan")}, "--write-timeout-s"),
        ({"max_body_bytes": -1}, "at least 1"),
    ):
        with pytest.raises(ScriptError, match=message) as caught:
            _check(ServeArgs(model="m", **flags))
        assert caught.value.fields["kind"] == "usage"
    _check(ServeArgs(model="m"))


def test_decode_body_refuses_what_is_not_json_text():
    assert decode_body(b'{"a": ' + b"[" * 99 + b"]" * 99 + b', "unknown": 1}') == {
        "a": json.loads("[" * 99 + "]" * 99),
        "unknown": 1,
    }
    for raw, param, message in (
        (b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}", "a", "more than 100 levels deep"),
        (b"[" * 5000 + b"]" * 5000, None, "more than 100 levels deep"),
        (b'{"a": "\\ud800"}', "a", "lone UTF-16 surrogate"),
        (b'{"\\udfff": 1}', "\udfff", "lone UTF-16 surrogate"),
        (b'{"a": "\xff"}', None, "not valid UTF-8"),
        (b"{", None, "not valid JSON"),
    ):
        with pytest.raises(ApiError, match=message) as caught:
            decode_body(raw)
        assert caught.value.status == 400 and caught.value.param == param


def test_a_wrong_include_usage_names_stream_options():
    with pytest.raises(ApiError) as caught:
        parse_chat_request(
            {
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
                "stream_options": {"include_usage": "yes"},
            },
            NAME,
        )
    assert caught.value.param == "stream_options"


# -- the fuzz ---------------------------------------------------------------------------------------------------


def case(index: int) -> tuple[str, random.Random]:
    """Case `index` of run SEED: its category and the generator of its content (the same on every replay)."""
    rng = random.Random(f"{SEED}:{index}")
    runner = rng.choices(list(RUNNERS), weights=list(RUNNERS.values()))[0]
    return runner.__name__, rng


def run_case(ctx: Ctx, index: int) -> tuple[str, str, float]:
    name, rng = case(index)
    runner = getattr(fuzz_runs, name, None) or getattr(fuzz_transport, name)
    started = time.monotonic()
    try:
        return name, runner(ctx, rng, index), time.monotonic() - started
    except Exception as exc:
        raise AssertionError(
            f"case {index} ({name}; replay: FUZZ_SEED={SEED} FUZZ_CASE={index}): {type(exc).__name__}: {exc}"
        ) from exc


def test_fuzz(fuzz, tmp_path: Path):
    srv, ctx = fuzz
    only = os.environ.get("FUZZ_CASE")
    indices = [int(only)] if only else list(range(CASES))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: Counter[str] = Counter()
    started, rss, threads = time.monotonic(), [], vm(ctx.pid, "Threads")
    with ThreadPoolExecutor(WORKERS) as pool:
        for at in range(0, len(indices), BATCH):
            for name, label, took in pool.map(lambda i: run_case(ctx, i), indices[at : at + BATCH]):
                counts[name][label] += 1
                seconds[name] += took
            serving(ctx)
            rss.append(vm(ctx.pid, "VmRSS"))
    assert wait_for(lambda: stats(ctx)["running"] == stats(ctx)["queued"] == 0, 30), stats(ctx)
    assert wait_for(lambda: vm(ctx.pid, "Threads") <= threads + 2, 10), (vm(ctx.pid, "Threads"), threads)
    assert check(post(ctx, 0, json.dumps({"lora_name": None}).encode(), path="/v1/set_default_adapter")) == "200"
    serving(ctx)
    grown = (rss[-1] - rss[min(2, len(rss) - 1)]) / 1024  # MB, after the first batches warmed the caches
    report = {
        "seed": SEED,
        "cases": len(indices),
        "seconds": round(time.monotonic() - started, 1),
        "rss_mb": [round(rss[0] / 1024), round(max(rss) / 1024), round(rss[-1] / 1024)],
        "categories": {
            name: {"total": sum(c.values()), "seconds": round(seconds[name], 1), **dict(c.most_common())}
            for name, c in sorted(counts.items())
        },
    }
    (tmp_path / "fuzz-counts.json").write_text(json.dumps(report, indent=1))
    print(f"\nserve fuzz: {json.dumps(report, indent=1)}\n(in {tmp_path / 'fuzz-counts.json'})", file=sys.stderr)
    assert grown < 200, f"the server's memory grew {grown:.0f} MB over the run"
    assert "Traceback" not in "".join(srv.stderr), "".join(srv.stderr)[-6000:]
