"""`python -m massgen_rl_serving`: see the package docstring for the flags, events and HTTP API."""

import os
import sys

from massgen_rl_common.protocol import run_script

from .server import ServeArgs, main

if __name__ == "__main__":
    code = run_script(main, ServeArgs, prog="massgen_rl_serving")
    sys.stdout.flush()
    sys.stderr.flush()
    # The done event is out and every thread has stopped: skip the interpreter's teardown of torch and
    # transformers, which takes seconds on CPU and would only delay whoever waits for us to exit.
    os._exit(code)
