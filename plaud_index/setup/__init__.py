"""Setting up and looking after an installation: the set-up commands (``commands``), sign-in
status and ``doctor``, client configs and how this installation was launched, the login
agents, and ``status`` with its health flags."""
