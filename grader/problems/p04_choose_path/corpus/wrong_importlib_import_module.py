"""expect: fail
slip: importlib.import_module("mlacourse.flops") inside the functions.
reason: uses_reference
"""
import importlib


def attention_flops(n_new, n_ctx, **shapes):
    return importlib.import_module("mlacourse.flops").attention_flops(n_new, n_ctx, **shapes)


def choose_path(n_new, n_ctx, **shapes):
    return importlib.import_module("mlacourse." + "flops").choose_path(n_new, n_ctx, **shapes)
