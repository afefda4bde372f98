"""Who is who: the names a person gives speakers on this machine (``names``) and the
naming itself (``naming``).

Everyone who appears across the recordings is worked out from the index by
``search.people``; this place keeps only what the person said, beside the index.
"""

from .names import NameStore
from .naming import Naming

__all__ = ["NameStore", "Naming"]
