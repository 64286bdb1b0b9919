"""Models: naming one, calling it through failures, falling back, caching, pricing; and the models that run here."""


# ---- ``reinloop.models`` was a module and is now this package: its names still resolve here, with a warning,
# for one release. Delete this block in the release after.
from .. import moved_names  # noqa: E402

_OLD_NAMES = ['Any', 'BaseChatModel', 'BaseMessage', 'Callable', 'ConfigurationError', 'DEFAULT_MAX_OUTPUT_TOKENS', 'FINISH_KEYS', 'KEY_VARIABLES', 'ModelCallError', 'ModelSetupError', 'OUTPUT_CAP_FIELDS', 'OutputProtocol', 'Runnable', 'TRUNCATED_FINISHES', 'ToolRegistry', 'annotations', 'call_with_retries', 'check_call_cost', 'check_endpoint', 'check_model_name', 'endpoint_host', 'endpoint_of', 'finish_reason', 'invoke_model', 'is_truncated', 'model_call_error', 'model_label', 'model_url', 'origin', 'os', 'output_cap', 'prepare_model', 'redact_url', 'reply_cap', 'resolve_model', 'scrub', 'watched']


__getattr__ = moved_names(__name__, "reinloop.models.resolve", _OLD_NAMES)
