"""Models: naming one, calling it through failures, falling back, caching, pricing; and the models that run here."""


# ---- ``reinloop.models`` was a module and is now this package: its names still resolve here, with a warning,
# for one release (issue 40). Written by tools/restructure.py; delete this block in the release after.
_OLD_NAMES = ['Any', 'BaseChatModel', 'BaseMessage', 'Callable', 'ConfigurationError', 'DEFAULT_MAX_OUTPUT_TOKENS', 'FINISH_KEYS', 'KEY_VARIABLES', 'ModelCallError', 'ModelSetupError', 'OUTPUT_CAP_FIELDS', 'OutputProtocol', 'Runnable', 'TRUNCATED_FINISHES', 'ToolRegistry', 'annotations', 'call_with_retries', 'check_call_cost', 'check_endpoint', 'check_model_name', 'endpoint_host', 'endpoint_of', 'finish_reason', 'invoke_model', 'is_truncated', 'model_call_error', 'model_label', 'model_url', 'origin', 'os', 'output_cap', 'prepare_model', 'redact_url', 'reply_cap', 'resolve_model', 'scrub', 'watched']


def __getattr__(name: str) -> object:
    import importlib
    import warnings

    if name not in _OLD_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"reinloop.models.{name} moved to reinloop.models.resolve.{name}; import it from there (the old path goes in the "
                  "next release)", DeprecationWarning, stacklevel=2)
    value = globals()[name] = getattr(importlib.import_module("reinloop.models.resolve"), name)  # warned once
    return value
