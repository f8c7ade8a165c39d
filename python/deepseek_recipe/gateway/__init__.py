"""The gateway: DeepSeek models served behind OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, with prompts built and output parsed by this library, in front of any
engine that takes token ids.

- :func:`create_app`: a standalone ASGI app, as ``deepseek-recipe serve`` runs it;
- :class:`Gateway`: the same as pure ASGI middleware around an app of your own;
- :class:`GatewaySettings`: every setting, from flags and ``DEEPSEEK_RECIPE_*`` variables.
"""

from deepseek_recipe.gateway.app import Gateway, app_from_env, backend_from_settings, create_app, frontend_from_settings
from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.metrics import Metrics
from deepseek_recipe.gateway.settings import GatewaySettings

__all__ = [
    "Gateway",
    "GatewayError",
    "GatewaySettings",
    "Metrics",
    "app_from_env",
    "backend_from_settings",
    "create_app",
    "frontend_from_settings",
]
