"""Every error boopiter_ext raises, in one shallow tree.

    BoopError
    ├── ModelError                  the model server refused or failed the request
    │   ├── Unreachable             nothing answers at the endpoint (also ConnectionError)
    │   ├── ModelNotFound           the server does not have that model (also LookupError)
    │   └── OllamaError             Ollama said so (its message, status and host are kept)
    │       ├── OllamaUnreachable   (also Unreachable)
    │       └── OllamaModelNotFound (also ModelNotFound)
    ├── ReplyBroken                 the connection dropped mid-reply (also ConnectionError)
    ├── ReplyStalled                no token arrived for `timeout` seconds (also TimeoutError)
    ├── ReplyInterrupted            the user interrupted the kernel (also KeyboardInterrupt's role)
    ├── ReplyTooLong                the reply grew past `max_reply` characters and was stopped (also OverflowError)
    ├── NoModel                     nothing configured and nothing reachable (also LookupError)
    ├── SettingsError               a setting has a value that cannot work (also ValueError)
    ├── DeadDropError               a dead-drop session or prompt id is bad, unknown or cancelled (also ValueError)
    ├── CassetteDrift               replaying, a conversation the cassette has no reply for: re-record (also LookupError)
    ├── SchemaError                 `schema=` is not a schema, or cannot be one (also ValueError)
    ├── AnswerInvalid               the model's answer does not follow the schema, after the retries (also ValueError)
    ├── TemplateError               a prompt template names a field an item does not have (also ValueError)
    ├── BenchError                  a bench task file or result file that cannot be used (also ValueError)
    └── LocalModelError             the embedded model is missing or failed to start

Each message says what happened and what to do next. In a notebook the error shows as one
paragraph, never a traceback wall (IPython honours `_render_traceback_`).
"""

__all__ = ['BoopError', 'ModelError', 'Unreachable', 'ModelNotFound', 'OllamaError', 'OllamaUnreachable',
           'OllamaModelNotFound', 'ReplyBroken', 'ReplyStalled', 'ReplyInterrupted', 'ReplyTooLong', 'NoModel', 'SettingsError',
           'DeadDropError', 'CassetteDrift', 'SchemaError', 'AnswerInvalid', 'TemplateError', 'BenchError',
           'LocalModelError', 'install_hint']

from .redact import mask


def install_hint(
    extra:str,  # The optional extra that is missing: 'local', 'cloud', 'pdf'
)->str:         # How to add it, from what the user has: the checkout, or a wheel of it
    "How to install one of boopiter_ext's extras: from the checkout or the wheel it was installed from."
    return (f"pip install -e '.[{extra}]' in your boopiter_ext checkout (or pip install 'WHEEL[{extra}]' with the "
            f"boopiter_ext wheel you have)")


class BoopError(Exception):
    "Base class for every error boopiter_ext raises; its message never shows a key the kernel sends (`redact.mask`)."
    def __init__(self, msg='', **context):
        super().__init__(msg)
        for k,v in context.items(): setattr(self, k, mask(v))   # `body`: a server's words, which may repeat the key

    def __str__(self): return mask(super().__str__())

    def _render_traceback_(self): return [f'{type(self).__name__}: {self}']

class ModelError(BoopError): "The model server refused or failed the request."
class Unreachable(ModelError, ConnectionError): "Nothing answers at the model endpoint."
class ModelNotFound(ModelError, LookupError): "The server does not have the requested model."
class OllamaError(ModelError): "The Ollama server answered with an error."
class OllamaUnreachable(OllamaError, Unreachable): "Nothing answers at the configured Ollama host."
class OllamaModelNotFound(OllamaError, ModelNotFound): "The model is not pulled on that Ollama server."
class ReplyBroken(BoopError, ConnectionError): "The connection dropped in the middle of a reply."
class ReplyStalled(BoopError, TimeoutError): "No token arrived for `timeout` seconds."
class ReplyInterrupted(BoopError): "The user interrupted the kernel while a reply streamed."
class ReplyTooLong(BoopError, OverflowError): "The reply grew past `max_reply` characters, so it was stopped."
class NoModel(BoopError, LookupError): "No model is configured and none is reachable."
class SettingsError(BoopError, ValueError): "A setting has a value that cannot work."
class DeadDropError(BoopError, ValueError): "A dead-drop session or prompt id is bad, unknown or cancelled."
class CassetteDrift(BoopError, LookupError): "Replaying: the cassette has no reply to this conversation; re-record it."
class SchemaError(BoopError, ValueError): "`schema=` is not a JSON Schema, a dataclass, a TypedDict or a pydantic model."
class AnswerInvalid(BoopError, ValueError): "The model's answer does not follow the schema, after every retry."
class TemplateError(BoopError, ValueError): "A prompt template names a field an item does not have."
class BenchError(BoopError, ValueError): "A bench task file or result file that cannot be used; the message says why."
class LocalModelError(BoopError): "The embedded local model is not installed or failed to start."
