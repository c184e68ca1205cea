"""Secrets out of every text: the values to scrub, and the scrubber.

Credentials (the MCP catalog's variables, the model providers' API keys) reach only their own
server or model; their values are replaced by ``[redacted]`` in every text, artifact, history
record and log line a run produces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

#: Secret values shorter than this are not scrubbed: they would mangle ordinary text.
SECRET_MIN_LENGTH: Final = 6
REDACTED: Final = "[redacted]"

#: Provider (the part of the model string before ``:``) -> the API key variable(s) it reads;
#: one of them must be set. Providers not listed (local or cloud-credential ones) are not checked.
MODEL_API_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistralai": ("MISTRAL_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "perplexity": ("PPLX_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "nvidia": ("NVIDIA_API_KEY",),
}


def model_key_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the model providers' API keys set in ``environ``: secrets to scrub."""
    return [environ[n] for names in MODEL_API_KEYS.values() for n in names if n in environ]


class Scrubber:
    """Replaces known secret values in text (and in strings nested in lists and dicts)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if len(s) >= SECRET_MIN_LENGTH}
        self._secrets = sorted(unique, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value
