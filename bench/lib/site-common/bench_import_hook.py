"""Runs a patch on a module right after its first import, without importing it early: the mechanism the
benchmarks' start-up files (bench/lib/*-site/sitecustomize.py) share."""

import importlib.abc
import importlib.machinery
import sys


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name, patch):
        self._name = name
        self._patch = patch

    def find_spec(self, name, path, target=None):
        if name != self._name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        patch = self._patch

        def patched_exec(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = patched_exec
        return spec


def patch_after_import(name, patch):
    """Calls patch(module) once the module `name` has been executed by its first import."""
    sys.meta_path.insert(0, _PatchAfterImport(name, patch))
