"""From a spec and where it deploys to the exact CreateTrainingJob request.

``context``: the spec with its deployment inputs and the facts derived from them once (what
every rule sees); ``hyperparameters`` and ``image_uri``: parts of the request; ``builder``: the
request itself, total over well-typed specs, so the rules can inspect an invalid spec's request.
"""

__all__: list[str] = []
