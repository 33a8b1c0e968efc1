"""The event stream and the dataclass/config argument parser."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from conftest import run_module
from massgen_rl_common import protocol
from massgen_rl_common.config_args import UsageError, parse_args


@dataclass
class DemoArgs:
    out: str = field(metadata={"help": "required path"})
    max_new_tokens: int = field(default=8, metadata={"help": "an int"})
    rate: float = field(default=0.5, metadata={"help": "a float"})
    label: str | None = field(default=None, metadata={"help": "optional text"})
    force: bool = field(default=False, metadata={"help": "a switch"})


def test_cli_flags_accept_dashes_and_underscores():
    args = parse_args(DemoArgs, ["--out", "o", "--max-new-tokens", "3", "--rate=2", "--force"])
    assert args == DemoArgs(out="o", max_new_tokens=3, rate=2.0, force=True)
    assert parse_args(DemoArgs, ["--out", "o", "--max_new_tokens", "4"]).max_new_tokens == 4


def test_yaml_config_merges_under_cli_flags(tmp_path):
    config = tmp_path / "args.yaml"
    config.write_text("out: from-config\nmax-new-tokens: 5\nlabel: x\nforce: true\n")
    args = parse_args(DemoArgs, ["--config", str(config), "--max-new-tokens", "7", "--no-force"])
    assert args == DemoArgs(out="from-config", max_new_tokens=7, label="x", force=False)


def test_json_config(tmp_path):
    config = tmp_path / "args.json"
    config.write_text(json.dumps({"out": "j", "rate": 1, "label": None}))
    assert parse_args(DemoArgs, ["--config", str(config)]) == DemoArgs(out="j", rate=1.0)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("out: o\nmax_new_token: 3\n", "'max_new_token'"),
        ("out: o\nmax_new_tokens: lots\n", "max_new_tokens"),
        ("out: o\nforce: yes please\n", "force"),
        ("- just\n- a list\n", "mapping"),
        ("out: [unclosed\n", "cannot parse"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path, text, needle):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(UsageError, match=needle):
        parse_args(DemoArgs, ["--config", str(config)])


def test_missing_required_and_unknown_flag():
    with pytest.raises(UsageError, match="--out"):
        parse_args(DemoArgs, [])
    with pytest.raises(UsageError, match="--bogus"):
        parse_args(DemoArgs, ["--out", "o", "--bogus"])


def test_bad_arguments_exit_2_with_message_and_event(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("out: o\nlearning_rate: 1\n")
    called = []
    assert protocol.run_script(called.append, DemoArgs, ["--config", str(config)], prog="demo") == 2
    assert called == []
    captured = capsys.readouterr()
    assert captured.err.startswith("demo: error: ")
    assert "learning_rate" in captured.err and "Traceback" not in captured.err
    event = json.loads(captured.out)
    assert event["event"] == "error" and "learning_rate" in event["message"] and event["kind"] == "usage"


def test_emit_writes_one_flushed_json_line(capsys):
    protocol.progress("stage-x", "hello", n=1)
    protocol.done(value="ü")
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"event": "progress", "stage": "stage-x", "message": "hello", "n": 1},
        {"event": "done", "value": "ü"},
    ]


def test_script_rejects_unknown_config_key_without_traceback(tmp_path):
    config = tmp_path / "provision.yaml"
    config.write_text(f"out: {tmp_path / 'model'}\nquantize: q8\n")
    run = run_module("massgen_rl_serving.models.provision", "--config", str(config))
    assert run.returncode == 2
    assert "unknown key(s)" in run.stderr and "'quantize'" in run.stderr
    assert "Traceback" not in run.stderr
    assert run.events == [{"event": "error", "message": run.events[0]["message"], "kind": "usage"}]
    assert not (tmp_path / "model").exists()


def test_run_script_keeps_stdout_for_events_only(capfd):
    import os

    def noisy_main(args: DemoArgs) -> dict:
        print("a library printing to stdout")
        os.write(1, b"a native library writing to fd 1\n")
        protocol.progress("work", "halfway")
        return {"out": args.out}

    assert protocol.run_script(noisy_main, DemoArgs, ["--out", "o"], prog="demo") == 0
    captured = capfd.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"event": "progress", "stage": "work", "message": "halfway"},
        {"event": "done", "out": "o"},
    ]
    assert "a library printing to stdout" in captured.err and "fd 1" in captured.err


def test_run_script_maps_failures_to_exit_1(capfd):
    def expected_failure(args: DemoArgs) -> dict:
        raise protocol.ScriptError("no such model", path=args.out)

    def crash(args: DemoArgs) -> dict:
        raise KeyError("boom")

    assert protocol.run_script(expected_failure, DemoArgs, ["--out", "o"]) == 1
    captured = capfd.readouterr()
    assert json.loads(captured.out) == {"event": "error", "message": "no such model", "path": "o"}
    assert "Traceback" not in captured.err

    assert protocol.run_script(crash, DemoArgs, ["--out", "o"]) == 1
    captured = capfd.readouterr()
    assert json.loads(captured.out) == {"event": "error", "message": "KeyError: 'boom'", "exception": "KeyError"}
    assert "Traceback" in captured.err


def test_run_script_on_another_rank_emits_only_errors_tagged_with_it(capfd):
    def failing(args: DemoArgs) -> dict:
        protocol.progress("work", "halfway")
        raise protocol.ScriptError("disk full", path=args.out)

    assert protocol.run_script(failing, DemoArgs, ["--out", "o"], rank=1) == 1
    captured = capfd.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"event": "error", "rank": 1, "message": "disk full", "path": "o"},
    ]
    protocol.progress("after", "the rank is the run's only")
    assert json.loads(capfd.readouterr().out)["stage"] == "after"


def test_run_script_hooks_wrap_main_and_see_its_failures_first(capfd):
    class Guard:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def __enter__(self) -> None:
            self.calls.append("enter")

        def __exit__(self, *exc_info: object) -> None:
            self.calls.append("exit")

    class Halted(Exception):
        pass

    def on_exception(exc: BaseException) -> int | None:
        if isinstance(exc, Halted):
            protocol.progress("halted", "stopped early")
            return 130
        return None

    def halt(args: DemoArgs) -> dict:
        raise Halted()

    def crash(args: DemoArgs) -> dict:
        raise KeyError("boom")

    guard = Guard()
    assert protocol.run_script(halt, DemoArgs, ["--out", "o"], during=guard, on_exception=on_exception) == 130
    assert guard.calls == ["enter", "exit"]
    assert [json.loads(line) for line in capfd.readouterr().out.splitlines()] == [
        {"event": "progress", "stage": "halted", "message": "stopped early"},
    ]
    assert protocol.run_script(crash, DemoArgs, ["--out", "o"], on_exception=on_exception) == 1
    assert json.loads(capfd.readouterr().out)["exception"] == "KeyError"
